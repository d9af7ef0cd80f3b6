#include "checkpoint/checkpoint_coordinator.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <future>

#include "core/sync_point.h"
#include "core/thread_name.h"
#include "weir/error.h"

namespace weir::checkpoint {

using namespace weir::detail;

namespace fs = std::filesystem;


CheckpointCoordinator::CheckpointCoordinator(CheckpointConfig config, std::string jobFolder, std::string jobId,
                                             int maxParallelism, int64_t firstId, std::shared_ptr<const Clock> clock,
                                             std::shared_ptr<core::FileSystem> fileSystem)
    : config_(std::move(config)), jobFolder_(normalPath(jobFolder)), jobId_(std::move(jobId)),
      maxParallelism_(maxParallelism), clock_(std::move(clock)), fileSystem_(std::move(fileSystem)),
      nextId_(firstId), store_(jobFolder_, fileSystem_), shared_(fileSystem_) {
  // The job folder and its empty record of completed checkpoints are durable before any
  // checkpoint is: a _metadata the record does not list is then one that never
  // completed (completed_checkpoint_store.h).
  std::error_code ec = fileSystem_->createDirectories(jobFolder_);
  if (!ec) ec = fileSystem_->syncDirectory(fs::path(jobFolder_).parent_path().string());
  if (ec)
    throw Error(ErrorCode::kInvalidArgument,
                "checkpoint directory: cannot create '" + jobFolder_ + "': " + ec.message());
  folderLock_ = std::make_unique<JobFolderLock>(jobFolder_);
  try {
    store_.write({});
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("checkpoint directory: ") + e.what());
  }
  io_ = std::thread([this] {
    core::nameThisThread("weir checkpoint");
    runIo();
  });
}

CheckpointCoordinator::~CheckpointCoordinator() {
  {
    std::lock_guard lock(ioMutex_);
    ioStop_ = true;
  }
  ioCv_.notify_all();
  io_.join();
}

void CheckpointCoordinator::runIo() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(ioMutex_);
      ioCv_.wait(lock, [&] { return ioStop_ || !ioQueue_.empty(); });
      if (ioQueue_.empty()) return;
      job = std::move(ioQueue_.front());
      ioQueue_.pop_front();
    }
    job();
  }
}

void CheckpointCoordinator::startAttempt(int subtasks, Hooks hooks) {
  std::lock_guard lock(mutex_);
  subtasks_ = subtasks;
  hooks_ = std::move(hooks);
  attemptRunning_ = true;
  stopped_ = false;
  nextTrigger_ = clock_->currentTimeMillis() + config_.getCheckpointInterval().count();
}

bool CheckpointCoordinator::savepointInProgress() const {
  std::lock_guard lock(mutex_);
  return std::any_of(pending_.begin(), pending_.end(), [](const auto& p) { return p.second.kind.savepoint; });
}

void CheckpointCoordinator::endAttempt() {
  std::unique_lock lock(mutex_);
  attemptRunning_ = false;
  while (!pending_.empty()) {
    abortLocked(lock, pending_.begin()->first, "the job's tasks stopped", false);
    lock.lock();
  }
  hooks_ = {};
}

size_t CheckpointCoordinator::concurrency() const {
  if (config_.getMinPauseBetweenCheckpoints().count() > 0) return 1;
  return static_cast<size_t>(config_.getMaxConcurrentCheckpoints());
}

int64_t CheckpointCoordinator::tick(bool canTrigger) {
  std::lock_guard triggering(triggerMutex_);
  std::unique_lock lock(mutex_);
  const int64_t now = clock_->currentTimeMillis();
  const int64_t timeout = config_.getCheckpointTimeout().count();
  while (!pending_.empty() && now - pending_.begin()->second.start >= timeout) {
    abortLocked(lock, pending_.begin()->first,
                "it expired before completing (checkpoint timeout " +
                    std::to_string(config_.getCheckpointTimeout().count()) + " ms)");
    lock.lock();
  }
  // The oldest checkpoint in progress times out first.
  auto wake = [&](int64_t t) { return pending_.empty() ? t : std::min(t, pending_.begin()->second.start + timeout); };
  if (!attemptRunning_ || now < nextTrigger_) return wake(nextTrigger_);
  // Due, but as many as may be are in progress: looks again in a millisecond (one may
  // complete), not at once, which would spin until one does.
  if (pendingCheckpointsLocked() >= concurrency()) return wake(now + 1);
  // Not while a stop-with-savepoint is in progress, nor once one completed.
  const bool stopping = stopped_ || std::any_of(pending_.begin(), pending_.end(),
                                                [](const auto& p) { return p.second.kind.synchronous; });
  if (!canTrigger || stopping) {
    nextTrigger_ = now + config_.getCheckpointInterval().count();
    return wake(nextTrigger_);
  }
  Pending p;
  p.id = nextId_++;
  p.timestampMillis = now;
  p.start = now;
  p.folder = (fs::path(jobFolder_) / ("chk-" + std::to_string(p.id))).string();
  nextTrigger_ = now + config_.getCheckpointInterval().count();
  auto next = wake(nextTrigger_);
  triggerLocked(lock, std::move(p));
  return next;
}

