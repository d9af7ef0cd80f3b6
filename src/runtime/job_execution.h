// Runs a StreamGraph embedded in this process: plans chains and channels, starts one
// thread per subtask, and reports how the job ended.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "runtime/mailbox.h"
#include "weir/detail/runtime/stream_graph.h"
#include "weir/job_client.h"

namespace weir::detail {

struct TakenSnapshot;

// One parallel instance of a vertex (an operator chain), run by its own thread.
struct Subtask {
  Subtask() : mailbox(&signal) {}
  int vertex = 0;
  int index = 0;
  TaskSignal signal;
  Mailbox mailbox;
  TaskMetrics metrics;
  ProcessingTimeService processingTime;  // the chain's processing-time timers
  std::vector<std::unique_ptr<RuntimeContext>> contexts;
  std::vector<std::unique_ptr<StreamOperator>> operators;  // in chain order
  std::vector<std::string> operatorIds;                    // per operator: its id in checkpoints
  std::vector<std::unique_ptr<OutputBase>> outputs;        // fan-outs and channel writers
  std::vector<ChannelWriterBase*> writers;                 // where barriers leave
  SourceOperatorBase* source = nullptr;                    // set for source chains
  bool stopRequested = false;                              // source: end input now
  OutputBase* headInput = nullptr;                         // set for chains fed by channels
  std::vector<std::unique_ptr<ChannelInputBase>> inputs;
  struct InputOrigin {   // the edge an input belongs to
    std::string key;      // its producer's operator id and input side, "id/0"
    PartitionerKind partitioner = PartitionerKind::kForward;
    std::function<int(const void*, int)> keyGroupOf;  // kKeyGroup
  };
  std::vector<InputOrigin> inputOrigins;  // per input
  std::unique_ptr<WatermarkValve> valve;                   // combines the inputs' watermarks
  std::vector<ChannelBase*> inputChannels;
  // Records in flight to replay first, with the old subtask that held them.
  std::vector<std::pair<int, std::string>> restoredChannelState;
  bool channelStateRescaled = false;  // taken at another parallelism: replay a share
  std::thread thread;

  // Checkpoints.
  std::atomic<int64_t> lastSnapshotId{0};  // the newest checkpoint it took part in
  std::atomic<bool> inputEnded{false};     // it is past its input: checkpoints are triggered here
  bool drained = false;                    // every subtask's input ended (task thread)
  std::mutex uploadMutex;
  std::condition_variable uploadCv;
  int pendingUploads = 0;  // guarded by uploadMutex: snapshots still being written

  // Whether every output channel has a credit: only then does the subtask read input
  // (or poll its source), so a back-pressured subtask still takes checkpoints at once.
  bool outputAvailable() const {
    for (const auto* w : writers)
      if (!w->available()) return false;
    return true;
  }

  // Partly filled output buffers (see setBufferTimeout).
  std::chrono::milliseconds bufferTimeout{100};
  std::chrono::steady_clock::time_point nextFlush{};
  // Before the subtask waits: sends them where a credit allows.
  void flushOutputs() {
    for (auto* w : writers) w->flush(false);
  }
  // After a batch: sends them when the buffer timeout has passed (0: always). `now` is
  // the steady clock, when the caller has just read it.
  void flushIfDue(std::optional<std::chrono::steady_clock::time_point> now = std::nullopt) {
    if (writers.empty() || bufferTimeout.count() < 0) return;
    if (bufferTimeout.count() == 0) {
      flushOutputs();
      return;
    }
    if (!now) now = std::chrono::steady_clock::now();
    if (*now < nextFlush) return;
    flushOutputs();
    nextFlush = *now + bufferTimeout;
  }
};

// A vertex as the REST API and the Web UI show it.
struct VertexInfo {
  struct Input {
    int vertex = 0;            // index of the upstream vertex
    std::string shipStrategy;  // FORWARD, REBALANCE, HASH, ...
  };
  std::string id;  // 32 hex digits, stable for the same graph
  std::string name;
  std::vector<std::string> uids;  // of the chained operators that have one
  int parallelism = 0;
  bool isSource = false;
  bool isSink = false;
  std::vector<Input> inputs;
};

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
  struct Plan;  // what every attempt is built from (job_execution.cc)

  // Plans the graph and starts every subtask. Throws weir::Error (kInvalidJob,
  // kInvalidArgument, kIo, kCheckpoint) for a graph that cannot run, before any thread
  // starts.
  static std::shared_ptr<JobExecution> start(const StreamGraph& graph, std::string jobName);
  // The two halves of start(): plan (may throw, starts nothing) and launch the threads.
  static std::shared_ptr<JobExecution> plan(const StreamGraph& graph, std::string jobName);
  void launch();

