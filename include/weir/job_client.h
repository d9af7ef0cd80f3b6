// A handle on a job started with executeAsync(): watch it, cancel it, wait for it.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "weir/error.h"
#include "weir/savepoint_format_type.h"

namespace weir {

namespace runtime {
class JobExecution;  // the running job (src/runtime), behind every JobClient
}

enum class JobStatus { RUNNING, FINISHED, CANCELLING, CANCELED, FAILING, FAILED, RESTARTING };

const char* toString(JobStatus status);

// A job that failed: the message names the operator, the subtask and the cause.
class JobExecutionError : public Error {
 public:
  JobExecutionError(ErrorCode code, const std::string& message) : Error(code, message) {}
};

// What a finished (or cancelled) job reports.
struct JobExecutionResult {
  std::string jobName;
  JobStatus status = JobStatus::FINISHED;
  std::chrono::milliseconds netRuntime{0};
  int64_t getNetRuntime() const { return netRuntime.count(); }
};

// Counters of a running job, summed over the subtasks of each vertex (operator chain).
struct JobMetrics {
  struct Vertex {
    std::string name;         // the chain, e.g. "Source: clicks -> Map"
    int parallelism = 0;
    bool isSource = false;
    bool isSink = false;
    uint64_t numRecordsIn = 0;   // records received from channels and processed
    uint64_t numRecordsOut = 0;  // records sent to channels or written by a sink
    uint64_t numSourceRecords = 0;  // records produced by the source at the chain's head
    // Bytes its source read and its sink wrote outside the job (records between
    // subtasks are moved values, not bytes, and are not counted).
    uint64_t numBytesIn = 0;
    uint64_t numBytesOut = 0;
    uint64_t numLateRecordsDropped = 0;  // too late for every window they belonged to
    uint64_t numRecordsInErrors = 0;     // bad records its source skipped or sent to dead letters
    int64_t idleTimeNanos = 0;
    int64_t backPressuredTimeNanos = 0;
    int inputCreditsPerChannel = 0;   // buffers each input channel may hold
    int maxBuffersInFlight = 0;       // most buffers ever queued on one input channel
  };
  std::vector<Vertex> vertices;
  std::chrono::milliseconds elapsed{0};

  // Checkpoints so far (Flink's metric names), over all restarts.
  int64_t numberOfCompletedCheckpoints = 0;
  int64_t numberOfFailedCheckpoints = 0;
  int64_t numberOfInProgressCheckpoints = 0;
  int64_t lastCheckpointDuration = -1;  // ms; -1 before the first
  // Bytes the last completed checkpoint wrote (incremental: its new files only), and
  // bytes of every file it holds; -1 before the first.
  int64_t lastCheckpointSize = -1;
  int64_t lastCheckpointFullSize = -1;
  // Of the last completed checkpoint, the slowest subtask's (ms): the synchronous part on
  // the task thread, writing the files, and waiting for barriers on every input.
  int64_t lastCheckpointSyncDuration = -1;
  int64_t lastCheckpointAsyncDuration = -1;
  int64_t lastCheckpointAlignmentTime = -1;
  // Unaligned checkpoints: bytes of records in flight the last completed checkpoint
  // holds (-1 before the first), and all completed checkpoints together.
  int64_t lastCheckpointPersistedData = -1;
  int64_t totalCheckpointPersistedData = 0;
  int64_t latestCompletedCheckpointId = 0;
  std::string latestCompletedCheckpointPath;  // its chk-<n> folder; empty when none
  int numRestarts = 0;
  // A batch job runs in stages, one after another (docs/batch.md, "Stages"): how many,
  // and the one running now (from 1; once the job ended, the last that ran). Otherwise 1.
  int numStages = 1;
  int currentStage = 1;
  // From the last failure to every subtask of the restarted job open again, its state
  // restored (ms; the restart delay included); -1 before the first restart.
  int64_t lastRecoveryDuration = -1;
};

// Copies share the job. Dropping the last handle of a running job cancels it and waits
// for its threads, as std::jthread does: keep a JobClient while the job should run.
class JobClient {
 public:
  explicit JobClient(std::shared_ptr<runtime::JobExecution> execution);
  const std::string& getJobName() const;
  JobStatus getJobStatus() const;
  // Asks every subtask to stop; returns at once. wait() then reports CANCELED. Does
  // nothing once the job has ended, nor once its output is final (every input ended and
  // its sinks were told to commit): it then finishes.
  void cancel();
  // Blocks until the job ends. Throws JobExecutionError when it failed.
  JobExecutionResult wait();
  JobMetrics getMetrics() const;
  // The job's 32-hex-digit id, as the REST API names it.
  const std::string& getJobID() const;
  // http://address:port of the REST API and Web UI serving this job; empty when none.
  std::string getWebInterfaceURL() const;
  // Ends the job gracefully: sources stop and every operator drains; it then FINISHES.
  void stop();

  // Savepoints (docs/savepoints.md). Each returns at once; the future gives the
  // savepoint's folder once it completed, or throws weir::Error when it failed. A request
  // that cannot start throws weir::Error (kInvalidArgument) at once and leaves the job
  // as it was: no folder given and no default one (CheckpointConfig::
  // setDefaultSavepointDirectory), a job without checkpointing, one that is not
  // running, or a savepoint already in progress.
  //
  // A savepoint of the running job, in <dir>/savepoint-<job id's first 6 digits>-<random>;
  // the job goes on. As in Flink, its sinks do not commit at it: what a two-phase-commit
  // sink prepared for it is committed by the next checkpoint.
  std::future<std::string> triggerSavepoint(const std::string& savepointDirectory = "",
                                            SavepointFormatType formatType = SavepointFormatType::CANONICAL);
  // Stop-with-savepoint: sources stop, the savepoint is taken, sinks commit what it
  // covers, and the job FINISHES. With `advanceToEndOfEventTime` (Flink's --drain) the
  // sources first end their input: event time advances to its end and every timer and
  // window fires before the savepoint; without it, timers and windows stay in the
  // savepoint and fire after a resume. When the savepoint fails the job goes on (without
  // drain) or restarts from its latest checkpoint (with drain, whose sources ended).
  std::future<std::string> stopWithSavepoint(bool advanceToEndOfEventTime, const std::string& savepointDirectory = "",
                                             SavepointFormatType formatType = SavepointFormatType::CANONICAL);

 private:
  std::shared_ptr<runtime::JobExecution> execution_;
};

}  // namespace weir
