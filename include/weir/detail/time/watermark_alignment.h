// Watermark alignment (Flink's FLIP-182 and FLIP-217): the source subtasks of one
// alignment group report their watermarks, and each learns the group's smallest. A
// source then lets none of its splits (or, when its reader cannot pause splits, not
// itself) run further ahead than that plus its allowed drift, so a fast source does not
// race ahead of a slow one and fill the windows and joins downstream with state that
// waits for the slow one. One per job attempt, shared by the source subtasks' threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace weir::detail {

class WatermarkAlignment {
 public:
  // A member of a group: one source subtask.
  struct Member {
    std::string group;
    size_t index = 0;
  };

  // Before the job starts, for each source subtask with alignment: its place in `group`.
  // A member holds no one back until it reports a watermark (as in Flink, where a source
  // without one yet does not report): a subtask that never reads anything (more subtasks
  // than partitions) must not stop its group for ever.
  Member join(const std::string& group) {
    std::lock_guard lock(mutex_);
    auto& watermarks = groups_[group];
    watermarks.push_back(std::numeric_limits<int64_t>::max());
    return {group, watermarks.size() - 1};
  }

  // Member `m` is at `watermark` (the largest watermark when it is idle, has finished or
  // has none yet: it holds no one back). Returns the smallest watermark of its group.
  int64_t report(const Member& m, int64_t watermark) {
    std::lock_guard lock(mutex_);
    auto& watermarks = groups_.at(m.group);
    watermarks.at(m.index) = watermark;
    return *std::min_element(watermarks.begin(), watermarks.end());
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::vector<int64_t>> groups_;  // guarded by mutex_
};

}  // namespace weir::detail
