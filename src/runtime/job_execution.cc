#include "runtime/job_execution.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>

#include "core/thread_name.h"
#include "savepoint/savepoint.h"
#include "weir/detail/core/operator_failure.h"
#include "weir/detail/core/type_name.h"
#include "weir/key_group.h"

namespace weir::runtime {

using namespace weir::detail;

namespace {

std::string randomJobId() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  return hex128(rng(), rng());
}

int64_t nowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string describeError(std::exception_ptr error, ErrorCode* code) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  } catch (const std::exception& e) {
    *code = ErrorCode::kInternal;
    return e.what();
  } catch (...) {
    *code = ErrorCode::kInternal;
    return "unknown exception";
  }
}

// Every failure and what follows it, one line on stderr: when, which attempt (and, in a
// job of several stages, which stage and its attempt), the operator and subtask with the
// cause (in the message), and the restart (the job's count) or why none.
void logFailure(const std::string& jobName, const FailureInfo& failure, int attempt, int restart,
                std::optional<std::chrono::milliseconds> delay, const std::string& whyNot, const std::string& strategy,
                const std::string& stage) {
  std::time_t seconds = failure.timestampMillis / 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%H:%M:%S", &utc);
  std::string next = delay ? (stage.empty() ? "restarting" : "re-running " + stage) + " in " +
                                 std::to_string(delay->count()) + " ms (" + strategy + ", restart " +
                                 std::to_string(restart) + ")"
                           : "not restarting: " + whyNot;
  std::fprintf(stderr, "weir: %s.%03d UTC job '%s'%s attempt %d failed: %s; %s\n", when,
               static_cast<int>(failure.timestampMillis % 1000), jobName.c_str(),
               stage.empty() ? "" : (" " + stage).c_str(), attempt, failure.message.c_str(), next.c_str());
}

// What a subtask's counters say now.
SubtaskSample sampleOf(const StreamTask& t) {
  SubtaskSample s;
  s.numRecordsIn = t.metrics.numRecordsIn.load(std::memory_order_acquire);
  s.numRecordsOut = t.metrics.numRecordsOut.load(std::memory_order_relaxed);
  s.numSourceRecords = t.metrics.numSourceRecords.load(std::memory_order_relaxed);
  s.numBytesIn = t.metrics.numBytesIn.load(std::memory_order_relaxed);
  s.numBytesOut = t.metrics.numBytesOut.load(std::memory_order_relaxed);
  s.idleTimeNanos = t.metrics.idleTimeNow();
  s.backPressuredTimeNanos = t.metrics.backPressuredTimeNow();
  s.currentInputWatermark = t.metrics.currentInputWatermark.load(std::memory_order_relaxed);
  s.currentOutputWatermark = t.metrics.currentOutputWatermark.load(std::memory_order_relaxed);
  s.numLateRecordsDropped = t.metrics.numLateRecordsDropped.load(std::memory_order_relaxed);
  s.numRecordsInErrors = t.metrics.numRecordsInErrors.load(std::memory_order_relaxed);
  s.operatorMetrics = t.metrics.registry.values();
  for (const auto& [output, emitted] : t.emittedBy) s.emitted[output] = emitted->records.load(std::memory_order_relaxed);
  return s;
}

void addSample(JobMetrics::Vertex& out, const SubtaskSample& s) {
  out.numRecordsIn += s.numRecordsIn;
  out.numRecordsOut += s.numRecordsOut;
  out.numSourceRecords += s.numSourceRecords;
  out.numBytesIn += s.numBytesIn;
  out.numBytesOut += s.numBytesOut;
  out.numLateRecordsDropped += s.numLateRecordsDropped;
  out.numRecordsInErrors += s.numRecordsInErrors;
  out.idleTimeNanos += s.idleTimeNanos;
  out.backPressuredTimeNanos += s.backPressuredTimeNanos;
}

}  // namespace

std::shared_ptr<JobExecution> JobExecution::start(const StreamGraph& graph, std::string jobName) {
  auto job = plan(graph, std::move(jobName));
  job->launch();
  return job;
}

