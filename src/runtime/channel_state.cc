#include "runtime/channel_state.h"

#include <algorithm>

#include "weir/error.h"
#include "weir/serializer.h"

namespace weir::runtime {

using detail::PartitionerKind;

bool sharedOutOnRescale(PartitionerKind kind) {
  // Records a consumer got from round robin, at random or by key group may go to any
  // (keyed: the owning) consumer; the others were sent to that consumer in particular.
  return kind == PartitionerKind::kRebalance || kind == PartitionerKind::kShuffle ||
         kind == PartitionerKind::kKeyGroup || kind == PartitionerKind::kRescale;
}

std::string encodeInFlight(const InputOrigin& origin, std::string_view records) {
  DataOutput element;
  element.writeString(origin.key);
  element.writeVarint(static_cast<uint64_t>(origin.partitioner));
  element.writeRaw(records.data(), records.size());
  return element.release();
}

InFlight parseInFlight(const std::vector<InputOrigin>& origins, const std::string& name, const std::string& element,
                       bool rescaled) {
  DataInput in(element);
  std::string key = in.readString();
  uint64_t kind = in.readVarint("partitioner");
  InFlight out;
  out.sentBy = static_cast<PartitionerKind>(kind);
  auto it = std::find_if(origins.begin(), origins.end(), [&](const InputOrigin& o) { return o.key == key; });
  if (it == origins.end() || kind > static_cast<uint64_t>(PartitionerKind::kCustom))
    throw Error(ErrorCode::kCheckpoint, "the checkpoint holds records in flight to '" + name + "' from operator '" +
                                            key.substr(0, key.rfind('/')) + "', which no longer feeds it");
  if (rescaled && !sharedOutOnRescale(out.sentBy))
    throw Error(ErrorCode::kCheckpoint,
                std::string("the checkpoint holds records in flight to '") + name + "' on a " +
                    detail::partitionerName(out.sentBy) +
                    " edge, which cannot be shared out at another parallelism (each subtask had its own, in "
                    "order); restore it at the parallelism it was taken at");
  if (rescaled && out.sentBy == PartitionerKind::kKeyGroup && !it->keyGroupOf)
    throw Error(ErrorCode::kCheckpoint, "the checkpoint holds records in flight to '" + name +
                                            "' by key, but its input from '" + key.substr(0, key.rfind('/')) +
                                            "' is no longer keyed");
  out.input = static_cast<size_t>(it - origins.begin());
  out.records = std::string_view(element).substr(in.position());
  return out;
}

}  // namespace weir::runtime
