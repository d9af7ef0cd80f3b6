#include <mutex>
#include <string>
#include <unordered_map>

#include "weir/detail/record_writer.h"
#include "weir/output_tag.h"

namespace weir::detail {

const char* partitionerName(PartitionerKind kind) {
  switch (kind) {
    case PartitionerKind::kForward: return "FORWARD";
    case PartitionerKind::kRebalance: return "REBALANCE";
    case PartitionerKind::kShuffle: return "SHUFFLE";
    case PartitionerKind::kBroadcast: return "BROADCAST";
    case PartitionerKind::kKeyGroup: return "HASH";
  }
  return "UNKNOWN";
}

int internOutputTag(const std::string& id) {
  static std::mutex mutex;
  static std::unordered_map<std::string, int> ids;
  std::lock_guard lock(mutex);
  auto [it, inserted] = ids.try_emplace(id, static_cast<int>(ids.size()));
  return it->second;
}

}  // namespace weir::detail