std::shared_ptr<JobExecution> JobExecution::plan(const StreamGraph& graph, std::string jobName) {
  std::shared_ptr<JobExecution> job(new JobExecution(std::move(jobName)), &JobExecution::destroy);
  int64_t firstId = 1;
  JobPlan::RestoredMaxParallelism restoredMaxParallelism;
  if (graph.restore.restoreSavepoint()) {
    // The first attempt (below) verifies it and checks it against the job's operators.
    job->restorePath_ = checkpoint::checkpointFolder(graph.restore.getRestorePath());
    auto metadata = checkpoint::readMetadata(job->restorePath_, *JobPlan::fileSystemOf(graph));
    firstId = metadata.checkpointId + 1;
    job->restoreId_ = metadata.checkpointId;
    job->restoreIsSavepoint_ = metadata.isSavepoint();
    restoredMaxParallelism.job = metadata.maxParallelism;
    for (const auto& f : metadata.files) restoredMaxParallelism.ofOperator[f.operatorId] = f.maxParallelism;
  }
  job->plan_ = std::make_unique<JobPlan>(JobPlan::create(graph, restoredMaxParallelism));
  const JobPlan& plan = *job->plan_;
  const CheckpointConfig& config = plan.graph.checkpointConfig;  // BATCH may have left a file's interval out
  const RestartStrategy restarts = graph.restartStrategy.resolve(plan.checkpointing);
  for (const auto& node : plan.graph.nodes)
    if (node->checkSettings)
      node->checkSettings(config, restarts, plan.batch ? RuntimeExecutionMode::BATCH : RuntimeExecutionMode::STREAMING);
  job->jobId_ = randomJobId();
  if (plan.checkpointing) {
    std::string root = config.getCheckpointStorage();
    if (root.empty()) {
      std::string pattern = (std::filesystem::temp_directory_path() / "weir-checkpoints-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr)
        throw Error(ErrorCode::kIo, "cannot create a temporary checkpoint folder: " + std::string(std::strerror(errno)));
      root = job->checkpointTempRoot_ = pattern;
    } else {
      std::error_code ec;
      if (!std::filesystem::is_directory(root, ec))
        throw Error(ErrorCode::kInvalidArgument, "checkpoint directory '" + root + "' " +
                                                     (std::filesystem::exists(root, ec) ? "is not a folder"
                                                                                        : "does not exist"));
      if (::access(root.c_str(), W_OK | X_OK) != 0)
        throw Error(ErrorCode::kInvalidArgument, "checkpoint directory '" + root + "' is not writable");
    }
    job->coordinator_ = std::make_unique<checkpoint::CheckpointCoordinator>(
        config, (std::filesystem::path(root) / job->jobId_).string(), job->jobId_, plan.graph.maxParallelism, firstId,
        std::make_shared<SystemClock>(), plan.fileSystem());
  }
  for (const auto& stage : plan.stages) job->stageRuns_.push_back({stage.vertices});
  job->finishedSamples_.resize(plan.vertices.size());
  if (plan.stages.size() > 1) {
    job->shuffleMemory_ = std::make_unique<BlockingShuffleMemory>(static_cast<size_t>(plan.graph.batchShuffleMemoryBytes));
    // Later stages' sources are made when they run; their configuration is checked now.
    for (size_t v = 0; v < plan.vertices.size(); ++v) {
      const auto& head = *plan.graph.nodes[static_cast<size_t>(plan.vertices[v].nodes[0])];
      if (plan.stageOf[v] > 0 && plan.vertices[v].isSource && head.createEnumerator)
        head.createEnumerator(plan.vertices[v].parallelism);
    }
  }
  job->attempt_ = buildAttempt(plan, job->restorePath_, job->coordinator_.get(), 0, {}, job->shuffleMemory_.get());
  if (job->coordinator_ && !job->restorePath_.empty())
    job->coordinator_->recordRestore(job->restoreId_, job->restoreIsSavepoint_, job->restorePath_);
  return job;
}

JobExecution::JobExecution(std::string jobName) : jobName_(std::move(jobName)) {}

JobExecution::~JobExecution() {
  {
    std::lock_guard join(joinMutex_);
    if (supervisor_.joinable()) supervisor_.join();
  }
  attempt_.reset();
  coordinator_.reset();
  if (!checkpointTempRoot_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(checkpointTempRoot_, ec);
  }
}

// The last handle of a job is gone: cancel it and wait for its threads, on a thread of
// its own when the handle was dropped by one of the job's threads (which cannot wait
// for itself).
void JobExecution::destroy(JobExecution* job) {
  job->cancel();
  if (job->onJobThread()) {
    std::thread([job] { delete job; }).detach();
  } else {
    delete job;
  }
}

bool JobExecution::onJobThread() const {
  auto self = std::this_thread::get_id();
  std::lock_guard lock(mutex_);
  if (supervisorId_ == self) return true;
  if (!attempt_) return false;
  return std::find(attempt_->threadIds.begin(), attempt_->threadIds.end(), self) != attempt_->threadIds.end();
}

void JobExecution::launch() {
  startMillis_ = nowMillis();
  startTime_ = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);  // supervise() starts by taking it: the id is set first
  supervisor_ = std::thread([this] {
    core::nameThisThread("weir supervisor");
    supervise();
  });
  supervisorId_ = supervisor_.get_id();
}

