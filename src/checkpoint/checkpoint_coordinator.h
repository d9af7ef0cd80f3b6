// The checkpoint coordinator of one job: triggers checkpoint n at the sources, collects
// every subtask's acknowledgement (its state files, written on the coordinator's I/O
// thread so tasks go on at once), writes _metadata last, keeps the retained
// checkpoints, and tells every subtask how each checkpoint ended. Up to
// maxConcurrentCheckpoints are in progress at once; one that completes subsumes (aborts)
// older ones still in progress.
//
// Its files go through a core::FileSystem (POSIX unless a test gives another). Sync
// points (core/sync_point.h), on the I/O thread, each with a pointer to the checkpoint's
// id (int64_t*):
//   CheckpointCoordinator::BeforeMetadataWritten  every subtask's files are written
//   CheckpointCoordinator::AfterMetadataWritten   _metadata is durable; a callback that
//                                                 throws fails the checkpoint as a failed
//                                                 write would (cold: in every build)
//   CheckpointCoordinator::AfterCompletionRecorded  `--restore latest` finds it (cold)
//   CheckpointCoordinator::BeforeNotifyComplete   the checkpoint is complete; the subtasks
//                                                 are told next (sinks commit)
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/completed_checkpoint_store.h"
#include "checkpoint/stats_summary.h"
#include "weir/checkpoint_config.h"
#include "weir/clock.h"

namespace weir::checkpoint {

class CheckpointCoordinator {
 public:
  // What the coordinator asks of the running attempt.
  struct Hooks {
    std::function<void(int64_t id, int64_t timestampMillis, SnapshotKind kind)> triggerSources;
    std::function<void(int64_t id, bool completed)> notifySubtasks;
    std::function<void(const std::string& reason)> failJob;  // too many failed checkpoints
  };
  // Writes a subtask's files for a checkpoint; returns what it wrote.
  using Upload = std::function<std::vector<StateFileInfo>(const CheckpointTarget& target)>;

  // `jobFolder` is <checkpoint-dir>/<job-id>, made if missing. `clock` decides when
  // checkpoints are due, when they time out and how long they took (tests move it).
  // Checkpoints are written to and removed from `fileSystem`.
  CheckpointCoordinator(CheckpointConfig config, std::string jobFolder, std::string jobId, int maxParallelism,
                        int64_t firstId, std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>(),
                        std::shared_ptr<core::FileSystem> fileSystem = core::FileSystem::local());
  ~CheckpointCoordinator();

  // <checkpoint-dir>/<job-id>.
  const std::string& jobFolder() const { return jobFolder_; }

  // An attempt with `subtasks` subtasks starts; each checkpoint needs all of them.
  void startAttempt(int subtasks, Hooks hooks);
  // The attempt ended (its threads are gone): a checkpoint in progress is aborted.
  void endAttempt();

  // Triggers a checkpoint when one is due and `canTrigger`; aborts one that timed out.
  // Returns when it wants to be called again, in the clock's milliseconds. No checkpoint
  // is triggered while a synchronous savepoint is in progress.
  int64_t tick(bool canTrigger);

  // A savepoint (Flink's CheckpointProperties of a savepoint): written to `folder`, made
  // here, which must not exist yet; self-contained (no file in shared/); never recorded
  // as a completed checkpoint, never retained nor removed once complete; not counted as
  // a failed checkpoint when it fails; never subsumed. The subtasks are not told when it
  // completes (Flink's rule: an intermediate savepoint commits no side effects); `done`
  // is, once, with "" or why it failed (its folder then removed), on the I/O thread or
  // the one that aborted it.
  struct SavepointRequest {
    std::string folder;
    SnapshotKind kind;        // savepoint is set here
    std::string stateBackend;  // written into _metadata ("hashmap", "rocksdb")
    std::function<void(int64_t id, const std::string& error)> done;
  };
  // Triggers it at once and returns its id. Throws weir::Error (kInvalidArgument) when
  // no attempt runs, a savepoint is in progress already, or the folder exists; a folder
  // that cannot be made fails the savepoint at once (`done`, on the caller's thread).
  int64_t triggerSavepoint(SavepointRequest request);
  bool savepointInProgress() const;
  // What checkpoint `id` is, while it is in progress.
  std::optional<SnapshotKind> kindOf(int64_t id) const;

