// What one operator instance contributes to a checkpoint, and what a restored instance
// starts from. Keyed state is in canonical form (keyed_state_store.h), operator state
// as serialized list elements (operator_state.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weir/detail/keyed_state_store.h"
#include "weir/detail/operator_state.h"

namespace weir::detail {

// Names of the states weir itself keeps beside the user's; they start with '_', which
// user state names may use too without clashing, as these are per operator.
inline constexpr const char* kTimersState = "_timers";
inline constexpr const char* kProcessingTimersState = "_processing_timers";
inline constexpr const char* kRollingState = "_rolling";
inline constexpr const char* kSourceSplitsState = "_source_splits";
inline constexpr const char* kAssignedSplitsState = "_assigned_splits";
// A chain head's records in flight (unaligned checkpoints), one element per input
// channel: the producer's operator id and input side ("id/0") as a string, the edge's
// PartitionerKind as a varint, then the channel's persisted records.
inline constexpr const char* kChannelState = "_channel_state";

// Taken on the task thread (the synchronous part); read later on another thread.
struct OperatorSnapshot {
  std::map<std::string, std::unique_ptr<StateSnapshot>> keyed;  // by state name
  std::vector<OperatorStateSnapshot> operatorState;
};

// Read from a checkpoint: only the key groups this instance owns.
struct RestoredOperatorState {
  std::map<std::string, std::vector<OwnedStateEntry>> keyed;
  std::vector<OperatorStateSnapshot> operatorState;
  // kChannelState elements with the old subtask that held each: this subtask's own, or
  // at another parallelism (`channelStateRescaled`) every old subtask's.
  std::vector<std::pair<int, std::string>> channelState;
  bool channelStateRescaled = false;

  // Takes the keyed entries of `name` out (empty when there are none).
  std::vector<OwnedStateEntry> takeKeyed(const std::string& name) {
    auto it = keyed.find(name);
    if (it == keyed.end()) return {};
    auto entries = std::move(it->second);
    keyed.erase(it);
    return entries;
  }
  // The elements of operator state `name`, or none.
  const std::vector<std::string>* operatorList(const std::string& name) const {
    for (const auto& s : operatorState)
      if (s.name == name) return &s.elements;
    return nullptr;
  }
};

}  // namespace weir::detail