void JobExecution::supervise() {
  RestartBackoff backoff(plan_->graph.restartStrategy.resolve(plan_->checkpointing));
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    attempt = attempt_;
  }
  const int stages = static_cast<int>(plan_->stages.size());
  {
    std::lock_guard lock(mutex_);
    startStageLocked(*attempt);
  }
  RetainedPartitions retained;  // what finished stages wrote that later stages read
  JobStatus status = JobStatus::FINISHED;
  while (true) {
    runAttempt(attempt);
    std::unique_lock lock(mutex_);
    if (userCancelled_) {
      status = JobStatus::CANCELED;
      break;
    }
    int stage = attempt->stage;
    std::string from;  // the checkpoint the next attempt restores
    std::optional<checkpoint::CheckpointCoordinator::Completed> latest;
    if (!attempt->failure) {
      endStageLocked(*attempt);
      if (++stage == stages) {
        status = JobStatus::FINISHED;
        break;
      }
      lock.unlock();
      // Its output is now read by the stages after it; what the stage read is not.
      for (auto& [key, partition] : attempt->produced) {
        partition->finish();
        retained[key] = partition;
      }
      std::erase_if(retained, [&](const auto& entry) {
        return plan_->stageOf[static_cast<size_t>(
                   plan_->vertexOf[static_cast<size_t>(plan_->edges[entry.first.first].consumer)])] < stage;
      });
    } else {
      // Once every input had ended, operators were told the job's (or the stage's)
      // output is final (sinks committed it): a restart would replay it, so a failure
      // now ends the job.
      const FailureInfo& failed = failureHistory_.front();
      std::optional<std::chrono::milliseconds> delay;
      std::string whyNot = "it failed after every input had ended (its output is final)";
      if (!attempt->drained.load()) {
        delay = backoff.onFailure(nowMillis(), failed.message);
        whyNot = backoff.whyNot();
      }
      logFailure(jobName_, failed, std::max(1, stageRuns_[static_cast<size_t>(stage)].runs), restarts_ + 1, delay,
                 whyNot, backoff.strategyName(), stages > 1 ? stageName(stage) : "");
      stageRuns_[static_cast<size_t>(stage)].state = "FAILED";
      if (!delay) {
        failure_ = attempt->failure;
        failureMessage_ = describeError(failure_, &failureCode_);
        status = JobStatus::FAILED;
        break;
      }
      restarting_ = true;
      ++restarts_;
      cv_.wait_for(lock, *delay, [&] { return userCancelled_; });
      if (userCancelled_) {
        status = JobStatus::CANCELED;
        break;
      }
      lock.unlock();
      // From the newest completed checkpoint, else from where the job started. A batch
      // job's stage re-runs from what the stages before it wrote.
      latest = coordinator_ ? coordinator_->latestCompleted() : std::nullopt;
      from = latest ? latest->folder : restorePath_;
    }
    std::shared_ptr<Attempt> next;
    std::exception_ptr error;
    try {
      next = buildAttempt(*plan_, from, coordinator_.get(), stage, retained, shuffleMemory_.get());
      next->afterFailure = attempt->failure != nullptr;
      if (coordinator_ && !from.empty())
        coordinator_->recordRestore(latest ? latest->id : restoreId_, !latest && restoreIsSavepoint_, from);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    restarting_ = false;
    if (error) {
      stageRuns_[static_cast<size_t>(stage)].state = "FAILED";
      failure_ = error;
      failureMessage_ = describeError(error, &failureCode_);
      status = JobStatus::FAILED;
      break;
    }
    if (userCancelled_) {
      status = JobStatus::CANCELED;
      break;
    }
    // A stopped batch job's later stages end their sources at once.
    if (stopRequested_ && plan_->batch) endSourcesInput(*next);
    startStageLocked(*next);
    attempt_ = next;
    attempt = next;
  }
  {
    // The blocking partitions go (memory and files): those retained, those the last
    // attempt read (its inputs first) and what it wrote, should it have failed.
    std::lock_guard lock(mutex_);
    retained.clear();
    for (auto& t : attempt->tasks) t->inputs.clear();
    attempt->consumed.clear();
    attempt->produced.clear();
    auto& stage = stageRuns_[static_cast<size_t>(attempt->stage)];
    if (status != JobStatus::FINISHED && stage.state != "FINISHED")
      stage.state = status == JobStatus::CANCELED ? "CANCELED" : "FAILED";
  }
  if (coordinator_) {
    bool discard = status == JobStatus::FINISHED ||
                   (status == JobStatus::CANCELED &&
                    plan_->graph.checkpointConfig.getExternalizedCheckpointCleanup() ==
                        ExternalizedCheckpointCleanup::DELETE_ON_CANCELLATION);
    coordinator_->shutdown(discard);
  }
  std::function<void(JobExecution&)> onEnd;
  {
    std::lock_guard lock(mutex_);
    runtime_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - startTime_);
    finalStatus_ = status;
    endMillis_ = nowMillis();
    ended_ = true;
    onEnd = std::move(onEnd_);
  }
  if (onEnd) onEnd(*this);
}

void JobExecution::onEnd(std::function<void(JobExecution&)> callback) {
  {
    std::lock_guard lock(mutex_);
    if (!ended_) {
      onEnd_ = std::move(callback);
      return;
    }
  }
  callback(*this);
}

