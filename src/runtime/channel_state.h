// Channel state: the records in flight that an unaligned checkpoint persisted, as the
// head operator's kChannelState elements. Each element is the key of the edge the
// records came by (its producer's operator id and input side, "id/0"), the partitioner
// of that edge, then the records as ChannelInput persisted them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "weir/detail/runtime/record_writer.h"

namespace weir::runtime {

// The edge an input of a stream task belongs to.
struct InputOrigin {
  std::string key;  // its producer's operator id and input side, "id/0"
  detail::PartitionerKind partitioner = detail::PartitionerKind::kForward;
  std::function<int(const void*, int)> keyGroupOf;  // kKeyGroup
};

// One element of channel state, parsed.
struct InFlight {
  size_t input = 0;  // the task's input of the edge it came by
  detail::PartitionerKind sentBy = detail::PartitionerKind::kForward;  // that edge's partitioner when sent
  std::string_view records;
};

// Whether records in flight on an edge sent by `kind` could be shared out at another
// parallelism: rebalance, shuffle, rescale and key-group records, not forward, broadcast,
// global and custom ones (each old subtask had its own, and on a forward edge the
// records that follow rely on their order). Only on such edges do
// unaligned barriers overtake records, so the others never hold records in flight.
bool sharedOutOnRescale(detail::PartitionerKind kind);

// The element for the records in flight `records` of an input from `origin`.
std::string encodeInFlight(const InputOrigin& origin, std::string_view records);

// Finds the input of the edge an element came by, among `origins`; throws weir::Error
// (kCheckpoint), naming `operatorName`, when the job has no such edge, or when at another
// parallelism (`rescaled`) its records cannot be shared out.
InFlight parseInFlight(const std::vector<InputOrigin>& origins, const std::string& operatorName,
                       const std::string& element, bool rescaled);

}  // namespace weir::runtime
