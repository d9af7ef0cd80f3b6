// The RocksDB storage path of tumbling and other unmerged windows, and the window
// contents in RocksDB that every RocksDB path keeps: keyed state in RocksDB ("_windows",
// a ValueState of the accumulator or, for a ProcessWindowFunction, a ListState of the
// records) namespaced by the window (or pane, or session's state window), so windows may
// hold more than memory. Each (key, window) has its own timers, which also tell which
// windows exist, so a window costs no memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/window/window_state.h"
#include "weir/functions.h"
#include "weir/state.h"
#include "weir/windows.h"

namespace weir::detail {

// A mixin of WindowOperator (Op): Op derives from it and calls it.
template <class Op, class T, class K, class Policy>
class RocksDBWindows {
  using Acc = typename Policy::Acc;
  using OUT = typename Policy::Out;
  using Timer = KeyedWindowTimer<K>;

 protected:
  using Contents = std::conditional_t<KeepsRecords<Policy>, ListState<T>, ValueState<Acc>>;

  // The window contents' state, namespaced by window; set when the operator opens on
  // RocksDB.
  void openContents(Contents* contents) {
    contents_ = contents;
    contentsWindow_ = dynamic_cast<NamespacedState<TimeWindow>*>(contents);
  }
  bool onRocksDB() const { return contents_ != nullptr; }
  void closeContents() {
    contents_ = nullptr;
    contentsWindow_ = nullptr;
  }

  // The record goes into each of its windows (unless too late for it), each of which
  // has its own timers in RocksDB. False when it is too late for every one.
  template <class Assigner>
  bool placeInBackend(Assigner& assigner, const K& key, const T& record, int64_t time, Collector<OUT>& collector) {
    bool placed = false;
    assigner.assignWindows(time, [&](const TimeWindow& w) {
      if (op().isLate(w)) return;
      placed = true;
      const int64_t cleanup = op().cleanupTime(w);
      const bool created = addToBackend(key, w, record,
                                        {Timer{w.maxTimestamp(), true, key, w, false, true},
                                         Timer{w.maxTimestamp(), false, key, w}, Timer{cleanup, true, key, w}});
      if (op().behindWatermark(w)) {  // late within the allowed lateness: fires again at once
        if (auto stored = backendContents(key, w)) op().fireWindow(key, w, *stored, collector);
      } else if (created && cleanup != w.maxTimestamp()) {
        op().schedule(Timer{w.maxTimestamp(), false, key, w});
      }
      if (created) op().schedule(Timer{cleanup, true, key, w, false, cleanup == w.maxTimestamp()});
    });
    return placed;
  }

  // A (key, window)'s own timer came due.
  void onBackendTimer(const Timer& t, Collector<OUT>& collector) {
    if (!t.cleanup || t.firesFirst)
      if (auto acc = backendContents(t.key, t.window)) op().fireWindow(t.key, t.window, *acc, collector);
    if (t.cleanup) {
      eraseFromBackend(t.key, t.window);
      op().clearWindow(t.key, t.window);
    }
  }

  // Adds `record` to the contents of (key, w) (a window or a pane); true when it made
  // them. A list is appended to without reading it: it is new unless one of
  // `timersOfW` — those that exist while it does — is queued. (All of them, so that a
  // restore with another allowed lateness does not take a window for new.)
  bool addToBackend(const K& key, const TimeWindow& w, const T& record, std::initializer_list<Timer> timersOfW) {
    selectContents(key, w);
    if constexpr (KeepsRecords<Policy>) {
      contents_->add(record);
      return std::none_of(timersOfW.begin(), timersOfW.end(), [&](const Timer& t) { return op().isQueued(t); });
    } else {
      std::optional<Acc> acc = contents_->value();
      const bool created = !acc;
      if (created) acc = op().policy().create();
      op().policy().add(*acc, record);
      contents_->update(std::move(*acc));
      return created;
    }
  }
  // The contents of (key, w), if it has any.
  std::optional<Acc> backendContents(const K& key, const TimeWindow& w) {
    selectContents(key, w);
    if constexpr (KeepsRecords<Policy>) {
      std::vector<T> records = contents_->get();
      if (records.empty()) return std::nullopt;
      return records;
    } else {
      return contents_->value();
    }
  }
  // Drops the contents of (key, w), whose cleanup timer came.
  void eraseFromBackend(const K& key, const TimeWindow& w) { selectContents(key, w).clear(); }
  // The contents of (key, w). `key` must live until the operator releases its key (the
  // backend keeps a pointer to it).
  Contents& selectContents(const K& key, const TimeWindow& w) {
    op().setCurrentKey(key);
    contentsWindow_->setCurrentNamespace(w);
    return *contents_;
  }

 private:
  Op& op() { return static_cast<Op&>(*this); }

  Contents* contents_ = nullptr;
  NamespacedState<TimeWindow>* contentsWindow_ = nullptr;
};

}  // namespace weir::detail
