#include "weir/detail/runtime/record_writer.h"

namespace weir::detail {

const char* partitionerName(PartitionerKind kind) {
  switch (kind) {
    case PartitionerKind::kForward: return "FORWARD";
    case PartitionerKind::kRebalance: return "REBALANCE";
    case PartitionerKind::kShuffle: return "SHUFFLE";
    case PartitionerKind::kBroadcast: return "BROADCAST";
    case PartitionerKind::kKeyGroup: return "HASH";
    case PartitionerKind::kRescale: return "RESCALE";
    case PartitionerKind::kGlobal: return "GLOBAL";
    case PartitionerKind::kCustom: return "CUSTOM";
  }
  return "UNKNOWN";
}

}  // namespace weir::detail
