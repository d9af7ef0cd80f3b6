// The heap storage path of session windows (Flink's MergingWindowSet, in the operator's
// own table): each key's live sessions with their contents. A record's window merges with
// every session of its key it intersects, their contents merged in order of start.
// Sessions of a key never intersect each other, so only the new window can merge, and
// the merged window is never late unless nothing merged. A session that grows moves its
// end with every record, so its timers are not queued per window: each key has one
// timer, armed for the earliest time one of its sessions must fire or be dropped.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "weir/detail/window/window_state.h"
#include "weir/error.h"
#include "weir/functions.h"
#include "weir/windows.h"

namespace weir::detail {

// A mixin of WindowOperator (Op): Op derives from it and calls it.
template <class Op, class T, class K, class Policy>
class HeapSessionWindows {
  using Acc = typename Policy::Acc;
  using OUT = typename Policy::Out;
  using Timer = KeyedWindowTimer<K>;

 protected:
  template <class Assigner>
  bool placeInSession(Assigner& assigner, const K& key, const T& record, int64_t timestamp,
                      Collector<OUT>& collector) {
    TimeWindow w = assigner.assignWindow(record, timestamp);
    auto entry = sessions_.try_emplace(key).first;
    auto& windows = entry->second.windows;
    TimeWindow merged = w;
    SessionWindow* session = nullptr;  // the one window w intersects, if only one
    int intersecting = 0;
    for (SessionWindow& s : windows) {
      if (!s.window.intersects(w)) continue;
      merged = merged.cover(s.window);
      session = &s;
      ++intersecting;
    }
    if (op().isLate(merged)) {
      if (windows.empty()) sessions_.erase(entry);
      return false;
    }
    if (intersecting == 0) {
      windows.push_back({merged, false, op().policy().create()});
      session = &windows.back();
    } else if (intersecting > 1) {
      std::sort(windows.begin(), windows.end(),
                [](const SessionWindow& a, const SessionWindow& b) { return a.window.start < b.window.start; });
      auto first = std::find_if(windows.begin(), windows.end(), [&](const SessionWindow& s) { return s.window.intersects(w); });
      for (auto s = first + 1; s != windows.end() && s->window.intersects(w); ++s) op().policy().merge(first->acc, s->acc);
      windows.erase(first + 1, first + intersecting);
      session = &*first;
    }
    session->window = merged;
    op().policy().add(session->acc, record);
    if (op().behindWatermark(merged)) {  // late within the allowed lateness
      op().fireWindow(key, merged, session->acc, collector);
      session->fired = true;
    } else {
      session->fired = false;  // it fires (again) when the watermark passes its end
    }
    op().arm(key, entry->second);
    return true;
  }

  // The key's timer came due: fires its sessions the watermark passed, drops those past
  // the allowed lateness, and arms the timer for the next.
  void onSessionTimer(const Timer& t, Collector<OUT>& collector) {
    auto entry = sessions_.find(t.key);
    if (entry == sessions_.end() || entry->second.armed != t.time) return;  // superseded by an earlier one
    auto& windows = entry->second.windows;
    entry->second.armed = std::numeric_limits<int64_t>::max();
    for (SessionWindow& s : windows) {
      if (s.fired || s.window.maxTimestamp() > op().currentTime()) continue;
      op().fireWindow(t.key, s.window, s.acc, collector);
      s.fired = true;
    }
    std::erase_if(windows, [&](const SessionWindow& s) {
      if (!op().expired(s.window)) return false;
      op().clearWindow(t.key, s.window);
      return true;
    });
    if (windows.empty()) sessions_.erase(entry);
    else op().arm(t.key, entry->second);
  }

  // Checkpoint: every session's contents, addWindow(key, window, acc), and each key's
  // sessions, addSessions(key, stored).
  template <class AddWindow, class AddSessions>
  void snapshotSessions(AddWindow&& addWindow, AddSessions&& addSessions) const {
    StoredSessions stored;
    for (const auto& [k, keySessions] : sessions_) {
      stored.armed = keySessions.armed;
      stored.windows.clear();
      for (const SessionWindow& s : keySessions.windows) {
        addWindow(k, s.window, s.acc);
        stored.windows.push_back({s.window, s.window, s.fired});
      }
      addSessions(k, stored);
    }
  }

  // Restore: a key's sessions ("_sessions") come first, then each session's contents
  // ("_windows"), then finishRestore() arms every key's timer.
  void restoreSessions(const K& key, StoredSessions sessions) {
    for (StoredSession& s : sessions.windows)
      restoredSessions_.emplace(std::pair<K, TimeWindow>{key, s.stateWindow}, std::move(s));
  }
  void restoreSessionContents(const std::pair<K, TimeWindow>& kw, Acc acc, int keyGroup, const std::string& name) {
    auto session = restoredSessions_.find(kw);
    if (session == restoredSessions_.end())
      throw Error(ErrorCode::kCheckpoint, "operator '" + name + "': state '" + kWindowContentsState +
                                              "' holds contents of a session that '" + kSessionsState +
                                              "' does not have (key group " + std::to_string(keyGroup) + ")");
    sessions_[kw.first].windows.push_back({session->second.window, session->second.fired, std::move(acc)});
    restoredSessions_.erase(session);
  }
  void finishRestore(const std::string& name) {
    if (!restoredSessions_.empty())
      throw Error(ErrorCode::kCheckpoint, "operator '" + name + "': state '" + kSessionsState + "' has " +
                                              std::to_string(restoredSessions_.size()) +
                                              " session windows without contents in '" + kWindowContentsState + "'");
    restoredSessions_ = {};
    for (auto& [key, sessions] : sessions_) op().arm(key, sessions);
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }

  struct SessionWindow {
    TimeWindow window;
    bool fired;  // the watermark passed its end (it fires again only for a late record)
    Acc acc;
  };
  struct KeySessions {
    std::vector<SessionWindow> windows;
    int64_t armed = std::numeric_limits<int64_t>::max();  // the key's timer, if queued
  };

  absl::flat_hash_map<K, KeySessions, KeyHasher<K>> sessions_;
  // While a restore reads them: the sessions "_sessions" listed, by the window holding
  // their contents, until "_windows" gives those.
  absl::flat_hash_map<std::pair<K, TimeWindow>, StoredSession, KeyAndWindowHash<K>> restoredSessions_;
};

}  // namespace weir::detail
