// The storage path of sliding windows (paned assigners), on either backend: each record
// goes into its one pane (a slide's worth of time), and a window fires with its panes'
// contents combined. On the heap the panes are the operator's own table; on RocksDB they
// are window contents in RocksDB (rocksdb_windows.h), namespaced by the pane.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "weir/detail/window/window_state.h"
#include "weir/functions.h"
#include "weir/windows.h"

namespace weir::detail {

// A mixin of WindowOperator (Op): Op derives from it and calls it.
template <class Op, class T, class K, class Policy>
class PanedWindows {
  using Acc = typename Policy::Acc;
  using OUT = typename Policy::Out;
  using Timer = KeyedWindowTimer<K>;

 protected:
  // The record goes into its one pane. A new pane queues the firing timer of each of its
  // windows not queued yet, and a cleanup timer for when its last window is past the
  // allowed lateness; a window behind the watermark (a late record within the lateness)
  // fires again at once.
  template <class Assigner>
  bool placeInPane(Assigner& assigner, const K& key, const T& record, int64_t timestamp,
                   Collector<OUT>& collector) {
    if (timestamp < pane_.start || timestamp >= pane_.end) {  // records mostly come in time order
      pane_ = assigner.paneOf(timestamp);
      paneWindows_.clear();
      assigner.assignWindows(pane_.start, [&](const TimeWindow& w) { paneWindows_.push_back(w); });
    }
    const TimeWindow pane = pane_;
    if (op().isLate(paneWindows_.front())) return false;  // its last window is gone: so are the others
    const bool rocksdb = op().onRocksDB();
    bool created;
    if (rocksdb) {
      created = op().addToBackend(key, pane, record, {Timer{op().cleanupTime(paneWindows_.front()), true, key, pane}});
    } else {
      auto it = state_.find(std::pair<K, TimeWindow>{key, pane});
      created = it == state_.end();
      if (created) it = state_.emplace(std::pair<K, TimeWindow>{key, pane}, op().policy().create()).first;
      op().policy().add(it->second, record);
    }
    if (!created && !op().behindWatermark(paneWindows_.back())) return true;  // the common case
    for (const TimeWindow& w : paneWindows_) {
      if (op().isLate(w)) continue;
      if (op().behindWatermark(w)) firePanes(assigner, key, w, collector);
      else if (created && (rocksdb || scheduled_.insert(std::pair<K, TimeWindow>{key, w}).second))
        op().schedule(Timer{w.maxTimestamp(), false, key, w});
      if constexpr (ClearsWindows<Policy>)
        if (created && (rocksdb || clearing_.insert(std::pair<K, TimeWindow>{key, w}).second))
          op().schedule(Timer{op().cleanupTime(w), true, key, w, true});
    }
    if (created) op().schedule(Timer{op().cleanupTime(paneWindows_.front()), true, key, pane});
    return true;
  }

  template <class Assigner>
  void onPaneTimer(Assigner& assigner, const Timer& t, Collector<OUT>& collector) {
    if (t.clears) {
      clearing_.erase(std::pair<K, TimeWindow>{t.key, t.window});
      op().clearWindow(t.key, t.window);
      return;
    }
    if (t.cleanup) {
      if (op().onRocksDB()) op().eraseFromBackend(t.key, t.window);
      else state_.erase(std::pair<K, TimeWindow>{t.key, t.window});
      return;
    }
    scheduled_.erase(std::pair<K, TimeWindow>{t.key, t.window});
    firePanes(assigner, t.key, t.window, collector);
  }

  // Checkpoint (heap): every pane's contents, addWindow(key, pane, acc).
  template <class AddWindow>
  void snapshotPanes(AddWindow&& addWindow) const {
    for (const auto& [kw, acc] : state_) addWindow(kw.first, kw.second, acc);
  }
  // Restore (heap): one pane's contents of one key, and one timer.
  void restorePane(std::pair<K, TimeWindow> kw, Acc acc) { state_.insert_or_assign(std::move(kw), std::move(acc)); }
  void restorePaneTimer(Timer t) {
    if (!t.cleanup) scheduled_.insert(std::pair<K, TimeWindow>{t.key, t.window});
    if (t.clears) clearing_.insert(std::pair<K, TimeWindow>{t.key, t.window});
    op().schedule(std::move(t));
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }

  // Fires window `w` of `key` with its panes' contents combined, oldest first.
  template <class Assigner>
  void firePanes(Assigner& assigner, const K& key, const TimeWindow& w, Collector<OUT>& collector) {
    Acc acc = op().policy().create();
    bool any = false;
    const bool rocksdb = op().onRocksDB();
    for (__int128 start = w.start; start < w.end;) {
      TimeWindow pane = assigner.paneOf(static_cast<int64_t>(start));
      if (rocksdb) {
        if (auto stored = op().backendContents(key, pane)) {
          op().policy().merge(acc, *stored);
          any = true;
        }
      } else if (auto it = state_.find(std::pair<K, TimeWindow>{key, pane}); it != state_.end()) {
        Acc copy = it->second;  // merge may consume its second argument; the pane lives on
        op().policy().merge(acc, copy);
        any = true;
      }
      start = static_cast<__int128>(pane.end) + (pane.end == std::numeric_limits<int64_t>::max() ? 1 : 0);
    }
    if (!any) return;
    op().fireWindow(key, w, acc, collector);
  }

  // Heap: the contents of each (key, pane).
  absl::flat_hash_map<std::pair<K, TimeWindow>, Acc, KeyAndWindowHash<K>> state_;
  // Heap: windows whose firing timer is queued (RocksDB's timers are one of each anyway).
  absl::flat_hash_set<std::pair<K, TimeWindow>, KeyAndWindowHash<K>> scheduled_;
  // Heap, with a function that clears: windows whose clear timer is queued.
  absl::flat_hash_set<std::pair<K, TimeWindow>, KeyAndWindowHash<K>> clearing_;
  TimeWindow pane_;                      // the pane of the last record,
  std::vector<TimeWindow> paneWindows_;  // and its windows, latest first
};

}  // namespace weir::detail
