// Decides when a subtask fed by input channels takes each checkpoint (Flink's
// CheckpointBarrierHandler), and which of its inputs it may read meanwhile.
//
// * Aligned, exactly once: an input that delivered barrier n is not read until barrier n
//   arrived on every input that has not ended; then the subtask snapshots. One
//   checkpoint aligns at a time: a newer barrier means the older one was given up.
// * At least once: inputs are never held; every checkpoint whose barriers are arriving
//   is tracked and taken when they are all in (Flink's barrier tracker).
// * Unaligned (exactly once): the subtask snapshots as soon as it learns of barrier n on
//   any input — a barrier is announced when it is queued, ahead of the records before
//   it — and persists as channel state every record that is still before barrier n on
//   some input: those queued ahead of an announced barrier at once, and on inputs whose
//   barrier is not queued yet every record processed until it arrives. The checkpoint
//   is acknowledged with that channel state once every input delivered barrier n or
//   ended. With an aligned checkpoint timeout, a checkpoint starts aligned and turns
//   unaligned when it is not aligned that long after it was triggered.
// * Except on inputs a barrier may not overtake (forward and broadcast edges, as in
//   Flink: their records in flight could not be shared out at another parallelism).
//   The subtask snapshots only once barrier n arrived in order on each of them; until
//   then it aligns as above (an input whose barrier arrived in order, of either kind, is
//   held), so behind back-pressure on such an edge an unaligned checkpoint waits as an
//   aligned one would. Those inputs never have records in flight.
//
// Runs on the task thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/checkpointable_task.h"
#include "weir/checkpoint_config.h"
#include "weir/clock.h"
#include "weir/detail/runtime/channel_input.h"

namespace weir::runtime {

class BarrierHandler {
 public:
  // `overtakes[i]`: whether an unaligned barrier may overtake the records of input `i`.
  // It calls `task` to take and acknowledge each checkpoint, and reads `clock` (the
  // checkpoint clock, as the coordinator's) for the aligned checkpoint timeout.
  BarrierHandler(std::vector<detail::ChannelInputBase*> inputs, std::vector<bool> overtakes,
                 const CheckpointConfig& config, CheckpointableTask& task, const Clock& clock);

  // Whether input `i` must not be read now (it is aligned on a barrier).
  bool blocked(size_t i) const;
  // Input `i` delivered barrier `id`, in order with its records.
  void onBarrier(size_t i, int64_t id);
  // Input `i` ended.
  void onEnded(size_t i);
  bool ended(size_t i) const { return ended_[i]; }
  bool allEnded() const { return endedCount_ == ended_.size(); }
  // Unaligned: looks at the barriers the inputs announced and at the alignment timeout.
  // Call before reading the inputs, on every round.
  void poll();
  // When poll() must run again even if no input has anything (an alignment timeout), in
  // the clock's milliseconds.
  std::optional<int64_t> deadline() const;

 private:
  struct Arriving {  // a checkpoint whose barriers are arriving, aligned
    std::vector<bool> arrived;
    std::chrono::steady_clock::time_point first;  // for the alignment time it reports
  };
  struct Recording {  // a checkpoint taken unaligned whose channel state is not complete
    std::shared_ptr<TakenSnapshot> snapshot;
    int64_t alignmentNanos = 0;
    std::vector<std::string> channelState;  // per input
    std::vector<bool> done;                 // per input: its barrier arrived, or it ended
    bool unaligned = false;                 // some input had records before its barrier
  };

  // The checkpoint `id` aligning, from now if it was not yet.
  Arriving& aligning(int64_t id);
  bool unalignedNow(int64_t id) const;
  // Unaligned, checkpoint `id` may be taken now: it is past its aligned timeout, and
  // barrier `id` arrived on every input it may not overtake (or the input ended).
  bool mayTakeUnaligned(int64_t id) const;
  // Drops the recordings of checkpoints no longer in progress (aborted, subsumed): they
  // would hold their snapshot and grow until their barriers came, for nothing.
  void dropAbortedRecordings();
  // Marks input `i` done for every recording up to `id`; `capture`: the records queued
  // ahead of the barrier are still in the channel.
  void finishRecordings(size_t i, int64_t id, bool capture);
  void takeIfAligned();
  void takeUnaligned(int64_t id);
  void acknowledgeComplete();

  std::vector<detail::ChannelInputBase*> inputs_;
  const std::vector<bool> overtakes_;
  const bool align_;
  const bool unaligned_;
  const std::chrono::milliseconds alignedTimeout_;
  CheckpointableTask& task_;
  const Clock& clock_;
  std::vector<bool> ended_;
  size_t endedCount_ = 0;
  std::vector<int64_t> announced_;        // per input: the newest barrier it announced
  std::map<int64_t, Arriving> arriving_;  // exactly once: at most one
  int64_t newestAnnounced_ = 0;           // unaligned: the newest checkpoint announced anywhere
  int64_t givenUp_ = 0;                   // unaligned: an aborted alignment; its late barriers are stale
  std::map<int64_t, Recording> recordings_;
};

}  // namespace weir::runtime