size_t CheckpointCoordinator::pendingCheckpointsLocked() const {
  return static_cast<size_t>(
      std::count_if(pending_.begin(), pending_.end(), [](const auto& p) { return !p.second.kind.savepoint; }));
}

void CheckpointCoordinator::triggerLocked(std::unique_lock<std::mutex>& lock, Pending p) {
  std::error_code ec = fileSystem_->createDirectories(p.folder);
  const int64_t id = p.id, ts = p.timestampMillis;
  const SnapshotKind kind = p.kind;
  const std::string folder = p.folder;
  pending_.emplace(id, std::move(p));
  ++stats_.inProgress;
  if (ec) {
    abortLocked(lock, id, "its folder '" + folder + "' cannot be created: " + ec.message());
    return;
  }
  auto trigger = hooks_.triggerSources;
  lock.unlock();
  trigger(id, ts, kind);
}

int64_t CheckpointCoordinator::triggerSavepoint(SavepointRequest request) {
  std::lock_guard triggering(triggerMutex_);
  std::unique_lock lock(mutex_);
  auto refuse = [](const std::string& why) { return Error(ErrorCode::kInvalidArgument, why); };
  if (!attemptRunning_) throw refuse("the job is not running");
  for (const auto& [id, p] : pending_)
    if (p.kind.savepoint)
      throw refuse("savepoint " + std::to_string(id) + " is in progress; wait for it to complete first");
  std::error_code ec;
  if (fs::exists(request.folder, ec))
    throw refuse("savepoint folder '" + request.folder + "' exists already");
  Pending p;
  p.id = nextId_++;
  p.timestampMillis = clock_->currentTimeMillis();
  p.start = p.timestampMillis;
  p.folder = normalPath(request.folder);
  p.kind = request.kind;
  p.kind.savepoint = true;
  p.stateBackend = std::move(request.stateBackend);
  p.done = std::move(request.done);
  const int64_t id = p.id;
  triggerLocked(lock, std::move(p));
  return id;
}

std::optional<SnapshotKind> CheckpointCoordinator::kindOf(int64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  return it->second.kind;
}

void CheckpointCoordinator::acknowledge(int64_t id, Ack ack, Upload upload, std::function<void()> done) {
  std::string folder;
  SnapshotKind kind;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it != pending_.end()) {
      folder = it->second.folder;
      kind = it->second.kind;
    }
  }
  if (folder.empty()) {  // aborted already: nothing to write
    done();
    return;
  }
  {
    std::lock_guard lock(ioMutex_);
    ioQueue_.push_back([this, id, folder, kind, ack, upload = std::move(upload),
                        done = std::move(done)] {
      std::vector<StateFileInfo> files;
      std::string error;
      auto start = std::chrono::steady_clock::now();
      try {
        files = upload(CheckpointTarget{folder, (fs::path(jobFolder_) / "shared").string(), id, &shared_,
                                        fileSystem_.get(), kind});
      } catch (const std::exception& e) {
        error = e.what();
      }
      int64_t asyncNanos = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
      done();  // the snapshots are gone: the task may close its state
      std::unique_lock lock(mutex_);
      auto it = pending_.find(id);
      if (it == pending_.end()) {  // aborted while uploading: what it stored is unused
        lock.unlock();
        shared_.release(id);
        return;
      }
      if (!error.empty()) {
        abortLocked(lock, id, error);
        return;
      }
      Pending& p = it->second;
      // Flink's start delay ends at the subtask's first barrier: its alignment before the
      // snapshot started.
      const int64_t firstBarrierMillis = ack.startMillis - ack.alignmentNanos / 1'000'000;
      SubtaskStats sub{ack.vertex, ack.subtask, clock_->currentTimeMillis(),
                       ack.startMillis < 0 ? 0 : std::max<int64_t>(0, firstBarrierMillis - p.timestampMillis),
                       ack.syncNanos / 1'000'000, asyncNanos / 1'000'000, ack.alignmentNanos / 1'000'000,
                       0, 0, ack.persistedBytes, ack.unaligned};
      for (const auto& f : files) {
        sub.checkpointedSize += static_cast<int64_t>(f.size + f.uploadedBytes);
        sub.stateSize += static_cast<int64_t>(f.size);
        for (const auto& r : f.rocksdb) sub.stateSize += static_cast<int64_t>(r.size);
      }
      p.subtaskStats.push_back(sub);
      for (auto& f : files) p.files.push_back(std::move(f));
      p.syncNanos = std::max(p.syncNanos, ack.syncNanos);
      p.asyncNanos = std::max(p.asyncNanos, asyncNanos);
      p.alignmentNanos = std::max(p.alignmentNanos, ack.alignmentNanos);
      p.unaligned = p.unaligned || ack.unaligned;
      p.persistedBytes += ack.persistedBytes;
      p.latestAckMillis = sub.ackMillis;
      if (++p.acks == subtasks_) completeLocked(lock, id);
    });
  }
  ioCv_.notify_one();
}

