// Checkpointing (Flink's CheckpointConfig): how often the job takes a consistent
// snapshot of all its state and source positions, and what happens around it.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "weir/error.h"

namespace weir {

enum class CheckpointingMode {
  EXACTLY_ONCE,   // inputs align on barriers: every record is in exactly one checkpoint
  AT_LEAST_ONCE,  // inputs never wait: after a restore some records are processed again
};

// What happens to the retained checkpoints when the job is cancelled.
enum class ExternalizedCheckpointCleanup {
  DELETE_ON_CANCELLATION,  // removed when the job is cancelled (kept when it fails)
  RETAIN_ON_CANCELLATION,  // kept, so the job can be resumed with --restore latest
};

class CheckpointConfig {
 public:
  using Millis = std::chrono::milliseconds;

  // Checkpointing is on when the interval is positive (env.enableCheckpointing).
  bool isCheckpointingEnabled() const { return interval_.count() > 0; }
  Millis getCheckpointInterval() const { return interval_; }
  void setCheckpointInterval(Millis interval) {
    positive(interval, "checkpoint interval");
    interval_ = interval;
    streamingOnly_ = false;
  }
  // Enables checkpointing as setCheckpointInterval does, but only for a job that runs in
  // STREAMING: one that runs in BATCH (set so, or AUTOMATIC over bounded sources) leaves
  // it out, where an interval set for the job itself is refused. What a configuration
  // file's execution.checkpointing.interval sets, since the file serves streaming and
  // batch jobs alike (docs/batch.md).
  void setCheckpointIntervalForStreaming(Millis interval) {
    setCheckpointInterval(interval);
    streamingOnly_ = true;
  }
  // Whether the interval was set for STREAMING only (setCheckpointIntervalForStreaming).
  bool isCheckpointIntervalForStreamingOnly() const { return streamingOnly_; }
  void disableCheckpointing() {
    interval_ = Millis(-1);
    streamingOnly_ = false;
  }

  CheckpointingMode getCheckpointingMode() const { return mode_; }
  void setCheckpointingMode(CheckpointingMode mode) { mode_ = mode; }

  // A checkpoint not complete after this long is discarded (default 10 minutes).
  Millis getCheckpointTimeout() const { return timeout_; }
  void setCheckpointTimeout(Millis timeout) {
    positive(timeout, "checkpoint timeout");
    timeout_ = timeout;
  }

  // Least time between the end of one checkpoint and the start of the next (default 0).
  Millis getMinPauseBetweenCheckpoints() const { return minPause_; }
  void setMinPauseBetweenCheckpoints(Millis pause) {
    if (pause.count() < 0) throw Error(ErrorCode::kInvalidArgument, "min pause between checkpoints must be >= 0");
    minPause_ = pause;
  }

  // Checkpoints in progress at once (default 1): a new one is triggered every interval
  // while fewer are. A min pause > 0 implies one at a time, as in Flink.
  int getMaxConcurrentCheckpoints() const { return maxConcurrent_; }
  void setMaxConcurrentCheckpoints(int n) {
    if (n < 1)
      throw Error(ErrorCode::kInvalidArgument,
                  "max concurrent checkpoints must be at least 1, got " + std::to_string(n));
    maxConcurrent_ = n;
  }

  // Failed checkpoints in a row the job tolerates before it fails (default 0).
  int getTolerableCheckpointFailureNumber() const { return tolerableFailures_; }
  void setTolerableCheckpointFailureNumber(int n) {
    if (n < 0) throw Error(ErrorCode::kInvalidArgument, "tolerable checkpoint failure number must be >= 0");
    tolerableFailures_ = n;
  }

  // Completed checkpoints kept on disk; older ones are removed (default 1, as Flink's
  // state.checkpoints.num-retained).
  int getNumRetainedCheckpoints() const { return retained_; }
  void setNumRetainedCheckpoints(int n) {
    if (n < 1) throw Error(ErrorCode::kInvalidArgument, "retained checkpoints must be >= 1");
    retained_ = n;
  }

  ExternalizedCheckpointCleanup getExternalizedCheckpointCleanup() const { return cleanup_; }
  void setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup c) { cleanup_ = c; }

  // Where checkpoints go: <dir>/<job-id>/chk-<n>/. Default: a fresh temporary folder
  // removed when the process ends, so checkpoints serve restarts within the process only.
  const std::string& getCheckpointStorage() const { return storage_; }
  void setCheckpointStorage(std::string directory) {
    if (directory.empty()) throw Error(ErrorCode::kInvalidArgument, "checkpoint directory must not be empty");
    storage_ = std::move(directory);
  }

  // Where savepoints go when a request names no folder (Flink's
  // execution.checkpointing.savepoint-dir); default: none, so a request must name one.
  const std::string& getDefaultSavepointDirectory() const { return savepointDir_; }
  void setDefaultSavepointDirectory(std::string directory) {
    if (directory.empty()) throw Error(ErrorCode::kInvalidArgument, "savepoint directory must not be empty");
    savepointDir_ = std::move(directory);
  }

  // Unaligned checkpoints (default off; EXACTLY_ONCE only): a barrier overtakes the
  // records queued ahead of it, which go into the checkpoint as channel state and are
  // processed again after a restore. Checkpoints then complete in about the same time
  // under back-pressure as without it, at the price of persisting in-flight records.
  bool isUnalignedCheckpointsEnabled() const { return unaligned_; }
  void enableUnalignedCheckpoints(bool enabled = true) { unaligned_ = enabled; }

  // With unaligned checkpoints: a checkpoint starts aligned and turns unaligned at a
  // subtask whose barriers have not all arrived this long after the checkpoint was
  // triggered (default 0: unaligned from the start).
  Millis getAlignedCheckpointTimeout() const { return alignedTimeout_; }
  void setAlignedCheckpointTimeout(Millis timeout) {
    if (timeout.count() < 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "aligned checkpoint timeout must be >= 0, got " + std::to_string(timeout.count()) + " ms");
    alignedTimeout_ = timeout;
  }

 private:
  static void positive(Millis value, const char* what) {
    if (value.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(what) + " must be positive, got " + std::to_string(value.count()) + " ms");
  }

  Millis interval_{-1};
  bool streamingOnly_ = false;
  CheckpointingMode mode_ = CheckpointingMode::EXACTLY_ONCE;
  Millis timeout_{10 * 60 * 1000};
  Millis minPause_{0};
  int maxConcurrent_ = 1;
  int tolerableFailures_ = 0;
  int retained_ = 1;
  ExternalizedCheckpointCleanup cleanup_ = ExternalizedCheckpointCleanup::DELETE_ON_CANCELLATION;
  std::string storage_;
  std::string savepointDir_;
  bool unaligned_ = false;
  Millis alignedTimeout_{0};
};

}  // namespace weir
