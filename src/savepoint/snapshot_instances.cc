#include "weir/detail/savepoint/snapshot_instances.h"

#include <set>

#include "checkpoint/checkpoint_storage.h"
#include "weir/error.h"

namespace weir::detail {

std::vector<SnapshotInstance> snapshotInstances(const std::string& path, const std::string& operatorId) {
  const std::string folder = checkpoint::checkpointFolder(path);
  checkpoint::CheckpointMetadata metadata = checkpoint::readMetadata(folder);
  checkpoint::verifyCheckpoint(folder, metadata);
  std::vector<SnapshotInstance> out;
  std::set<std::string> operators;
  for (size_t i = 0; i < metadata.files.size(); ++i) {
    const auto& file = metadata.files[i];
    operators.insert("'" + file.operatorId + "' (" + file.operatorName + ")");
    if (file.operatorId == operatorId) out.push_back({folder, operatorId, i, file.keyGroups, file.maxParallelism});
  }
  if (out.empty()) {
    std::string names;
    for (const auto& name : operators) names += (names.empty() ? "" : ", ") + name;
    throw Error(ErrorCode::kState, "'" + folder + "' holds no state of operator '" + operatorId +
                                       "'; its operators are: " + (names.empty() ? "none" : names));
  }
  return out;
}

RestoredOperatorState readSnapshotInstance(const SnapshotInstance& instance) {
  checkpoint::CheckpointMetadata metadata = checkpoint::readMetadata(instance.folder);
  if (instance.file >= metadata.files.size() || metadata.files[instance.file].operatorId != instance.operatorId)
    throw Error(ErrorCode::kCheckpoint, "'" + instance.folder + "' changed while it was read");
  RestoredOperatorState restored;
  restored.keyGroups = instance.keyGroups;
  checkpoint::readStateFile(instance.folder, metadata.files[instance.file], instance.keyGroups, restored,
                            restored.operatorState);
  return restored;
}

}  // namespace weir::detail
