// Runs a StreamGraph embedded in this process (Flink's JobMaster and its scheduler, in
// one): plans it, builds an attempt of stream tasks and starts one thread per task,
// runs the checkpoint coordinator, restarts a failed attempt from the latest completed
// checkpoint as the restart strategy allows, and reports how the job ended.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "runtime/attempt.h"
#include "runtime/job_plan.h"
#include "weir/detail/core/metric_registry.h"
#include "weir/detail/runtime/stream_graph.h"
#include "weir/job_client.h"

namespace weir::runtime {

// Counters of one subtask at one moment.
struct SubtaskSample {
  uint64_t numRecordsIn = 0;
  uint64_t numRecordsOut = 0;
  uint64_t numSourceRecords = 0;
  uint64_t numBytesIn = 0;
  uint64_t numBytesOut = 0;
  int64_t idleTimeNanos = 0;
  int64_t backPressuredTimeNanos = 0;
  int64_t currentInputWatermark = INT64_MIN;   // sources: none (INT64_MIN)
  int64_t currentOutputWatermark = INT64_MIN;  // sources only, for now
  uint64_t numLateRecordsDropped = 0;
  uint64_t numRecordsInErrors = 0;
  std::vector<detail::MetricValue> operatorMetrics;  // what its operators registered (MetricGroup)
  // Records each output of its operators emitted, by (node, side-output tag; -1 the main
  // output): what crosses each edge (VertexInfo::Input::outputs).
  std::map<std::pair<int, int>, uint64_t> emitted;
  bool finished = false;  // its stage finished: these are its last figures
};

// Why a job failed, as the exceptions page shows it.
struct FailureInfo {
  std::string message;        // the whole one-line message
  std::string exceptionName;  // e.g. weir::OperatorFailure
  std::string taskName;       // the operator, when a user function failed
  std::string location;       // "subtask i/n"
  int64_t timestampMillis = 0;
};

class JobExecution {
 public:
  // One stage of the job (JobPlan::stages) as it ran.
  struct StageStatus {
    std::vector<int> vertices;
    // Flink's execution states: CREATED (not run yet), RUNNING, FINISHED, FAILED (its
    // last run failed; it may run again), CANCELED.
    std::string state = "CREATED";
    int runs = 0;
    int64_t startMillis = -1, endMillis = -1;  // of its first run, and when it finished
    uint64_t writtenBytes = 0, spilledBytes = 0;  // to its blocking output, and of that to disk
  };

  // Plans the graph and starts every task. Throws weir::Error (kInvalidJob,
  // kInvalidArgument, kIo, kCheckpoint) for a graph that cannot run, before any thread
  // starts.
  static std::shared_ptr<JobExecution> start(const detail::StreamGraph& graph, std::string jobName);
  // The two halves of start(): plan (may throw, starts nothing) and launch the threads.
  static std::shared_ptr<JobExecution> plan(const detail::StreamGraph& graph, std::string jobName);
  void launch();

  const std::string& jobName() const { return jobName_; }
  // 32 hex digits, random per execution (Flink's JobID).
  const std::string& jobId() const { return jobId_; }
  JobStatus status() const;
  void cancel();
  // Ends the job gracefully: sources stop reading and end their input, which drains
  // every operator in order; the job then FINISHES. Does nothing once it has ended.
  // False (and nothing happens) while a stop-with-savepoint is in progress.
  bool stop();
  // A savepoint (JobClient::triggerSavepoint), or with `stop` stop-with-savepoint
  // (JobClient::stopWithSavepoint; `drain`: the sources end their input first). The
  // future gives its folder. Throws weir::Error (kInvalidArgument) when it cannot start,
  // and then changes nothing.
  std::future<std::string> triggerSavepoint(const std::string& directory, SavepointFormatType format, bool stop,
                                            bool drain);
  const std::vector<VertexInfo>& vertices() const { return plan_->vertexInfo; }
  // Whether it runs in BATCH (as set, or as AUTOMATIC chose).
  bool isBatch() const { return plan_->batch; }
  // Restarts so far (in BATCH, re-runs of a stage).
  int numRestarts() const;
  // Set once, by whoever serves the job's REST API, before the job is handed out.
  void setWebInterfaceUrl(std::string url) { webUrl_ = std::move(url); }
  const std::string& webInterfaceUrl() const { return webUrl_; }
  // Calls `callback` once the job has ended, on the thread that ends it, before wait()
  // returns; at once, on this thread, when it has ended already. One callback per job;
  // it must not throw.
  void onEnd(std::function<void(JobExecution&)> callback);
  // Per vertex, per subtask.
  std::vector<std::vector<SubtaskSample>> sample() const;
  // The job's stages: a batch job's several, run one after another; otherwise one.
  std::vector<StageStatus> stages() const;
  std::optional<FailureInfo> failure() const;
  // Every failure so far (one per failed attempt), newest first, at most kFailureHistory.
  static constexpr size_t kFailureHistory = 16;
  std::vector<FailureInfo> failures() const;
  // Wall-clock start and end (milliseconds since the epoch); end is -1 while running.
  int64_t startTimeMillis() const { return startMillis_; }
  int64_t endTimeMillis() const;
  JobExecutionResult wait();
  JobMetrics metrics() const;
  // Checkpoint counts, latest and history; null without checkpointing.
  // `withSummary`: with Flink's summary of the completed checkpoints (it sorts).
  std::optional<checkpoint::CheckpointCoordinator::Stats> checkpointStats(bool withSummary = false) const;
  const CheckpointConfig* checkpointConfig() const;
  // The restart strategy the job runs under, resolved (Flink's fallback made concrete),
  // as RestartStrategy::name() says it.
  std::string restartStrategyName() const;