void JobExecution::runAttempt(const std::shared_ptr<Attempt>& attempt) {
  attempt->running.store(static_cast<int>(attempt->tasks.size()));
  {
    std::lock_guard lock(mutex_);
    for (auto& task : attempt->tasks) {
      StreamTask* t = task.get();
      t->thread = std::thread([this, a = attempt.get(), t] { run(*a, *t); });
      attempt->threadIds.push_back(t->thread.get_id());
    }
  }
  if (coordinator_) {
    checkpoint::CheckpointCoordinator::Hooks hooks;
    hooks.triggerSources = [attempt](int64_t id, int64_t timestamp, checkpoint::SnapshotKind) {
      // Sources, and subtasks past their input (no barrier reaches them any more).
      for (auto& t : attempt->tasks) {
        if (!t->source && !t->inputEnded.load()) continue;
        StreamTask* task = t.get();
        task->mailbox.put([task, id, timestamp] { task->performCheckpoint(id, timestamp, 0); });
      }
    };
    hooks.notifySubtasks = [this, attempt](int64_t id, bool completed) {
      if (completed) disposeClaimedSnapshot();
      for (auto& t : attempt->tasks) {
        StreamTask* task = t.get();
        task->mailbox.put([task, id, completed] {
          for (auto& op : task->operators) {
            if (completed) op->notifyCheckpointComplete(id);
            else op->notifyCheckpointAborted(id);
          }
        });
      }
    };
    hooks.failJob = [this, attempt](const std::string& reason) {
      // Once drained, nothing is left that a checkpoint could cover: fail() ignores it.
      fail(*attempt, std::make_exception_ptr(Error(ErrorCode::kCheckpoint, reason)), /*unlessDrained=*/true);
    };
    coordinator_->startAttempt(static_cast<int>(attempt->tasks.size()), std::move(hooks));
  }
  while (attempt->running.load() > 0) {
    std::chrono::milliseconds wait = std::chrono::hours(24);
    if (coordinator_) {
      bool canTrigger = !attempt->drained.load();
      wait = coordinator_->clock().sleepUntil(coordinator_->tick(canTrigger));
    }
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, wait, [&] { return attempt->running.load() == 0; });
  }
  for (auto& t : attempt->tasks)
    if (t->thread.joinable()) t->thread.join();
  if (coordinator_) coordinator_->endAttempt();
}

void JobExecution::run(Attempt& attempt, StreamTask& task) {
  const RuntimeContext& context = *task.contexts.front();
  core::nameThisThread(context.getTaskName(), " " + std::to_string(task.index + 1) + "/" +
                                            std::to_string(context.getNumberOfParallelSubtasks()));
  // Operators whose open() was called and whose close() was not, in chain order.
  std::vector<bool> needsClose(task.operators.size(), false);
  try {
    // Tail first, so every operator's downstream is ready before it emits.
    for (size_t i = task.operators.size(); i-- > 0;) {
      needsClose[i] = true;
      task.operators[i]->open();
    }
    const int tasks = static_cast<int>(attempt.tasks.size());
    if (attempt.opened.fetch_add(1) + 1 == tasks) {
      {
        std::lock_guard lock(mutex_);
        if (attempt.afterFailure)
          lastRecoveryMillis_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - lastFailure_).count();
      }
      for (auto& t : attempt.tasks)
        if (t->source) t->signal.notify();
    }
    // A source reads once every task is open (its state restored), as Flink triggers
    // checkpoints once every task runs: it does not run ahead of a checkpoint that could
    // not complete yet, so a restart replays no more than it must. Mail (a checkpoint
    // trigger, a cancel) runs meanwhile; the last task to open, and each mail, wake it.
    while (task.source && attempt.opened.load() < tasks) {
      task.mailbox.runPending();
      task.signal.wait();
    }
    if (task.source) task.runSource();
    else task.runInputs();
    if (coordinator_ || attempt.commitsAtDrain) awaitDrained(attempt, task);
    task.awaitUploads();
    task.metrics.registry.freeze();  // gauges may point into the operators
    for (size_t i = 0; i < task.operators.size(); ++i) {
      needsClose[i] = false;
      task.operators[i]->close();
    }
  } catch (const TaskCancelled&) {
  } catch (...) {
    fail(attempt, std::current_exception());
  }
  // After a failure or cancellation, close what is still open; the first error stands.
  task.awaitUploads();
  task.metrics.registry.freeze(/*lastRead=*/false);  // a failed operator may be half made
  for (size_t i = 0; i < task.operators.size(); ++i) {
    if (!needsClose[i]) continue;
    try {
      task.operators[i]->close();
    } catch (...) {
    }
  }
  // Notify under the lock: the supervisor may otherwise miss the wake-up.
  std::lock_guard lock(mutex_);
  attempt.running.fetch_sub(1);
  cv_.notify_all();
}

