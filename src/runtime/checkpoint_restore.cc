#include "runtime/checkpoint_restore.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <mutex>
#include <set>

#include "weir/detail/state/operator_state.h"

namespace weir::runtime {

using namespace weir::detail;
using namespace weir::checkpoint;

CheckpointRestore::CheckpointRestore(const JobPlan& plan, const std::string& path, bool allowNonRestoredState)
    : plan_(plan) {
  if (path.empty()) return;
  folder_ = checkpointFolder(path);
  metadata_ = readMetadata(folder_, *plan.fileSystem());
  const std::string what = (metadata_.isSavepoint() ? "savepoint '" : "checkpoint '") + folder_ + "'";
  verifyCheckpoint(folder_, metadata_, *plan.fileSystem());
  const std::string backend = plan.graph.stateBackend->getName();
  if (metadata_.savepointFormat == "NATIVE" && metadata_.stateBackend != backend)
    throw Error(ErrorCode::kCheckpoint, what + " is in the NATIVE format of the '" + metadata_.stateBackend +
                                            "' state backend, which only that backend restores; the job uses '" +
                                            backend + "': take a CANONICAL savepoint to change state backends");
  std::map<std::string, std::string> unknown;  // id -> name
  for (const auto& f : metadata_.files) {
    bool known = std::find(plan.operatorIds.begin(), plan.operatorIds.end(), f.operatorId) != plan.operatorIds.end();
    if (!known) {
      unknown.emplace(f.operatorId, f.operatorName);
      continue;
    }
    // Key groups cannot change: the operator's max parallelism must be its state's.
    for (size_t i = 0; i < plan.operatorIds.size(); ++i) {
      if (plan.operatorIds[i] != f.operatorId || plan.vertexOf[i] < 0 || plan.maxParallelism[i] == f.maxParallelism)
        continue;
      throw Error(ErrorCode::kCheckpoint,
                  what + " holds state of operator '" + f.operatorName + "' (" + f.operatorId +
                      ") taken with max parallelism " + std::to_string(f.maxParallelism) +
                      ", but the operator now has max parallelism " + std::to_string(plan.maxParallelism[i]) +
                      "; they must be equal (its key groups cannot change): set setMaxParallelism(" +
                      std::to_string(f.maxParallelism) +
                      ") on it (on the head of its chain, if it is chained), or leave it and the job's unset to take "
                      "the state's");
    }
    byOperator_[f.operatorId].push_back(&f);
  }
  if (unknown.empty()) return;
  std::string list;
  for (const auto& [id, name] : unknown) list += (list.empty() ? "" : ", ") + ("'" + id + "' (" + name + ")");
  if (!allowNonRestoredState)
    throw Error(ErrorCode::kCheckpoint,
                what + " holds state of operators this job does not have: " + list +
                    "; give them back their uids, or allow non-restored state (--allow-non-restored-state) to " +
                    "leave that state behind");
  std::fprintf(stderr, "weir: leaving behind the state of operators this job does not have (allowed): %s\n",
               list.c_str());
}

std::unique_ptr<RestoredOperatorState> CheckpointRestore::stateOf(int node, int subtask, int parallelism) const {
  auto files = filesOf(node);
  if (files == nullptr) return nullptr;
  auto out = std::make_unique<RestoredOperatorState>();
  KeyGroupRange range =
      computeKeyGroupRangeForOperatorIndex(plan_.maxParallelism[static_cast<size_t>(node)], parallelism, subtask);
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

namespace {

// A restored source's splits: those the checkpoint had not handed out, to whichever
// reader asks first, then those its own enumerator finds later (a folder it monitors;
// one that split its input up front has none left).
class RestoredSplitEnumerator final : public SplitEnumerator {
 public:
  RestoredSplitEnumerator(std::deque<std::unique_ptr<SourceSplit>> remaining, std::unique_ptr<SplitEnumerator> source,
                          int splitParallelism)
      : remaining_(std::move(remaining)), source_(std::move(source)), splitParallelism_(splitParallelism) {}
  std::unique_ptr<SourceSplit> nextSplit(int subtask) override {
    {
      std::lock_guard lock(mutex_);
      if (!remaining_.empty()) {
        auto split = std::move(remaining_.front());
        remaining_.pop_front();
        return split;
      }
    }
    return source_ ? source_->nextSplit(subtask % splitParallelism_) : nullptr;
  }

 private:
  std::mutex mutex_;
  std::deque<std::unique_ptr<SourceSplit>> remaining_;  // guarded by mutex_
  std::unique_ptr<SplitEnumerator> source_;
  const int splitParallelism_;
};

}  // namespace

std::unique_ptr<TrackingSplitEnumerator> CheckpointRestore::enumeratorFor(const Transformation& node,
                                                                        int parallelism) const {
  auto files = filesOf(node.id);
  if (files == nullptr)
    return std::make_unique<TrackingSplitEnumerator>(node.createEnumerator(parallelism),
                                                     std::vector<std::string>{}, parallelism, parallelism);
  AssignedSplits assigned = assignedSplits(node.id);
  // The input split as the first run split it, so the ids to skip are the same.
  int old = assigned.splitParallelism > 0 ? assigned.splitParallelism : files->front()->parallelism;
  std::set<std::string> skip(assigned.ids.begin(), assigned.ids.end());
  auto original = node.createEnumerator(old);
  std::deque<std::unique_ptr<SourceSplit>> remaining;
  for (int reader = 0; original != nullptr && reader < old; ++reader) {  // null: a source without splits
    while (auto split = original->nextSplit(reader)) {
      if (!skip.contains(split->splitId())) remaining.push_back(std::move(split));
    }
  }
  return std::make_unique<TrackingSplitEnumerator>(
      std::make_unique<RestoredSplitEnumerator>(std::move(remaining), std::move(original), old),
      std::move(assigned.ids), parallelism, old);
}

CheckpointRestore::AssignedSplits CheckpointRestore::assignedSplits(int node) const {
  AssignedSplits out;
  auto files = filesOf(node);
  if (files == nullptr) return out;
  for (const auto* f : *files) {
    RestoredOperatorState unused;
    std::vector<OperatorStateSnapshot> lists;
    readStateFile(folder_, *f, KeyGroupRange{}, unused, lists, plan_.fileSystem());
    for (const auto& l : lists) {
      if (l.name == kAssignedSplitsState) out.ids.insert(out.ids.end(), l.elements.begin(), l.elements.end());
      if (l.name == kSplitParallelismState && !l.elements.empty()) {
        const std::string& text = l.elements[0];
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out.splitParallelism);
        if (ec != std::errc() || end != text.data() + text.size() || out.splitParallelism <= 0)
          throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "': file '" + f->file +
                                                  "' holds a bad split parallelism '" + text + "'");
      }
    }
  }
  std::sort(out.ids.begin(), out.ids.end());
  out.ids.erase(std::unique(out.ids.begin(), out.ids.end()), out.ids.end());
  return out;
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