 private:
  explicit JobExecution(std::string jobName);
  ~JobExecution();
  static void destroy(JobExecution* job);
  void supervise();
  void runAttempt(const std::shared_ptr<Attempt>& attempt);
  // "stage 2/3 ('Key By -> sum')", as failures name a stage.
  std::string stageName(int stage) const;
  // Its stage starts running; it finished (its figures are kept). Called with mutex_ held.
  void startStageLocked(const Attempt& attempt);
  void endStageLocked(const Attempt& attempt);
  // A task's thread: opens its operators, runs its loop, waits for the drain, closes.
  void run(Attempt& attempt, StreamTask& task);
  void awaitDrained(Attempt& attempt, StreamTask& task);
  // Records the attempt's first failure and stops it (unless drained: then its sinks
  // commit what they have). With `unlessDrained`, a failure after the drain is ignored.
  void fail(Attempt& attempt, std::exception_ptr error, bool unlessDrained = false);
  void stopAttempt(Attempt& attempt);
  // Asks every source of `attempt` to end its input (a graceful stop, or a drain).
  static void endSourcesInput(Attempt& attempt);
  bool onJobThread() const;
  // A savepoint about to be triggered on the coordinator.
  struct SavepointTrigger {
    std::shared_ptr<Attempt> attempt;
    std::string folder;
    checkpoint::SnapshotKind kind;
    bool drain = false;
    std::shared_ptr<std::promise<std::string>> result;
  };
  // Triggers it; what the coordinator says of it settles `result`. Throws as
  // CheckpointCoordinator::triggerSavepoint does.
  void startSavepoint(const SavepointTrigger& trigger);
  // Stop-with-savepoint `id` completed: its attempt's output is final, sinks commit what
  // it covers, and every task ends. False when the attempt failed or was cancelled first.
  bool finishWithSavepoint(Attempt& attempt, int64_t id);
  // The stop-with-savepoint with drain that `attempt` was to take, which it now never
  // will (it failed or is cancelled); resets stopping_. Called with mutex_ held.
  std::optional<SavepointTrigger> abandonDrainSavepointLocked(const Attempt& attempt);
  // A checkpoint completed: in CLAIM mode the snapshot the job restored from goes, once.
  void disposeClaimedSnapshot();

  std::string jobName_;
  std::string jobId_;
  std::string webUrl_;
  std::unique_ptr<JobPlan> plan_;
  std::string restorePath_;          // the first attempt's checkpoint, verified
  int64_t restoreId_ = 0;            // its id, and whether it is a savepoint
  bool restoreIsSavepoint_ = false;
  std::string checkpointTempRoot_;   // the default checkpoint folder, removed at the end
  std::unique_ptr<checkpoint::CheckpointCoordinator> coordinator_;
  std::unique_ptr<BlockingShuffleMemory> shuffleMemory_;  // what blocking partitions hold in memory
  int64_t startMillis_ = 0;
  std::chrono::steady_clock::time_point startTime_;
  std::thread supervisor_;
  std::thread::id supervisorId_;       // guarded by mutex_; set by launch()
  std::mutex joinMutex_;               // one thread joins the supervisor at a time

  mutable std::mutex mutex_;
  std::condition_variable cv_;         // wakes the supervisor
  std::shared_ptr<Attempt> attempt_;   // guarded by mutex_; the current one
  std::vector<StageStatus> stageRuns_;  // guarded by mutex_; per stage
  // Per vertex, its subtasks' last figures once its stage finished; empty before.
  std::vector<std::vector<SubtaskSample>> finishedSamples_;  // guarded by mutex_
  bool stopRequested_ = false;         // guarded by mutex_; stop(): later stages' sources end at once
  int64_t endMillis_ = -1;             // guarded by mutex_
  std::deque<FailureInfo> failureHistory_;  // guarded by mutex_; newest first
  std::exception_ptr failure_;         // guarded by mutex_; what failed the job in the end
  std::string failureMessage_;         // guarded by mutex_
  ErrorCode failureCode_ = ErrorCode::kInternal;  // guarded by mutex_
  bool userCancelled_ = false;         // guarded by mutex_
  bool restarting_ = false;            // guarded by mutex_
  bool ended_ = false;                 // guarded by mutex_
  std::function<void(JobExecution&)> onEnd_;  // guarded by mutex_
  // A stop-with-savepoint is in progress (another savepoint request is refused), and,
  // with drain, the savepoint the last task to end its input triggers.
  bool stopping_ = false;                        // guarded by mutex_
  std::optional<SavepointTrigger> drainSavepoint_;  // guarded by mutex_
  bool claimDisposed_ = false;                      // guarded by mutex_
  int restarts_ = 0;                   // guarded by mutex_
  std::chrono::steady_clock::time_point lastFailure_;  // guarded by mutex_
  int64_t lastRecoveryMillis_ = -1;    // guarded by mutex_: failure to every task open again
  JobStatus finalStatus_ = JobStatus::RUNNING;  // guarded by mutex_; set when the job ends
  std::chrono::milliseconds runtime_{0};        // guarded by mutex_
};

}  // namespace weir::runtime
