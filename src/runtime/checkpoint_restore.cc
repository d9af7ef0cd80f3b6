#include "runtime/checkpoint_restore.h"

#include <algorithm>
#include <deque>
#include <set>

#include "weir/detail/state/operator_state.h"

namespace weir::runtime {

using namespace weir::detail;
using namespace weir::checkpoint;

CheckpointRestore::CheckpointRestore(const JobPlan& plan, const std::string& path) : plan_(plan) {
  if (path.empty()) return;
  folder_ = checkpointFolder(path);
  metadata_ = readMetadata(folder_, *plan.fileSystem());
  verifyCheckpoint(folder_, metadata_, *plan.fileSystem());
  if (metadata_.maxParallelism != plan.graph.maxParallelism)
    throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "' was taken with maxParallelism " +
                                            std::to_string(metadata_.maxParallelism) + ", the job has " +
                                            std::to_string(plan.graph.maxParallelism) + "; they must be equal");
  for (const auto& f : metadata_.files) {
    bool known = std::find(plan.operatorIds.begin(), plan.operatorIds.end(), f.operatorId) != plan.operatorIds.end();
    if (!known)
      throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "' holds state of operator '" +
                                              f.operatorName + "' (id " + f.operatorId +
                                              ") that this job does not have; give operators stable uids");
    byOperator_[f.operatorId].push_back(&f);
  }
}

std::unique_ptr<RestoredOperatorState> CheckpointRestore::stateOf(int node, int subtask, int parallelism) const {
  auto files = filesOf(node);
  if (files == nullptr) return nullptr;
  auto out = std::make_unique<RestoredOperatorState>();
  KeyGroupRange range = computeKeyGroupRangeForOperatorIndex(plan_.graph.maxParallelism, parallelism, subtask);
  out->keyGroups = range;
  std::vector<std::vector<OperatorStateSnapshot>> old(static_cast<size_t>(files->front()->parallelism));
  for (const auto* f : *files) {
    if (f->subtask < 0 || f->subtask >= static_cast<int>(old.size()))
      throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "': file '" + f->file + "' names subtask " +
                                              std::to_string(f->subtask) + " of " + std::to_string(old.size()));
    readStateFile(folder_, *f, range, *out, old[static_cast<size_t>(f->subtask)], plan_.fileSystem());
  }
  takeChannelState(old, subtask, parallelism, *out);
  out->operatorState = redistributeOperatorState(old, parallelism).at(static_cast<size_t>(subtask));
  return out;
}

std::unique_ptr<TrackingSplitEnumerator> CheckpointRestore::enumeratorFor(const Transformation& node,
                                                                        int parallelism) const {
  auto files = filesOf(node.id);
  if (files == nullptr)
    return std::make_unique<TrackingSplitEnumerator>(node.createEnumerator(parallelism),
                                                     std::vector<std::string>{}, parallelism);
  std::vector<std::string> assigned = assignedSplits(node.id);
  std::set<std::string> skip(assigned.begin(), assigned.end());
  int old = files->front()->parallelism;
  auto original = node.createEnumerator(old);
  std::deque<std::unique_ptr<SourceSplit>> remaining;
  for (int reader = 0; original != nullptr && reader < old; ++reader) {  // null: a source without splits
    while (auto split = original->nextSplit(reader)) {
      if (!skip.contains(split->splitId())) remaining.push_back(std::move(split));
    }
  }
  return std::make_unique<TrackingSplitEnumerator>(std::make_unique<SharedSplitEnumerator>(std::move(remaining)),
                                                   std::move(assigned), parallelism);
}

std::vector<std::string> CheckpointRestore::assignedSplits(int node) const {
  std::vector<std::string> ids;
  auto files = filesOf(node);
  if (files == nullptr) return ids;
  for (const auto* f : *files) {
    RestoredOperatorState unused;
    std::vector<OperatorStateSnapshot> lists;
    readStateFile(folder_, *f, KeyGroupRange{}, unused, lists, plan_.fileSystem());
    for (const auto& l : lists)
      if (l.name == kAssignedSplitsState) ids.insert(ids.end(), l.elements.begin(), l.elements.end());
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void CheckpointRestore::takeChannelState(std::vector<std::vector<OperatorStateSnapshot>>& old, int subtask,
                                       int parallelism, RestoredOperatorState& out) {
  out.channelStateRescaled = static_cast<int>(old.size()) != parallelism;
  for (size_t s = 0; s < old.size(); ++s) {
    auto& lists = old[s];
    for (auto it = lists.begin(); it != lists.end();) {
      if (it->name != kChannelState) {
        ++it;
        continue;
      }
      if (out.channelStateRescaled || static_cast<int>(s) == subtask)
        for (auto& element : it->elements) out.channelState.emplace_back(static_cast<int>(s), std::move(element));
      it = lists.erase(it);
    }
  }
}

const std::vector<const StateFileInfo*>* CheckpointRestore::filesOf(int node) const {
  if (folder_.empty()) return nullptr;
  auto it = byOperator_.find(plan_.operatorIds[static_cast<size_t>(node)]);
  return it == byOperator_.end() ? nullptr : &it->second;
}

}  // namespace weir::runtime
