#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <tuple>

#include "checkpoint/checkpoint_storage.h"
#include "core/file_system.h"
#include "weir/detail/savepoint/bootstrap.h"
#include "weir/error.h"
#include "weir/key_group.h"

namespace fs = std::filesystem;

namespace weir::detail {

namespace {
std::string metadataPath(const std::string& folder) { return (fs::path(folder) / "_metadata").string(); }
}  // namespace

void prepareBootstrapFolder(const std::string& folder) {
  std::error_code ec;
  if (fs::exists(metadataPath(folder), ec))
    throw Error(ErrorCode::kInvalidArgument,
                "'" + folder + "' holds a savepoint already; weir never overwrites one: write to another folder");
  if (auto made = core::FileSystem::local()->createDirectories(folder))
    throw Error(ErrorCode::kIo, "cannot make the savepoint folder '" + folder + "': " + made.message());
}

std::string writeBootstrappedInstance(const BootstrapTarget& target, const std::string& operatorName, int subtask,
                                      int parallelism, OperatorSnapshot& snapshot) {
  checkpoint::CheckpointTarget files;
  files.folder = target.folder;
  files.kind.savepoint = true;
  checkpoint::StateFileInfo info;
  info.operatorId = target.operatorId;
  info.operatorName = operatorName;
  info.subtask = subtask;
  info.parallelism = parallelism;
  info.maxParallelism = target.maxParallelism;
  info.keyGroups = computeKeyGroupRangeForOperatorIndex(target.maxParallelism, parallelism, subtask);
  info.file = target.operatorId + "-" + std::to_string(subtask) + "-state";
  checkpoint::writeStateFile(files, snapshot, info);
  return checkpoint::encodeStateFileInfo(info);
}

void writeBootstrappedMetadata(const std::string& folder, int maxParallelism, const std::string& stateBackend,
                               const std::vector<std::string>& instances) {
  checkpoint::CheckpointMetadata metadata;
  metadata.checkpointId = 0;  // as Flink's: the job that resumes counts its checkpoints from 1
  metadata.jobId = "bootstrapped";
  metadata.timestampMillis =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  metadata.maxParallelism = maxParallelism;
  metadata.savepointFormat = "CANONICAL";
  metadata.stateBackend = stateBackend;
  const std::string file = metadataPath(folder);
  std::map<std::string, std::vector<bool>> seen;  // by operator: its subtasks written
  for (const auto& entry : instances) {
    checkpoint::StateFileInfo info = checkpoint::decodeStateFileInfo(entry, file);
    auto& subtasks = seen[info.operatorId];
    if (subtasks.empty()) subtasks.resize(static_cast<size_t>(info.parallelism));
    if (info.subtask < 0 || static_cast<size_t>(info.subtask) >= subtasks.size() || subtasks[info.subtask])
      throw Error(ErrorCode::kCheckpoint, "'" + file + "' would name subtask " + std::to_string(info.subtask) +
                                              " of operator '" + info.operatorId + "' twice or out of range");
    subtasks[info.subtask] = true;
    metadata.files.push_back(std::move(info));
  }
  for (const auto& [operatorId, subtasks] : seen)
    for (size_t i = 0; i < subtasks.size(); ++i)
      if (!subtasks[i])
        throw Error(ErrorCode::kCheckpoint, "'" + file + "' cannot be written: subtask " + std::to_string(i) +
                                                " of operator '" + operatorId + "' wrote no state");
  std::sort(metadata.files.begin(), metadata.files.end(), [](const auto& a, const auto& b) {
    return std::tie(a.operatorId, a.subtask) < std::tie(b.operatorId, b.subtask);
  });
  checkpoint::writeMetadata(folder, metadata);
}

}  // namespace weir::detail