  // How a subtask took its part of a checkpoint.
  struct Ack {
    int64_t syncNanos = 0;       // the synchronous part
    int64_t alignmentNanos = 0;  // waiting for barriers before it
    bool unaligned = false;      // taken before every barrier arrived
    int64_t persistedBytes = 0;  // records in flight it persisted (unaligned)
    int vertex = -1, subtask = -1;  // which subtask (the job's vertex index)
    int64_t startMillis = -1;       // when it began its snapshot (the clock's)
  };
  // A subtask took the synchronous part of checkpoint `id`: `upload` runs on the I/O
  // thread, then `done` (always, also when it failed or the checkpoint was aborted).
  void acknowledge(int64_t id, Ack ack, Upload upload, std::function<void()> done);
  // A subtask cannot take part in checkpoint `id`.
  void decline(int64_t id, const std::string& reason);
  // The checkpoints in progress, oldest first.
  std::vector<int64_t> pendingIds() const;
  // When checkpoint `id` was triggered (the clock's milliseconds), while it is in progress.
  std::optional<int64_t> triggeredAt(int64_t id) const;
  const Clock& clock() const { return *clock_; }
  const std::shared_ptr<core::FileSystem>& fileSystem() const { return fileSystem_; }

  // The newest completed checkpoint: its id and chk-<n> folder, or none.
  struct Completed {
    int64_t id = 0;
    std::string folder;
  };
  std::optional<Completed> latestCompleted() const;
  // An attempt restored checkpoint (or savepoint) `id` from `path`: the REST API's
  // latest.restored and its count of restores.
  void recordRestore(int64_t id, bool savepoint, std::string path);
  int64_t lastTriggeredId() const;
  // What one subtask did for a checkpoint (Flink's subtask checkpoint statistics).
  struct SubtaskStats {
    int vertex = -1, subtask = -1;
    int64_t ackMillis = 0;         // when its files were written
    int64_t startDelayMillis = 0;  // from the trigger to its first barrier (the start of its alignment)
    int64_t syncMillis = 0, asyncMillis = 0, alignmentMillis = 0;
    int64_t stateSize = 0;         // every file it holds
    int64_t checkpointedSize = 0;  // what it wrote
    int64_t persistedBytes = 0;    // records in flight (unaligned)
    bool unaligned = false;
  };
  // One checkpoint as the REST API's history shows it.
  struct Record {
    int64_t id = 0;
    bool completed = false;
    int64_t triggerTimestampMillis = 0;
    int64_t durationMillis = 0;
    int64_t sizeBytes = 0;      // what it wrote (incremental: new files only)
    int64_t fullSizeBytes = 0;  // every file it holds, also those earlier ones wrote
    int64_t alignmentMillis = 0;
    bool unaligned = false;          // some subtask took it unaligned
    int64_t persistedDataBytes = 0;  // records in flight it holds
    bool savepoint = false;
    std::string path;            // completed: its chk-<n> (or savepoint) folder
    std::string failureMessage;  // failed: why
    int64_t failureTimestampMillis = -1;
    int64_t latestAckMillis = -1;  // when its last subtask acknowledged (-1: none did)
    int numSubtasks = 0, numAcknowledged = 0;
    std::vector<SubtaskStats> subtasks;  // those that acknowledged, in that order
  };
  static constexpr size_t kHistorySize = 10;
  struct Stats {
    int64_t completed = 0, failed = 0, inProgress = 0;
    int64_t lastDurationMillis = -1, lastSizeBytes = -1, lastFullSizeBytes = -1;
    // Of the last completed checkpoint, the largest over its subtasks.
    int64_t lastSyncMillis = -1, lastAsyncMillis = -1, lastAlignmentMillis = -1;
    // Records in flight of unaligned checkpoints: the last completed one's, all's.
    int64_t lastPersistedDataBytes = -1, totalPersistedDataBytes = 0;
    int64_t latestId = 0;
    std::string latestPath;
    // The newest completed checkpoint, savepoint and failed one, kept when the history
    // has dropped them.
    std::optional<Record> latestCompleted, latestSavepoint, latestFailed;
    std::deque<Record> history;  // newest first, at most kHistorySize
    int64_t restored = 0;  // restores of a checkpoint or savepoint, the first one's included
    struct Restored {
      int64_t id = 0;
      int64_t timestampMillis = 0;
      bool savepoint = false;
      std::string path;
    };
    std::optional<Restored> latestRestored;
    // Over the completed checkpoints and savepoints, as Flink's REST API sums them up.
    struct Summary {
      StatsSummary::Snapshot checkpointedSize, stateSize, duration, persistedData;
    };
    std::optional<Summary> summary;  // only when asked for: its percentiles sort
  };
  Stats stats(bool withSummary = false) const;
  const CheckpointConfig& config() const { return config_; }
  // The job ended: removes the job's checkpoints when `discard` (with the shared files
  // only they used), and its folder if empty.
  void shutdown(bool discard);

