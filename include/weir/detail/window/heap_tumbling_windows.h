// The heap storage path of tumbling windows: the operator's own tables, window by
// window. Every key's window ends at the same time, so a window's timers are one for all
// its keys, and a record mostly goes into the window of the record before it. A
// checkpoint writes each window's accumulators by key, and timers as each key's own.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <map>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "weir/detail/window/window_state.h"
#include "weir/functions.h"
#include "weir/windows.h"

namespace weir::detail {

// A mixin of WindowOperator (Op): Op derives from it and calls it.
template <class Op, class T, class K, class Policy>
class HeapTumblingWindows {
  using Acc = typename Policy::Acc;
  using OUT = typename Policy::Out;
  using Timer = KeyedWindowTimer<K>;

 protected:
  // `record` goes into the contents of its window under `key`. A new window gets its
  // timers; a window already behind the watermark (late within the allowed lateness)
  // fires again at once for the key. False when the record is too late for every window.
  template <class Assigner>
  bool placeInWindows(Assigner& assigner, const K& key, const T& record, int64_t time, Collector<OUT>& collector) {
    if constexpr (TumblingWindowAssigner<Assigner>)
      if (current_ != nullptr && time >= currentWindow_.start && time < currentWindow_.end) {
        addToWindow(key, currentWindow_, *current_, record, collector);
        return true;
      }
    bool placed = false;
    assigner.assignWindows(time, [&](const TimeWindow& w) {
      if (op().isLate(w)) return;
      placed = true;
      auto [it, created] = windows_.try_emplace(w);
      if (created) scheduleWindow(w, !op().behindWatermark(w));
      current_ = &it->second;
      currentWindow_ = w;
      addToWindow(key, w, it->second, record, collector);
    });
    return placed;
  }

  // Fires and drops the windows whose timers the current time reached, every key's at
  // once.
  void fireWindows(Collector<OUT>& collector) {
    while (!windowTimers_.empty() && windowTimers_.top().time <= op().currentTime()) {
      const WindowTimer t = windowTimers_.top();
      windowTimers_.pop();
      auto it = windows_.find(t.window);
      if (it == windows_.end()) continue;
      WindowContents& contents = it->second;
      if (!t.cleanup || t.firesFirst) {
        for (auto& [key, acc] : contents.byKey)
          if (contents.fired.empty() || !contents.fired.contains(key)) op().fireWindow(key, t.window, acc, collector);
        contents.fired.clear();
      }
      if (t.cleanup) {
        if constexpr (ClearsWindows<Policy>)
          for (auto& [key, acc] : contents.byKey) op().clearWindow(key, t.window);
        if (current_ == &contents) current_ = nullptr;
        windows_.erase(it);
      }
    }
  }

  std::optional<int64_t> earliestWindowTimer() const {
    if (windowTimers_.empty()) return std::nullopt;
    return windowTimers_.top().time;
  }

  // Checkpoint: every window's contents, addWindow(key, window, acc), and its timers as
  // each of its keys' own, addTimer(timer).
  template <class AddWindow, class AddTimer>
  void snapshotWindows(AddWindow&& addWindow, AddTimer&& addTimer) const {
    for (const auto& [w, contents] : windows_)
      for (const auto& [k, acc] : contents.byKey) addWindow(k, w, acc);
    for (auto queue = windowTimers_; !queue.empty(); queue.pop()) {
      const WindowTimer& t = queue.top();
      auto it = windows_.find(t.window);
      if (it == windows_.end()) continue;
      for (const auto& [k, acc] : it->second.byKey) {
        const bool firedBefore = it->second.fired.contains(k);
        if (!t.cleanup && firedBefore) continue;
        addTimer(Timer{t.time, t.cleanup, k, t.window, false, t.firesFirst && !firedBefore});
      }
    }
  }

  // Restore: one window's contents of one key, and one timer.
  void restoreWindow(std::pair<K, TimeWindow> kw, Acc acc) {
    windows_[kw.second].byKey.insert_or_assign(std::move(kw.first), std::move(acc));
  }
  void restoreTimer(const Timer& t) {
    if (!t.cleanup || t.firesFirst)  // the window's timers come from its contents
      restoredFirings_.insert(std::pair<K, TimeWindow>{t.key, t.window});
  }
  // After the restore: each restored window's timers. Its keys without a firing timer
  // fired before (see WindowContents::fired). The window fires if any key still has to,
  // or if the restored watermark is before its end (after rescaling it is the smallest
  // of the old subtasks'), where keys that come next must fire.
  void scheduleRestoredWindows() {
    for (auto& [w, contents] : windows_) {
      for (const auto& [k, acc] : contents.byKey)
        if (!restoredFirings_.contains(std::pair<K, TimeWindow>{k, w})) contents.fired.insert(k);
      const bool fires = contents.fired.size() < contents.byKey.size() || !op().behindWatermark(w);
      if (!fires) contents.fired.clear();
      scheduleWindow(w, fires);
    }
    restoredFirings_ = {};
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }
  const Op& op() const { return static_cast<const Op&>(*this); }

  // A window's timer, for all its keys at once.
  struct WindowTimer {
    int64_t time;
    bool cleanup;
    TimeWindow window;
    bool firesFirst;
  };
  // A window's contents: each key's accumulator.
  struct WindowContents {
    absl::flat_hash_map<K, Acc, KeyHasher<K>> byKey;
    // Keys whose window fired before a restore that joined them with keys whose
    // window had not (their subtasks' watermarks differed): they do not fire again.
    absl::flat_hash_set<K, KeyHasher<K>> fired;
  };
  struct WindowOrder {
    bool operator()(const TimeWindow& a, const TimeWindow& b) const {
      return a.start != b.start ? a.start < b.start : a.end < b.end;
    }
  };

  void addToWindow(const K& key, const TimeWindow& w, WindowContents& contents, const T& record,
                   Collector<OUT>& collector) {
    auto it = contents.byKey.find(key);
    if (it == contents.byKey.end()) it = contents.byKey.emplace(key, op().policy().create()).first;
    op().policy().add(it->second, record);
    if (op().behindWatermark(w)) op().fireWindow(key, w, it->second, collector);
  }
  // Window `w`'s timers: a firing at its end (when `fires`) and a cleanup after the
  // allowed lateness, or one timer that does both when there is no allowed lateness (as
  // Flink's two timers of the same time are one).
  void scheduleWindow(const TimeWindow& w, bool fires) {
    const int64_t cleanup = op().cleanupTime(w);
    const bool firesAtCleanup = cleanup == w.maxTimestamp();
    if (fires && !firesAtCleanup) pushWindowTimer({w.maxTimestamp(), false, w, false});
    pushWindowTimer({cleanup, true, w, fires && firesAtCleanup});
  }
  void pushWindowTimer(const WindowTimer& timer) {
    op().onTimerQueued(timer.time);
    windowTimers_.push(timer);
  }

  std::map<TimeWindow, WindowContents, WindowOrder> windows_;
  std::priority_queue<WindowTimer, std::vector<WindowTimer>, LaterTimer> windowTimers_;
  WindowContents* current_ = nullptr;  // the last record's window
  TimeWindow currentWindow_;
  // While a restore reads them: the (key, window)s with a firing timer.
  absl::flat_hash_set<std::pair<K, TimeWindow>, KeyAndWindowHash<K>> restoredFirings_;
};

}  // namespace weir::detail