  const std::string& jobName() const { return jobName_; }
  // 32 hex digits, random per execution (Flink's JobID).
  const std::string& jobId() const { return jobId_; }
  JobStatus status() const;
  void cancel();
  // Ends the job gracefully: sources stop reading and end their input, which drains
  // every operator in order; the job then FINISHES. Does nothing once it has ended.
  void stop();
  const std::vector<VertexInfo>& vertices() const { return vertexInfo_; }
  // Set once, by whoever serves the job's REST API, before the job is handed out.
  void setWebInterfaceUrl(std::string url) { webUrl_ = std::move(url); }
  const std::string& webInterfaceUrl() const { return webUrl_; }
  // Per vertex, per subtask.
  std::vector<std::vector<SubtaskSample>> sample() const;
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
  std::optional<CheckpointCoordinator::Stats> checkpointStats() const;
  const CheckpointConfig* checkpointConfig() const;

 private:
  // One run of the job's subtasks; a restart makes a new one from the latest checkpoint.
  struct Attempt {
    std::vector<std::unique_ptr<Subtask>> subtasks;
    std::vector<std::unique_ptr<ChannelBase>> channels;
    std::vector<std::unique_ptr<TrackingSplitEnumerator>> enumerators;
    std::vector<std::thread::id> threadIds;  // guarded by JobExecution::mutex_; set at launch
    std::atomic<bool> cancelled{false};  // every subtask was told to stop at once
    std::atomic<int> running{0};        // subtask threads not yet finished
    std::atomic<int> inputsEnded{0};    // subtasks whose input ended
    std::atomic<int> opened{0};         // subtasks whose operators are open (state restored)
    std::atomic<bool> drained{false};   // all had: operators were told the final checkpoint
    std::exception_ptr failure;         // guarded by JobExecution::mutex_; its first failure
  };

  explicit JobExecution(std::string jobName);
  ~JobExecution();
  static void destroy(JobExecution* job);
  // Builds an attempt's subtasks, restored from the checkpoint in `restoreFrom` if any.
  std::shared_ptr<Attempt> buildAttempt(const std::string& restoreFrom);
  void supervise();
  void runAttempt(const std::shared_ptr<Attempt>& attempt);
  void run(Attempt& attempt, Subtask& task);
  void runSource(Subtask& task);
  void runInputs(Subtask& task);
  void awaitDrained(Attempt& attempt, Subtask& task);
  void awaitUploads(Subtask& task);
  void replayChannelState(Subtask& task);
  // A checkpoint's synchronous part (takeSnapshot) and its hand-over to the coordinator
  // (acknowledgeSnapshot); performCheckpoint does both at once.
  void performCheckpoint(Subtask& task, int64_t id, int64_t timestamp, int64_t alignmentNanos);
  std::shared_ptr<TakenSnapshot> takeSnapshot(Subtask& task, int64_t id, int64_t timestamp);
  void acknowledgeSnapshot(Subtask& task, std::shared_ptr<TakenSnapshot> taken, int64_t alignmentNanos, bool unaligned,
                           std::vector<std::string> channelState);
  // Records the attempt's first failure and stops it (unless drained: then its sinks
  // commit what they have). With `unlessDrained`, a failure after the drain is ignored.
  void fail(Attempt& attempt, std::exception_ptr error, bool unlessDrained = false);
  void stopAttempt(Attempt& attempt);
  bool onJobThread() const;

  std::string jobName_;
  std::string jobId_;
  std::string webUrl_;
  std::unique_ptr<Plan> plan_;
  std::vector<VertexInfo> vertexInfo_;
  std::string checkpointTempRoot_;   // the default checkpoint folder, removed at the end
  std::unique_ptr<CheckpointCoordinator> coordinator_;
  int64_t startMillis_ = 0;
  std::chrono::steady_clock::time_point startTime_;
  std::thread supervisor_;
  std::thread::id supervisorId_;       // guarded by mutex_; set by launch()
  std::mutex joinMutex_;               // one thread joins the supervisor at a time

  mutable std::mutex mutex_;
  std::condition_variable cv_;         // wakes the supervisor
  std::shared_ptr<Attempt> attempt_;   // guarded by mutex_; the current one
  int64_t endMillis_ = -1;             // guarded by mutex_
  std::deque<FailureInfo> failureHistory_;  // guarded by mutex_; newest first
  std::exception_ptr failure_;         // guarded by mutex_; what failed the job in the end
  std::string failureMessage_;         // guarded by mutex_
  ErrorCode failureCode_ = ErrorCode::kInternal;  // guarded by mutex_
  bool userCancelled_ = false;         // guarded by mutex_
  bool restarting_ = false;            // guarded by mutex_
  bool ended_ = false;                 // guarded by mutex_
  int restarts_ = 0;                   // guarded by mutex_
  std::chrono::steady_clock::time_point lastFailure_;  // guarded by mutex_
  int64_t lastRecoveryMillis_ = -1;    // guarded by mutex_: failure to every subtask open again
  JobStatus finalStatus_ = JobStatus::RUNNING;  // guarded by mutex_; set when the job ends
  std::chrono::milliseconds runtime_{0};        // guarded by mutex_
};

}  // namespace weir::detail
