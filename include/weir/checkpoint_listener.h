// Checkpoint notifications (Flink's CheckpointListener): a user function or a sink
// writer that derives from it learns when a checkpoint it took part in completed or was
// aborted. Completion is where exactly-once sinks commit what the checkpoint covers.
#pragma once

#include <cstdint>

namespace weir {

class CheckpointListener {
 public:
  virtual ~CheckpointListener() = default;
  // Checkpoint `checkpointId` is complete: everything before its barrier is safe.
  // Notifications may be skipped (a later one covers the earlier ones). When a bounded
  // job has drained every input, each function is told once more, with an id one past
  // the last checkpoint: nothing that was processed will be replayed.
  virtual void notifyCheckpointComplete(int64_t checkpointId) = 0;
  // Checkpoint `checkpointId` will never complete.
  virtual void notifyCheckpointAborted(int64_t checkpointId) {}
};

}  // namespace weir