// With checkpointing, and in a batch stage with a sink, a subtask whose input ended waits
// until every subtask's has: only then is nothing left to replay, and operators are told
// that a final checkpoint completed (sinks commit the rest). Meanwhile checkpoints go on: it takes
// them when the coordinator asks (its state is final), and at once for those in progress
// whose barriers cannot reach it any more — every input ended before delivering it, so
// every upstream subtask took that checkpoint after its own end as well.
void JobExecution::awaitDrained(Attempt& attempt, StreamTask& task) {
  task.inputEnded.store(true);
  if (coordinator_)
    for (int64_t pending : coordinator_->pendingIds())
      if (pending > task.lastSnapshotId.load()) task.performCheckpoint(pending, nowMillis(), 0);
  bool last = attempt.inputsEnded.fetch_add(1) + 1 == static_cast<int>(attempt.tasks.size());
  std::optional<SavepointTrigger> savepoint;
  if (last) {
    // Decided under the lock fail() takes: an attempt that already failed is never
    // drained (its output is not final, the restart replays it), and one that is drained
    // is never stopped by a later failure. A stop-with-savepoint with drain takes its
    // savepoint now, which drains the attempt when it completes.
    std::lock_guard lock(mutex_);
    last = !attempt.failure && !userCancelled_;
    if (last && drainSavepoint_ && drainSavepoint_->attempt.get() == &attempt) {
      savepoint = std::move(drainSavepoint_);
      drainSavepoint_.reset();
      last = false;
    }
    if (last) attempt.drained.store(true);
  }
  if (savepoint) {
    try {
      startSavepoint(*savepoint);
    } catch (const Error& e) {
      savepoint->result->set_exception(std::current_exception());
      {
        std::lock_guard lock(mutex_);
        stopping_ = false;
      }
      fail(attempt, std::make_exception_ptr(Error(ErrorCode::kCheckpoint, std::string("stop-with-savepoint: ") + e.what())));
    }
  }
  if (last) {
    // Without checkpoints (a batch stage with a sink) only the sinks are told: no
    // checkpoint was taken, so no source commits offsets nor any other listener acts.
    const int64_t finalId = coordinator_ ? coordinator_->lastTriggeredId() + 1 : 1;
    for (auto& t : attempt.tasks) {
      StreamTask* other = t.get();
      std::vector<bool> told(other->operators.size(), true);
      if (!coordinator_) {
        const auto& members = plan_->vertices[static_cast<size_t>(other->vertex)].nodes;
        for (size_t i = 0; i < told.size(); ++i) told[i] = plan_->graph.nodes[static_cast<size_t>(members[i])]->isSink;
      }
      other->mailbox.put([other, finalId, told] {
        other->drained = true;
        for (size_t i = 0; i < other->operators.size(); ++i)
          if (told[i]) other->operators[i]->notifyCheckpointComplete(finalId);
      });
    }
  }
  while (true) {
    task.mailbox.runPending();
    if (task.drained) return;
    task.metrics.idle([&] { task.signal.wait(); });
  }
}

std::optional<JobExecution::SavepointTrigger> JobExecution::abandonDrainSavepointLocked(const Attempt& attempt) {
  if (!drainSavepoint_ || drainSavepoint_->attempt.get() != &attempt) return std::nullopt;
  auto abandoned = std::move(drainSavepoint_);
  drainSavepoint_.reset();
  stopping_ = false;
  return abandoned;
}

void JobExecution::fail(Attempt& attempt, std::exception_ptr error, bool unlessDrained) {
  bool drained = false;
  std::optional<SavepointTrigger> abandoned;
  {
    std::lock_guard lock(mutex_);
    // An attempt's first failure counts; once the user cancelled, failures while
    // stopping do not turn the cancellation into a failure.
    if (attempt.failure || userCancelled_) return;
    drained = attempt.drained.load();
    if (drained && unlessDrained) return;
    attempt.failure = error;
    abandoned = abandonDrainSavepointLocked(attempt);
    lastFailure_ = std::chrono::steady_clock::now();
    FailureInfo info;
    info.message = describeError(error, &failureCode_);
    info.timestampMillis = nowMillis();
    try {
      std::rethrow_exception(error);
    } catch (const OperatorFailure& e) {
      info.exceptionName = e.causeType().empty() ? "weir::OperatorFailure" : e.causeType();
      info.taskName = e.operatorName();
      info.location = "subtask " + std::to_string(e.subtask() + 1) + "/" + std::to_string(e.parallelism());
    } catch (const std::exception& e) {
      info.exceptionName = demangledTypeName(typeid(e));
    } catch (...) {
      info.exceptionName = "unknown";
    }
    failureHistory_.push_front(std::move(info));
    if (failureHistory_.size() > kFailureHistory) failureHistory_.pop_back();
  }
  if (abandoned) {
    abandoned->result->set_exception(std::make_exception_ptr(Error(
        ErrorCode::kCheckpoint, "stop-with-savepoint of job '" + jobName_ + "' failed: the job failed while its "
                                "sources ended their input, before the savepoint; it restarts from its latest checkpoint")));
  }
  // Once drained, the other subtasks only wait to be told the output is final and to
  // close: let them, so every sink commits what it has.
  if (!drained) stopAttempt(attempt);
}