void CheckpointCoordinator::decline(int64_t id, const std::string& reason) {
  std::unique_lock lock(mutex_);
  if (pending_.contains(id)) abortLocked(lock, id, reason);
}

std::optional<int64_t> CheckpointCoordinator::triggeredAt(int64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  return it->second.start;
}

std::vector<int64_t> CheckpointCoordinator::pendingIds() const {
  std::lock_guard lock(mutex_);
  std::vector<int64_t> ids;
  for (const auto& [id, p] : pending_) ids.push_back(id);
  return ids;
}

// Called with the lock held; returns with it released.
void CheckpointCoordinator::abortLocked(std::unique_lock<std::mutex>& lock, int64_t id, const std::string& reason,
                                        bool failure) {
  auto it = pending_.find(id);
  Pending p = std::move(it->second);
  pending_.erase(it);
  --stats_.inProgress;
  ++stats_.failed;
  Record failed;
  failed.id = p.id;
  failed.triggerTimestampMillis = p.timestampMillis;
  failed.durationMillis = clock_->currentTimeMillis() - p.start;
  failed.failureMessage = reason;
  failed.failureTimestampMillis = clock_->currentTimeMillis();
  failed.savepoint = p.kind.savepoint;
  failed.latestAckMillis = p.latestAckMillis;
  failed.numSubtasks = subtasks_;
  failed.numAcknowledged = p.acks;
  failed.subtasks = std::move(p.subtaskStats);
  stats_.latestFailed = failed;
  recordLocked(std::move(failed));
  failure = failure && !p.kind.savepoint;  // a failed savepoint does not fail the job
  if (failure) ++consecutiveFailures_;
  bool tooMany = failure && consecutiveFailures_ > config_.getTolerableCheckpointFailureNumber();
  Hooks hooks = hooks_;
  int tolerable = config_.getTolerableCheckpointFailureNumber();
  lock.unlock();
  {
    // After the uploads already queued for it.
    std::lock_guard io(ioMutex_);
    ioQueue_.push_back([this, id = p.id, folder = p.folder] {
      removeCheckpointFolder(*fileSystem_, folder);
      shared_.release(id);
    });
  }
  ioCv_.notify_one();
  if (hooks.notifySubtasks) hooks.notifySubtasks(p.id, false);
  if (p.done) p.done(p.id, reason);
  if (tooMany && hooks.failJob) {
    hooks.failJob("checkpoint " + std::to_string(p.id) + " failed: " + reason + "; " +
                  std::to_string(tolerable) + " failed checkpoint(s) in a row are tolerated " +
                  "(tolerableCheckpointFailureNumber)");
  }
}