 private:
  struct Pending {
    int64_t id = 0;
    int64_t timestampMillis = 0;
    int64_t start = 0;  // the clock's milliseconds
    std::string folder;
    int acks = 0;
    int64_t latestAckMillis = -1;
    std::vector<SubtaskStats> subtaskStats;
    std::vector<StateFileInfo> files;
    int64_t syncNanos = 0, asyncNanos = 0, alignmentNanos = 0;  // the largest of any subtask
    bool unaligned = false;
    int64_t persistedBytes = 0;  // the sum over subtasks
    SnapshotKind kind;
    std::string stateBackend;  // savepoints
    std::function<void(int64_t id, const std::string& error)> done;  // savepoints
  };
  // How many checkpoints (not savepoints) are in progress.
  size_t pendingCheckpointsLocked() const;
  // Adds a checkpoint or savepoint in progress and triggers it at the sources; returns
  // with the lock released.
  void triggerLocked(std::unique_lock<std::mutex>& lock, Pending p);

  // `failure`: counts toward tolerableCheckpointFailureNumber (a checkpoint given up
  // because the attempt ended, or subsumed by a newer one that completed, does not, as
  // in Flink).
  void abortLocked(std::unique_lock<std::mutex>& lock, int64_t id, const std::string& reason, bool failure = true);
  void recordLocked(Record record);
  // Puts back the record of completed checkpoints as it was before a checkpoint that was
  // recorded but aborted meanwhile (on the I/O thread).
  void unrecord(const std::vector<CompletedCheckpointStore::Entry>& before);
  void completeLocked(std::unique_lock<std::mutex>& lock, int64_t id);
  // How many checkpoints may be in progress at once: maxConcurrentCheckpoints, but one
  // when there is a min pause (which counts from the end of the previous one).
  size_t concurrency() const;
  void runIo();
  // shutdown()'s work, on the I/O thread.
  void discardRetained(bool discard);

  const CheckpointConfig config_;
  const std::string jobFolder_;
  std::unique_ptr<JobFolderLock> folderLock_;  // while the job writes checkpoints there
  const std::string jobId_;
  const int maxParallelism_;
  const std::shared_ptr<const Clock> clock_;
  const std::shared_ptr<core::FileSystem> fileSystem_;

  // Held from allocating a checkpoint's id until its barriers are on their way, so every
  // source gets the barriers of checkpoints and savepoints in id order.
  std::mutex triggerMutex_;
  mutable std::mutex mutex_;
  Hooks hooks_;                        // guarded by mutex_
  bool stopped_ = false;               // guarded by mutex_; a stop-with-savepoint completed
  int subtasks_ = 0;                   // guarded by mutex_
  bool attemptRunning_ = false;        // guarded by mutex_
  int64_t nextId_;                     // guarded by mutex_
  std::map<int64_t, Pending> pending_;  // guarded by mutex_; by id
  int64_t nextTrigger_ = 0;            // guarded by mutex_; the clock's milliseconds
  int consecutiveFailures_ = 0;        // guarded by mutex_
  struct Retained {
    int64_t id;
    int64_t timestampMillis;
    std::string folder;
  };
  std::deque<Retained> retained_;      // guarded by mutex_; oldest first
  CompletedCheckpointStore store_;     // written on the I/O thread only
  SharedFiles shared_;                 // what <job>/shared/ holds, and who uses it
  Stats stats_;                        // guarded by mutex_
  // Over the completed ones, behind Stats::summary; guarded by mutex_.
  StatsSummary checkpointedSize_, stateSize_, duration_, persistedData_;

  std::mutex ioMutex_;
  std::condition_variable ioCv_;
  std::deque<std::function<void()>> ioQueue_;  // guarded by ioMutex_
  bool ioStop_ = false;                        // guarded by ioMutex_
  std::thread io_;
};

}  // namespace weir::checkpoint