std::future<std::string> JobExecution::triggerSavepoint(const std::string& directory, SavepointFormatType format,
                                                        bool stop, bool drain) {
  auto refuse = [&](const std::string& why) { return Error(ErrorCode::kInvalidArgument, why); };
  if (!coordinator_)
    throw refuse("job '" + jobName_ + "' runs without checkpointing, and savepoints are taken as checkpoints are: " +
                 "enable checkpointing (execution.checkpointing.interval) to take them");
  const std::string dir = directory.empty() ? plan_->graph.checkpointConfig.getDefaultSavepointDirectory() : directory;
  if (dir.empty())
    throw refuse("no savepoint directory: name one, or configure a default (execution.checkpointing.savepoint-dir, "
                 "CheckpointConfig::setDefaultSavepointDirectory)");
  // Checked before any source stops: a request that cannot be taken leaves the job as it was.
  if (coordinator_->savepointInProgress())
    throw refuse("a savepoint of job '" + jobName_ + "' is in progress; wait for it to complete first");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw refuse("savepoint directory '" + dir + "' cannot be made: " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) throw refuse("savepoint directory '" + dir + "' is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw refuse("savepoint directory '" + dir + "' is not writable");
  SavepointTrigger trigger;
  trigger.folder = savepoint::newSavepointFolder(dir, jobId_);
  trigger.kind.native = format == SavepointFormatType::NATIVE;
  trigger.kind.synchronous = stop;
  trigger.drain = stop && drain;
  trigger.result = std::make_shared<std::promise<std::string>>();
  auto future = trigger.result->get_future();
  {
    std::lock_guard lock(mutex_);
    if (ended_ || !attempt_) throw refuse("job '" + jobName_ + "' has ended");
    if (userCancelled_) throw refuse("job '" + jobName_ + "' is being cancelled");
    if (restarting_ || attempt_->failure) throw refuse("job '" + jobName_ + "' is restarting; try again once it runs");
    if (attempt_->drained.load()) throw refuse("job '" + jobName_ + "' is finishing: its input has ended");
    if (stopping_) throw refuse("job '" + jobName_ + "' is being stopped with a savepoint already");
    trigger.attempt = attempt_;
    if (stop) stopping_ = true;
    if (trigger.drain) {
      // The last task to end its input triggers it (awaitDrained).
      drainSavepoint_ = trigger;
      endSourcesInput(*attempt_);
      return future;
    }
  }
  try {
    startSavepoint(trigger);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (stop) stopping_ = false;
    throw;
  }
  return future;
}

void JobExecution::startSavepoint(const SavepointTrigger& trigger) {
  checkpoint::CheckpointCoordinator::SavepointRequest request;
  request.folder = trigger.folder;
  request.kind = trigger.kind;
  request.stateBackend = plan_->graph.stateBackend->getName();
  request.done = [this, trigger](int64_t id, const std::string& error) {
    const std::string& folder = trigger.folder;
    if (error.empty() && trigger.kind.synchronous && !finishWithSavepoint(*trigger.attempt, id)) {
      {
        std::lock_guard lock(mutex_);
        stopping_ = false;
      }
      trigger.result->set_exception(std::make_exception_ptr(
          Error(ErrorCode::kCheckpoint, "savepoint " + std::to_string(id) + " of job '" + jobName_ +
                                            "' completed in '" + folder +
                                            "', but the job failed or was cancelled before it could stop")));
      return;
    }
    if (error.empty()) {
      std::fprintf(stderr, "weir: savepoint %lld of job '%s' completed: %s\n", static_cast<long long>(id),
                   jobName_.c_str(), folder.c_str());
      trigger.result->set_value(folder);
      return;
    }
    std::string message = "savepoint " + std::to_string(id) + " of job '" + jobName_ + "' failed: " + error;
    std::fprintf(stderr, "weir: %s\n", message.c_str());
    trigger.result->set_exception(std::make_exception_ptr(Error(ErrorCode::kCheckpoint, message)));
    if (!trigger.kind.synchronous) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = false;
    }
    if (trigger.drain) {
      // Its sources ended their input: it cannot go on, and restarts from its latest checkpoint.
      fail(*trigger.attempt, std::make_exception_ptr(Error(ErrorCode::kCheckpoint, "stop-with-savepoint: " + message)));
      return;
    }
    // The job goes on: every task that took its part resumes (those of the attempt now
    // running too, should the savepoint have reached a newer one).
    std::shared_ptr<Attempt> current;
    {
      std::lock_guard lock(mutex_);
      current = attempt_;
    }
    for (const auto& attempt : {trigger.attempt, current}) {
      if (!attempt) continue;
      for (auto& t : attempt->tasks) {
        StreamTask* task = t.get();
        task->mailbox.put([task] { task->suspended = false; });
      }
    }
  };
  coordinator_->triggerSavepoint(std::move(request));
}

bool JobExecution::finishWithSavepoint(Attempt& attempt, int64_t id) {
  {
    std::lock_guard lock(mutex_);
    if (attempt.failure || userCancelled_) return false;  // it restarts, or ends cancelled
    attempt.drained.store(true);
  }
  for (auto& t : attempt.tasks) {
    StreamTask* task = t.get();
    task->mailbox.put([task, id] {
      for (auto& op : task->operators) op->notifyCheckpointComplete(id);
      task->drained = true;  // a task past its input leaves awaitDrained
      if (!task->inputEnded.load()) throw TaskCancelled{};  // any other leaves its loop, its input not ended
    });
  }
  return true;
}

