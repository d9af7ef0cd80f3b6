// The stream task's part of a checkpoint (Flink's SubtaskCheckpointCoordinator): the
// synchronous snapshot of every operator of the chain on the task thread, the barrier
// sent on downstream, and the hand-over to the checkpoint coordinator, whose I/O thread
// writes the files while the task goes on.
#include <chrono>

#include "core/sync_point.h"
#include "runtime/stream_task.h"
#include "weir/detail/core/operator_failure.h"
#include "weir/key_group.h"

namespace weir::runtime {

using namespace weir::detail;

namespace {

int64_t nowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void StreamTask::performCheckpoint(int64_t id, int64_t timestamp, int64_t alignmentNanos) {
  if (auto snapshot = takeSnapshot(id, timestamp)) acknowledgeSnapshot(std::move(snapshot), alignmentNanos, false, {});
}

std::shared_ptr<TakenSnapshot> StreamTask::takeSnapshot(int64_t id) { return takeSnapshot(id, nowMillis()); }

std::optional<int64_t> StreamTask::checkpointTriggeredAt(int64_t id) const {
  return coordinator ? coordinator->triggeredAt(id) : std::nullopt;
}

// The barrier handler asks on every round while a checkpoint aligns: the coordinator is
// asked once per checkpoint (what a checkpoint is never changes).
bool StreamTask::isSavepoint(int64_t id) const {
  if (id != kindAskedFor_) {
    auto kind = coordinator ? coordinator->kindOf(id) : std::nullopt;
    kindAskedFor_ = id;
    askedIsSavepoint_ = kind && kind->savepoint;
  }
  return askedIsSavepoint_;
}

// Every operator's state as it is now, then the barrier goes on downstream. Null when
// the task took this checkpoint already, or declined it.
std::shared_ptr<TakenSnapshot> StreamTask::takeSnapshot(int64_t id, int64_t timestamp) {
  if (id <= lastSnapshotId.load()) return nullptr;  // asked twice (mail and end of input)
  auto syncStart = std::chrono::steady_clock::now();
  auto taken = std::make_shared<TakenSnapshot>();
  taken->id = id;
  taken->startMillis = coordinator->clock().currentTimeMillis();
  taken->operators = std::make_shared<std::vector<OperatorSnapshot>>(operators.size());
  const auto kind = coordinator->kindOf(id);
  if (kind && kind->savepoint) {
    for (auto& s : *taken->operators)
      s.savepoint = kind->native ? SavepointFormatType::NATIVE : SavepointFormatType::CANONICAL;
  }
  std::string error;
  try {
    for (size_t i = 0; i < operators.size(); ++i) operators[i]->snapshotState(id, timestamp, (*taken->operators)[i]);
  } catch (const TaskCancelled&) {
    throw;
  } catch (const std::exception& e) {
    error = e.what();
  }
  lastSnapshotId.store(id);
  for (auto* writer : writers) writer->broadcastBarrier(id);
  // A stop-with-savepoint: nothing more comes out of this task (no record, no timer)
  // until the job ends, or the savepoint fails and a mail resumes it (such a mail, put
  // once the savepoint is no longer pending, runs after this one).
  if (kind && kind->synchronous) suspended = true;
  taken->syncNanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - syncStart).count();
  if (!error.empty()) {
    coordinator->decline(id, error);
    return nullptr;
  }
  // Sync point, on the task thread, with a pointer to the checkpoint's id (int64_t*): the
  // snapshot is taken and the barrier sent on; the coordinator hears of it next. A
  // callback that throws fails the task, as an operator that throws does.
  WEIR_SYNC_POINT_CALLBACK("StreamTask::AfterSnapshotTaken", &id);
  return taken;
}

// Hands a snapshot (with the records in flight per input channel, when taken unaligned)
// to the coordinator.
void StreamTask::acknowledgeSnapshot(std::shared_ptr<TakenSnapshot> taken, int64_t alignmentNanos, bool unaligned,
                                     std::vector<std::string> channelState) {
  auto snapshots = taken->operators;
  checkpoint::CheckpointCoordinator::Ack ack{taken->syncNanos, alignmentNanos, unaligned, 0, vertex, index, taken->startMillis};
  OperatorStateSnapshot inFlight{kChannelState, OperatorStateMode::kSplitDistribute, {}};
  for (size_t i = 0; i < channelState.size(); ++i) {
    if (channelState[i].empty()) continue;
    ack.persistedBytes += static_cast<int64_t>(channelState[i].size());
    inFlight.elements.push_back(encodeInFlight(inputOrigins[i], channelState[i]));
  }
  if (!inFlight.elements.empty()) snapshots->front().operatorState.push_back(std::move(inFlight));
  struct Part {
    std::string operatorId;
    std::string name;
  };
  std::vector<Part> parts;
  for (size_t i = 0; i < operators.size(); ++i) parts.push_back({operatorIds[i], operators[i]->name()});
  {
    std::lock_guard lock(uploadMutex);
    ++pendingUploads;
  }
  auto upload = [snapshots, parts, subtask = index, parallelism = parallelism,
                 maxParallelism = maxParallelism](const checkpoint::CheckpointTarget& target) {
    std::vector<checkpoint::StateFileInfo> files;
    for (size_t i = 0; i < snapshots->size(); ++i) {
      OperatorSnapshot& s = (*snapshots)[i];
      if (s.keyed.empty() && s.operatorState.empty() && !s.rocksdb) continue;
      checkpoint::StateFileInfo info;
      info.operatorId = parts[i].operatorId;
      info.operatorName = parts[i].name;
      info.subtask = subtask;
      info.parallelism = parallelism;
      info.maxParallelism = maxParallelism;
      info.keyGroups = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtask);
      info.file = parts[i].operatorId + "-" + std::to_string(subtask) + "-state";
      checkpoint::writeStateFile(target, s, info);
      files.push_back(std::move(info));
    }
    return files;
  };
  auto done = [snapshots, this] {
    snapshots->clear();  // state snapshots must be gone before the task closes its state
    std::lock_guard lock(uploadMutex);
    --pendingUploads;
    uploadCv.notify_all();
  };
  coordinator->acknowledge(taken->id, ack, std::move(upload), std::move(done));
}

}  // namespace weir::runtime
