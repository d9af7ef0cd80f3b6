// The RocksDB storage path of session windows: as heap_session_windows.h, with each
// key's sessions a ValueState ("_sessions") and their contents window contents in
// RocksDB (rocksdb_windows.h) under each session's state window. A session that grows
// keeps its state window, so its contents never move; one that absorbs others takes
// their contents into its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "weir/detail/window/window_state.h"
#include "weir/functions.h"
#include "weir/state.h"
#include "weir/windows.h"

namespace weir::detail {

// A mixin of WindowOperator (Op): Op derives from it and calls it.
template <class Op, class T, class K, class Policy>
class RocksDBSessionWindows {
  using Acc = typename Policy::Acc;
  using OUT = typename Policy::Out;
  using Timer = KeyedWindowTimer<K>;

 protected:
  // The state of each key's sessions; set when the operator opens on RocksDB.
  void openSessions(ValueState<StoredSessions>* sessions) { sessionsState_ = sessions; }
  bool sessionsInRocksDB() const { return sessionsState_ != nullptr; }
  void closeSessions() { sessionsState_ = nullptr; }

  template <class Assigner>
  bool placeInStoredSession(Assigner& assigner, const K& key, const T& record, int64_t timestamp,
                            Collector<OUT>& collector) {
    TimeWindow w = assigner.assignWindow(record, timestamp);
    op().setCurrentKey(key);
    StoredSessions sessions = sessionsState_->value().value_or(StoredSessions{});
    auto& windows = sessions.windows;
    TimeWindow merged = w;
    int intersecting = 0;
    for (const StoredSession& s : windows) {
      if (!s.window.intersects(w)) continue;
      merged = merged.cover(s.window);
      ++intersecting;
    }
    if (op().isLate(merged)) return false;
    StoredSession* session = nullptr;
    if (intersecting == 0) {
      windows.push_back({merged, merged, false});
      session = &windows.back();
    } else {
      if (intersecting > 1)
        std::sort(windows.begin(), windows.end(),
                  [](const StoredSession& a, const StoredSession& b) { return a.window.start < b.window.start; });
      auto first = std::find_if(windows.begin(), windows.end(), [&](const StoredSession& s) { return s.window.intersects(w); });
      for (auto s = first + 1; s != first + intersecting; ++s) mergeStoredContents(key, first->stateWindow, s->stateWindow);
      windows.erase(first + 1, first + intersecting);
      session = &*first;
    }
    session->window = merged;
    const TimeWindow stateWindow = session->stateWindow;
    auto& contents = op().selectContents(key, stateWindow);
    std::optional<Acc> acc;  // the contents, when they were read anyway
    if constexpr (KeepsRecords<Policy>) {
      contents.add(record);
    } else {
      acc = intersecting == 0 ? std::nullopt : contents.value();
      if (!acc) acc = op().policy().create();
      op().policy().add(*acc, record);
      contents.update(*acc);
    }
    session->fired = op().behindWatermark(merged);  // late within the allowed lateness: fires again at once
    if (session->fired) {
      if constexpr (KeepsRecords<Policy>) acc = contents.get();
      op().fireWindow(key, merged, *acc, collector);
    }
    op().arm(key, sessions);
    op().setCurrentKey(key);
    sessionsState_->update(std::move(sessions));
    return true;
  }

  // As HeapSessionWindows::onSessionTimer.
  void onStoredSessionTimer(const Timer& t, Collector<OUT>& collector) {
    op().setCurrentKey(t.key);
    std::optional<StoredSessions> stored = sessionsState_->value();
    if (!stored || stored->armed != t.time) return;  // superseded by an earlier one
    StoredSessions sessions = std::move(*stored);
    sessions.armed = std::numeric_limits<int64_t>::max();
    for (StoredSession& s : sessions.windows) {
      if (s.fired || s.window.maxTimestamp() > op().currentTime()) continue;
      auto& contents = op().selectContents(t.key, s.stateWindow);
      std::optional<Acc> acc;
      if constexpr (KeepsRecords<Policy>) acc = contents.get();
      else acc = contents.value();
      if (acc) op().fireWindow(t.key, s.window, *acc, collector);
      s.fired = true;
    }
    std::erase_if(sessions.windows, [&](const StoredSession& s) {
      if (!op().expired(s.window)) return false;
      op().selectContents(t.key, s.stateWindow).clear();
      op().clearWindow(t.key, s.window);
      return true;
    });
    op().setCurrentKey(t.key);
    if (sessions.windows.empty()) {
      sessionsState_->clear();
      return;
    }
    op().arm(t.key, sessions);  // (leaves the store's key alone)
    sessionsState_->update(std::move(sessions));
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }

  // Moves the contents under state window `from` into those under `into` (the earlier
  // session's), as the heap merges them.
  void mergeStoredContents(const K& key, const TimeWindow& into, const TimeWindow& from) {
    auto& contents = op().selectContents(key, from);
    if constexpr (KeepsRecords<Policy>) {
      std::vector<T> records = contents.get();
      contents.clear();
      op().selectContents(key, into);
      contents.addAll(std::move(records));
    } else {
      std::optional<Acc> other = contents.value();
      contents.clear();
      if (!other) return;
      op().selectContents(key, into);
      Acc acc = contents.value().value_or(op().policy().create());
      op().policy().merge(acc, *other);
      contents.update(std::move(acc));
    }
  }

  ValueState<StoredSessions>* sessionsState_ = nullptr;  // each key's sessions
};

}  // namespace weir::detail
