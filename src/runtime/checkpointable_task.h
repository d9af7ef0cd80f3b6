// What the barrier handler asks of the stream task it runs in (Flink's
// CheckpointableTask): the stream task implements it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weir/detail/state/operator_snapshot.h"

namespace weir::runtime {

// A subtask's synchronous part of one checkpoint, until its files are written.
struct TakenSnapshot {
  int64_t id = 0;
  int64_t syncNanos = 0;
  std::shared_ptr<std::vector<detail::OperatorSnapshot>> operators;
  int64_t startMillis = -1;  // the checkpoint clock's, when the snapshot began
};

class CheckpointableTask {
 public:
  virtual ~CheckpointableTask() = default;
  // Takes the synchronous part of checkpoint `id` (every operator's state as it is now)
  // and sends barrier `id` downstream. Null when the task took it already or declined it.
  virtual std::shared_ptr<TakenSnapshot> takeSnapshot(int64_t id) = 0;
  // Hands the snapshot to the checkpoint coordinator, with the records in flight per
  // input (serialized, "" for none; empty when no input had any).
  virtual void acknowledgeSnapshot(std::shared_ptr<TakenSnapshot> snapshot, int64_t alignmentNanos, bool unaligned,
                                   std::vector<std::string> channelState) = 0;
  // When checkpoint `id` was triggered (the checkpoint clock's milliseconds), while it is
  // in progress; nullopt once it completed or was aborted.
  virtual std::optional<int64_t> checkpointTriggeredAt(int64_t id) const = 0;
  // The newest checkpoint the task took part in.
  virtual int64_t lastCheckpointTaken() const = 0;
  // Whether checkpoint `id`, in progress, is a savepoint (always aligned, as in Flink:
  // it holds no records in flight, so it restores into a changed job).
  virtual bool isSavepoint(int64_t id) const = 0;
};

}  // namespace weir::runtime
