// The session windows of one key and where each keeps its contents (Flink's
// MergingWindowSet). When windows merge, the merged window keeps the state namespace
// ("state window") of one of them, so only the others' contents move; the mapping from
// window to state window is itself keyed state, so checkpoints and rescaling carry it.
#pragma once

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "weir/state.h"
#include "weir/windows.h"

namespace weir::detail {

class MergingWindowSet {
 public:
  using Mapping = std::vector<std::pair<TimeWindow, TimeWindow>>;  // window, its state window

  // Reads the current key's windows from `state`.
  void load(ValueState<Mapping>& state) {
    state_ = &state;
    mapping_ = state.value().value_or(Mapping{});
    changed_ = false;
  }
  // Writes them back if they changed.
  void persist() {
    if (!changed_) return;
    if (mapping_.empty()) state_->clear();
    else state_->update(mapping_);
    changed_ = false;
  }

  // Where `window`'s contents live; nullptr when it is not one of the key's windows (a
  // timer left behind by a window merged away).
  const TimeWindow* stateWindowOf(const TimeWindow& window) const {
    for (const auto& [w, state] : mapping_)
      if (w == window) return &state;
    return nullptr;
  }
  // `window` is gone (cleaned up, or late on arrival).
  void retire(const TimeWindow& window) {
    changed_ |= std::erase_if(mapping_, [&](const auto& entry) { return entry.first == window; }) > 0;
  }

  // Adds `window` and merges it with the key's windows it overlaps or touches; returns
  // the window it ended up in. When windows really merged,
  //   merge(merged, mergedWindows, stateWindow, mergedStateWindows)
  // is called to move the contents of `mergedStateWindows` into `stateWindow` and to tell
  // the trigger; `mergedWindows` are the key's windows that `merged` replaces.
  template <class Merge>
  TimeWindow addWindow(const TimeWindow& window, Merge&& merge) {
    TimeWindow merged = window;
    std::vector<TimeWindow> mergedWindows;
    for (const auto& [w, state] : mapping_) {
      if (!w.intersects(window)) continue;  // the key's windows never intersect each other
      mergedWindows.push_back(w);
      merged = merged.cover(w);
    }
    if (mergedWindows.size() == 1 && mergedWindows.front() == merged) return merged;  // inside one: nothing moves
    changed_ = true;
    if (mergedWindows.empty()) {
      mapping_.emplace_back(window, window);
      return window;
    }
    std::sort(mergedWindows.begin(), mergedWindows.end(),
              [](const TimeWindow& a, const TimeWindow& b) { return a.start < b.start; });
    const TimeWindow stateWindow = *stateWindowOf(mergedWindows.front());
    std::vector<TimeWindow> mergedStateWindows;
    for (size_t i = 1; i < mergedWindows.size(); ++i) mergedStateWindows.push_back(*stateWindowOf(mergedWindows[i]));
    std::erase_if(mapping_, [&](const auto& entry) {
      return std::find(mergedWindows.begin(), mergedWindows.end(), entry.first) != mergedWindows.end();
    });
    mapping_.emplace_back(merged, stateWindow);
    merge(merged, std::span<const TimeWindow>(mergedWindows), stateWindow,
          std::span<const TimeWindow>(mergedStateWindows));
    return merged;
  }

 private:
  ValueState<Mapping>* state_ = nullptr;
  Mapping mapping_;
  bool changed_ = false;
};

}  // namespace weir::detail