void JobExecution::disposeClaimedSnapshot() {
  if (plan_->graph.restore.getRestoreMode() != RestoreMode::CLAIM || restorePath_.empty()) return;
  std::string path;
  {
    std::lock_guard lock(mutex_);
    if (claimDisposed_) return;
    claimDisposed_ = true;
    path = restorePath_;
  }
  try {
    savepoint::disposeSnapshot(path);
    std::fprintf(stderr, "weir: removed '%s', which the job restored from in CLAIM mode: its first checkpoint "
                 "completed\n", path.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: the snapshot restored in CLAIM mode stays: %s\n", e.what());
  }
}

bool JobExecution::stop() {
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;  // its sources must not end before its savepoint
    if (ended_ || !attempt_) return true;
    stopRequested_ = true;
    attempt = attempt_;
  }
  endSourcesInput(*attempt);
  return true;
}

void JobExecution::endSourcesInput(Attempt& attempt) {
  for (auto& t : attempt.tasks) {
    if (!t->source) continue;
    StreamTask* task = t.get();
    task->mailbox.put([task] { task->stopRequested = true; });
  }
}

std::vector<std::vector<SubtaskSample>> JobExecution::sample() const {
  std::shared_ptr<Attempt> attempt;
  std::vector<std::vector<SubtaskSample>> out(plan_->vertices.size());
  {
    std::lock_guard lock(mutex_);
    attempt = attempt_;
    out = finishedSamples_;
  }
  if (!attempt) return out;
  std::vector<bool> finished(out.size());
  for (size_t v = 0; v < out.size(); ++v) finished[v] = !out[v].empty();
  for (const auto& t : attempt->tasks) {
    if (finished[static_cast<size_t>(t->vertex)]) continue;
    SubtaskSample s = sampleOf(*t);
    // Gauges, meters and histograms are read on the subtask's thread, for the next sample: by a mail between
    // records (at most one waits in a mailbox; a task that ended never takes it), or
    // while the task waits for output credit in the middle of a batch (Channel::send).
    if (t->metrics.registry.needsUpdates()) {
      detail::TaskMetrics* metrics = &t->metrics;
      metrics->metricsUpdateWanted.store(true);
      if (!metrics->metricsMailQueued.exchange(true))
        t->mailbox.put([metrics] {
          metrics->metricsMailQueued.store(false);
          metrics->updateMetricsIfWanted();
        });
    }
    out[static_cast<size_t>(t->vertex)].push_back(std::move(s));
  }
  return out;
}

int JobExecution::numRestarts() const {
  std::lock_guard lock(mutex_);
  return restarts_;
}

std::vector<JobExecution::StageStatus> JobExecution::stages() const {
  std::lock_guard lock(mutex_);
  return stageRuns_;
}

std::string JobExecution::stageName(int stage) const {
  std::string names;
  for (int v : plan_->stages[static_cast<size_t>(stage)].vertices)
    names += (names.empty() ? "'" : ", '") + plan_->vertices[static_cast<size_t>(v)].name + "'";
  return "stage " + std::to_string(stage + 1) + "/" + std::to_string(plan_->stages.size()) + " (" + names + ")";
}

void JobExecution::startStageLocked(const Attempt& attempt) {
  StageStatus& stage = stageRuns_[static_cast<size_t>(attempt.stage)];
  stage.state = "RUNNING";
  ++stage.runs;
  if (stage.startMillis < 0) stage.startMillis = nowMillis();
}

void JobExecution::endStageLocked(const Attempt& attempt) {
  StageStatus& stage = stageRuns_[static_cast<size_t>(attempt.stage)];
  stage.state = "FINISHED";
  stage.endMillis = nowMillis();
  for (const auto& [key, partition] : attempt.produced) {
    stage.writtenBytes += partition->bytes();
    stage.spilledBytes += partition->spilledBytes();
  }
  for (const auto& t : attempt.tasks) {
    finishedSamples_[static_cast<size_t>(t->vertex)].push_back(sampleOf(*t));
    finishedSamples_[static_cast<size_t>(t->vertex)].back().finished = true;
  }
}

std::optional<FailureInfo> JobExecution::failure() const {
  std::lock_guard lock(mutex_);
  if (failureHistory_.empty()) return std::nullopt;
  return failureHistory_.front();
}

std::vector<FailureInfo> JobExecution::failures() const {
  std::lock_guard lock(mutex_);
  return {failureHistory_.begin(), failureHistory_.end()};
}

int64_t JobExecution::endTimeMillis() const {
  std::lock_guard lock(mutex_);
  return endMillis_;
}