// Called with the lock held; returns with it released. The checkpoint stays pending
// while _metadata is written. A savepoint is not recorded, retained nor subsumes others,
// and the subtasks are not told of it; its requester is.
void CheckpointCoordinator::completeLocked(std::unique_lock<std::mutex>& lock, int64_t id) {
  const Pending& pending = pending_.at(id);
  const std::string folder = pending.folder;
  const bool savepoint = pending.kind.savepoint;
  CheckpointMetadata metadata;
  metadata.checkpointId = id;
  metadata.jobId = jobId_;
  metadata.timestampMillis = pending.timestampMillis;
  metadata.maxParallelism = maxParallelism_;
  metadata.files = pending.files;
  if (savepoint) {
    metadata.savepointFormat = pending.kind.native ? "NATIVE" : "CANONICAL";
    metadata.stateBackend = pending.stateBackend;
  }
  // The record of completed checkpoints once this one is: the retained ones and it, the
  // oldest beyond the number retained dropped as below. (Completions and discards run
  // on the I/O thread, one at a time: retained_ does not change meanwhile.)
  std::vector<CompletedCheckpointStore::Entry> before, after;
  for (const auto& r : retained_) before.push_back({r.id, r.timestampMillis});
  after = before;
  after.push_back({id, pending.timestampMillis});
  const size_t keep = static_cast<size_t>(config_.getNumRetainedCheckpoints());
  if (after.size() > keep) after.erase(after.begin(), after.end() - static_cast<std::ptrdiff_t>(keep));
  lock.unlock();
  std::string error;
  bool recorded = false;
  try {
    WEIR_SYNC_POINT_CALLBACK("CheckpointCoordinator::BeforeMetadataWritten", &id);
    writeMetadata(folder, metadata, *fileSystem_);
    WEIR_COLD_SYNC_POINT_CALLBACK("CheckpointCoordinator::AfterMetadataWritten", &id);
    if (!savepoint) {
      // Complete from here: `--restore latest` finds it.
      store_.write(after);
      recorded = true;
      WEIR_COLD_SYNC_POINT_CALLBACK("CheckpointCoordinator::AfterCompletionRecorded", &id);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  lock.lock();
  auto it = pending_.find(id);
  if (it == pending_.end()) {  // aborted meanwhile: its folder is being removed
    lock.unlock();
    if (recorded) unrecord(before);
    return;
  }
  if (!error.empty()) {
    abortLocked(lock, id, error);
    return;
  }
  // Older checkpoints still in progress can no longer be the latest: subsumed (not
  // savepoints). Each abort releases the lock, and meanwhile this one may time out or
  // the attempt end.
  while (!savepoint) {
    auto older = std::find_if(pending_.begin(), pending_.end(),
                              [&](const auto& e) { return e.first < id && !e.second.kind.savepoint; });
    if (older == pending_.end()) break;
    abortLocked(lock, older->first, "subsumed by checkpoint " + std::to_string(id), false);
    lock.lock();
  }
  it = pending_.find(id);
  if (it == pending_.end()) {
    lock.unlock();
    if (recorded) unrecord(before);
    return;
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  --stats_.inProgress;
  ++stats_.completed;
  Record done;
  done.id = p.id;
  done.completed = true;
  done.savepoint = savepoint;
  done.triggerTimestampMillis = p.timestampMillis;
  done.durationMillis = clock_->currentTimeMillis() - p.start;
  for (const auto& sub : p.subtaskStats) {
    done.sizeBytes += sub.checkpointedSize;
    done.fullSizeBytes += sub.stateSize;
  }
  done.alignmentMillis = p.alignmentNanos / 1'000'000;
  done.unaligned = p.unaligned;
  done.persistedDataBytes = p.persistedBytes;
  done.path = p.folder;
  done.latestAckMillis = p.latestAckMillis;
  done.numSubtasks = done.numAcknowledged = subtasks_;
  done.subtasks = std::move(p.subtaskStats);
  checkpointedSize_.add(done.sizeBytes);
  stateSize_.add(done.fullSizeBytes);
  duration_.add(done.durationMillis);
  persistedData_.add(done.persistedDataBytes);
  if (savepoint) {
    if (p.kind.synchronous) stopped_ = true;  // the job ends with it: no checkpoint after it
    stats_.latestSavepoint = done;
    recordLocked(std::move(done));
    lock.unlock();
    if (p.done) p.done(p.id, "");
    return;
  }
  consecutiveFailures_ = 0;
  stats_.lastDurationMillis = done.durationMillis;
  stats_.lastSizeBytes = done.sizeBytes;
  stats_.lastFullSizeBytes = done.fullSizeBytes;
  stats_.lastSyncMillis = p.syncNanos / 1'000'000;
  stats_.lastAsyncMillis = p.asyncNanos / 1'000'000;
  stats_.lastAlignmentMillis = done.alignmentMillis;
  stats_.lastPersistedDataBytes = p.persistedBytes;
  stats_.totalPersistedDataBytes += p.persistedBytes;
  stats_.latestId = p.id;
  stats_.latestPath = p.folder;
  stats_.latestCompleted = done;
  recordLocked(std::move(done));
  retained_.push_back({p.id, p.timestampMillis, p.folder});
  std::vector<Retained> dropped;
  while (static_cast<int>(retained_.size()) > config_.getNumRetainedCheckpoints()) {
    dropped.push_back(retained_.front());
    retained_.pop_front();
  }
  const int64_t pauseEnds = clock_->currentTimeMillis() + config_.getMinPauseBetweenCheckpoints().count();
  if (pauseEnds > nextTrigger_) nextTrigger_ = pauseEnds;
  Hooks hooks = hooks_;
  lock.unlock();
  // Tell the subtasks first: their commits should not wait on deleting old folders.
  WEIR_SYNC_POINT_CALLBACK("CheckpointCoordinator::BeforeNotifyComplete", &id);
  if (hooks.notifySubtasks) hooks.notifySubtasks(p.id, true);
  for (const auto& d : dropped) {
    removeCheckpointFolder(*fileSystem_, d.folder);
    shared_.release(d.id);
  }
}

void CheckpointCoordinator::unrecord(const std::vector<CompletedCheckpointStore::Entry>& before) {
  try {
    store_.write(before);
  } catch (const Error& e) {
    // Its folder is about to go: a restore of 'latest' will say it is damaged, not
    // fall back.
    std::fprintf(stderr, "weir: %s\n", e.what());
  }
}

void CheckpointCoordinator::recordLocked(Record record) {
  stats_.history.push_front(std::move(record));
  if (stats_.history.size() > kHistorySize) stats_.history.pop_back();
}

std::optional<CheckpointCoordinator::Completed> CheckpointCoordinator::latestCompleted() const {
  std::lock_guard lock(mutex_);
  if (retained_.empty()) return std::nullopt;
  return Completed{retained_.back().id, retained_.back().folder};
}

void CheckpointCoordinator::recordRestore(int64_t id, bool savepoint, std::string path) {
  std::lock_guard lock(mutex_);
  ++stats_.restored;
  stats_.latestRestored = Stats::Restored{id, clock_->currentTimeMillis(), savepoint, std::move(path)};
}

int64_t CheckpointCoordinator::lastTriggeredId() const {
  std::lock_guard lock(mutex_);
  return nextId_ - 1;
}

CheckpointCoordinator::Stats CheckpointCoordinator::stats(bool withSummary) const {
  std::unique_lock lock(mutex_);
  Stats stats = stats_;
  if (!withSummary) return stats;
  // The windows are copied under the lock and sorted after it.
  std::array<StatsSummary, 4> figures{checkpointedSize_, stateSize_, duration_, persistedData_};
  lock.unlock();
  stats.summary = Stats::Summary{figures[0].snapshot(), figures[1].snapshot(), figures[2].snapshot(),
                                 figures[3].snapshot()};
  return stats;
}

void CheckpointCoordinator::shutdown(bool discard) {
  // On the I/O thread, after the uploads and removals still queued there.
  std::promise<void> finished;
  {
    std::lock_guard lock(ioMutex_);
    ioQueue_.push_back([this, discard, &finished] {
      discardRetained(discard);
      finished.set_value();
    });
  }
  ioCv_.notify_one();
  finished.get_future().wait();
}

void CheckpointCoordinator::discardRetained(bool discard) {
  std::deque<Retained> retained;
  {
    std::lock_guard lock(mutex_);
    if (discard) retained.swap(retained_);
    discard = discard || retained_.empty();  // nothing retained: the record goes too
  }
  if (discard) {
    try {
      // The record lists none before any folder goes (a crash meanwhile leaves no
      // completed checkpoint with files missing), and goes itself after them.
      store_.write({});
      for (const auto& d : retained) {
        removeCheckpointFolder(*fileSystem_, d.folder);
        shared_.release(d.id);
      }
      store_.remove();
    } catch (const Error& e) {
      // The checkpoints stay, recorded (`weir checkpoint clean` or the user removes them).
      std::fprintf(stderr, "weir: the job's checkpoints in '%s' were not removed: %s\n", jobFolder_.c_str(), e.what());
    }
  }
  // Folders left empty go (remove() leaves a folder that is not).
  fileSystem_->remove((fs::path(jobFolder_) / "shared").string());
  fileSystem_->remove(jobFolder_);
  folderLock_.reset();  // the job writes no more checkpoints: the folder may be cleaned
}

}  // namespace weir::checkpoint
