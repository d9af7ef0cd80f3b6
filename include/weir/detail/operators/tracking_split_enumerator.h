#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "weir/source.h"

namespace weir::detail {

// A source's enumerator as checkpoints need it: remembers which splits it handed to
// each reader, and skips the splits a restored checkpoint had handed out already (those
// come back through the readers' own state).
class TrackingSplitEnumerator final : public SplitEnumerator {
 public:
  // `inner` was made for `splitParallelism` readers (the parallelism of the run that
  // first split the input; a restore keeps it, so split ids stay the same).
  TrackingSplitEnumerator(std::unique_ptr<SplitEnumerator> inner, std::vector<std::string> alreadyAssigned,
                          int parallelism, int splitParallelism)
      : inner_(std::move(inner)), restored_(std::move(alreadyAssigned)),
        skip_(restored_.begin(), restored_.end()), assigned_(static_cast<size_t>(parallelism)),
        splitParallelism_(splitParallelism) {}

  std::unique_ptr<SourceSplit> nextSplit(int subtask) override {
    while (auto split = inner_->nextSplit(subtask)) {
      std::string id = split->splitId();
      if (skip_.contains(id)) continue;
      std::lock_guard lock(mutex_);
      assigned_.at(static_cast<size_t>(subtask)).push_back(std::move(id));
      return split;
    }
    return nullptr;
  }
  // What reader `subtask` writes into a checkpoint: the splits handed out before this
  // run, and those handed to it since.
  std::vector<std::string> assignedIds(int subtask) {
    std::vector<std::string> out = restored_;
    std::lock_guard lock(mutex_);
    const auto& mine = assigned_.at(static_cast<size_t>(subtask));
    out.insert(out.end(), mine.begin(), mine.end());
    return out;
  }
  int splitParallelism() const { return splitParallelism_; }

 private:
  std::unique_ptr<SplitEnumerator> inner_;
  std::vector<std::string> restored_;
  absl::flat_hash_set<std::string> skip_;
  std::mutex mutex_;
  std::vector<std::vector<std::string>> assigned_;  // guarded by mutex_
  const int splitParallelism_;
};

}  // namespace weir::detail