void JobExecution::cancel() {
  std::shared_ptr<Attempt> attempt;
  std::optional<SavepointTrigger> abandoned;
  {
    std::lock_guard lock(mutex_);
    // Once drained, the job's output is final (sinks were told to commit it): it
    // finishes. Cancelled now, it would keep a checkpoint older than what its sinks
    // committed (a resume would commit that again), or stop a subtask before its commit.
    // A batch job's earlier stage that drained lets its sinks commit, and the job ends
    // before the next stage.
    const bool drained = attempt_ && attempt_->drained.load();
    const bool lastStage = !attempt_ || attempt_->stage + 1 == static_cast<int>(plan_->stages.size());
    if (ended_ || userCancelled_ || (drained && lastStage)) return;
    userCancelled_ = true;
    if (!drained) attempt = attempt_;
    if (attempt) abandoned = abandonDrainSavepointLocked(*attempt);
    cv_.notify_all();
  }
  if (abandoned)
    abandoned->result->set_exception(std::make_exception_ptr(
        Error(ErrorCode::kCancelled, "stop-with-savepoint of job '" + jobName_ + "': the job was cancelled first")));
  if (attempt) stopAttempt(*attempt);
}

void JobExecution::stopAttempt(Attempt& attempt) {
  if (attempt.cancelled.exchange(true)) return;
  for (auto& c : attempt.channels) c->cancel();
  for (auto& t : attempt.tasks) t->mailbox.put([] { throw TaskCancelled{}; });
}

JobStatus JobExecution::status() const {
  std::lock_guard lock(mutex_);
  if (ended_) return finalStatus_;
  if (userCancelled_) return JobStatus::CANCELLING;
  if (restarting_) return JobStatus::RESTARTING;
  if (attempt_ && attempt_->failure) return JobStatus::FAILING;
  return JobStatus::RUNNING;
}

JobExecutionResult JobExecution::wait() {
  {
    std::lock_guard join(joinMutex_);
    if (onJobThread())
      throw Error(ErrorCode::kInvalidJob, "JobClient::wait() called from a subtask of the job it waits for");
    if (supervisor_.joinable()) supervisor_.join();
  }
  std::lock_guard lock(mutex_);
  if (failure_) throw JobExecutionError(failureCode_, "job '" + jobName_ + "' failed: " + failureMessage_);
  JobExecutionResult result;
  result.jobName = jobName_;
  result.status = finalStatus_;
  result.netRuntime = runtime_;
  return result;
}

std::optional<checkpoint::CheckpointCoordinator::Stats> JobExecution::checkpointStats(bool withSummary) const {
  if (!coordinator_) return std::nullopt;
  return coordinator_->stats(withSummary);
}

const CheckpointConfig* JobExecution::checkpointConfig() const {
  return coordinator_ ? &coordinator_->config() : nullptr;
}

std::string JobExecution::restartStrategyName() const {
  return plan_->graph.restartStrategy.resolve(plan_->checkpointing).name();
}

JobMetrics JobExecution::metrics() const {
  JobMetrics m;
  m.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - startTime_);
  for (const auto& v : plan_->vertices) {
    JobMetrics::Vertex out;
    out.name = v.name;
    out.parallelism = v.parallelism;
    out.isSource = v.isSource;
    out.isSink = v.isSink;
    m.vertices.push_back(out);
  }
  std::shared_ptr<Attempt> attempt;
  std::vector<bool> finished(plan_->vertices.size());
  {
    std::lock_guard lock(mutex_);
    attempt = attempt_;
    m.numRestarts = restarts_;
    m.lastRecoveryDuration = lastRecoveryMillis_;
    m.numStages = static_cast<int>(stageRuns_.size());
    m.currentStage = attempt ? attempt->stage + 1 : 1;
    for (size_t v = 0; v < finishedSamples_.size(); ++v) {
      finished[v] = !finishedSamples_[v].empty();
      for (const auto& s : finishedSamples_[v]) addSample(m.vertices[v], s);
    }
  }
  if (attempt) {
    for (const auto& t : attempt->tasks) {
      auto& out = m.vertices[static_cast<size_t>(t->vertex)];
      if (!finished[static_cast<size_t>(t->vertex)]) addSample(out, sampleOf(*t));
      for (auto* c : t->inputChannels) {
        out.inputCreditsPerChannel = c->credits();
        out.maxBuffersInFlight = std::max(out.maxBuffersInFlight, c->maxBuffersInFlight());
      }
    }
  }
  if (coordinator_) {
    auto stats = coordinator_->stats();
    m.numberOfCompletedCheckpoints = stats.completed;
    m.numberOfFailedCheckpoints = stats.failed;
    m.numberOfInProgressCheckpoints = stats.inProgress;
    m.lastCheckpointDuration = stats.lastDurationMillis;
    m.lastCheckpointSize = stats.lastSizeBytes;
    m.lastCheckpointFullSize = stats.lastFullSizeBytes;
    m.lastCheckpointSyncDuration = stats.lastSyncMillis;
    m.lastCheckpointAsyncDuration = stats.lastAsyncMillis;
    m.lastCheckpointAlignmentTime = stats.lastAlignmentMillis;
    m.lastCheckpointPersistedData = stats.lastPersistedDataBytes;
    m.totalCheckpointPersistedData = stats.totalPersistedDataBytes;
    m.latestCompletedCheckpointId = stats.latestId;
    m.latestCompletedCheckpointPath = stats.latestPath;
  }
  return m;
}

}  // namespace weir::runtime
