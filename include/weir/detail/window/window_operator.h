// Keyed windows: assigns each record to its windows, aggregates it into the (key, window)
// accumulator, fires a window when the watermark passes its end, fires it again for late
// records within the allowed lateness, and drops its state after that. Processing-time
// assigners use the job's clock for both: a record's windows are those of the clock's
// time when its batch arrives, and a window fires when the clock passes its end.
//
// The operator picks one storage path for its windows' contents, each in a file of its
// own, and keeps what they share: the time, the timers, firing a window, and the window
// function's own state (windowState, globalState) on the job's state backend.
//
//   assigner            heap                         RocksDB
//   tumbling            heap_tumbling_windows.h      rocksdb_windows.h
//   sliding (panes)     paned_windows.h              paned_windows.h (contents in RocksDB)
//   sessions            heap_session_windows.h       rocksdb_session_windows.h
//
// In a batch job the input comes grouped by key (SortingDataInput) and each key's windows
// fire once its records are done, on the heap whatever the job's backend, so the
// tables hold one key at a time (docs/batch.md).
//
// On the heap the contents are live objects in the operator's own tables, which a
// checkpoint copies out; on RocksDB they are keyed state in RocksDB (rocksdb_windows.h).
// Every path writes the same entries (window_state.h), so either backend restores the
// other's checkpoints. The timers of panes and sessions are on the heap, or on RocksDB in
// its column "_timers" (timer_queue.h).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/sorting_data_input.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/state/state_factory.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/detail/time/timer_queue.h"
#include "weir/detail/window/heap_session_windows.h"
#include "weir/detail/window/heap_tumbling_windows.h"
#include "weir/detail/window/paned_windows.h"
#include "weir/detail/window/rocksdb_session_windows.h"
#include "weir/detail/window/rocksdb_windows.h"
#include "weir/detail/window/window_functions.h"
#include "weir/detail/window/window_operator_base.h"
#include "weir/detail/window/window_state.h"
#include "weir/windows.h"

namespace weir::detail {

template <class T, class K, class KeySelector, class Assigner, class Policy>
class WindowOperator final : public WindowOperatorBase<T, Policy>,
                             private ProcessingTimeCallback,
                             private WindowFunctionState<TimeWindow>,
                             private HeapTumblingWindows<WindowOperator<T, K, KeySelector, Assigner, Policy>, T, K, Policy>,
                             private PanedWindows<WindowOperator<T, K, KeySelector, Assigner, Policy>, T, K, Policy>,
                             private HeapSessionWindows<WindowOperator<T, K, KeySelector, Assigner, Policy>, T, K, Policy>,
                             private RocksDBSessionWindows<WindowOperator<T, K, KeySelector, Assigner, Policy>, T, K, Policy>,
                             private RocksDBWindows<WindowOperator<T, K, KeySelector, Assigner, Policy>, T, K, Policy> {
  using Base = WindowOperatorBase<T, Policy>;
  using OUT = typename Policy::Out;
  using Acc = typename Policy::Acc;
  using Timer = KeyedWindowTimer<K>;
  using HeapTumbling = HeapTumblingWindows<WindowOperator, T, K, Policy>;
  using Paned = PanedWindows<WindowOperator, T, K, Policy>;
  using HeapSessions = HeapSessionWindows<WindowOperator, T, K, Policy>;
  using RocksDBSessions = RocksDBSessionWindows<WindowOperator, T, K, Policy>;
  using RocksDB = RocksDBWindows<WindowOperator, T, K, Policy>;
  friend HeapTumbling;
  friend Paned;
  friend HeapSessions;
  friend RocksDBSessions;
  friend RocksDB;
  using Base::policy_;
  using Base::sideOutputs_;
  using Base::watermark_;

  static constexpr bool kMerging = MergingWindowAssigner<Assigner>;
  static constexpr bool kPaned = PanedWindowAssigner<Assigner>;
  static constexpr bool kProcessingTime = ProcessingTimeWindowAssigner<Assigner>;

 public:
  WindowOperator(KeySelector keySelector, Assigner assigner, int64_t allowedLateness, int lateTag, Policy policy)
      : Base(std::move(policy), lateTag), keySelector_(std::move(keySelector)), assigner_(std::move(assigner)),
        allowedLateness_(kProcessingTime ? 0 : allowedLateness) {}

  std::string batchUnsupportedReason() const override { return kProcessingTime ? kProcessingTimeWindowsInBatch : ""; }

  void open() override {
    this->registerLateRecordsMetric();
    if (sortedInput_.open(this->context()))  // batch: on the heap, from scratch
      return this->callUser([&] { openFunction(policy_.fn, this->context_); });
    // (Types without a Serializer stay on the heap, without checkpoints.)
    if constexpr (Serializable<K> && Serializable<Acc>)
      if (keyedStateInRocksDB(this->context())) store_ = makeKeyedStateBackend<K>(this->context());
    const bool onRocksDB = store_ != nullptr;  // (on the heap the store is made on first use)
    if (auto* restored = this->context().restored()) this->callUser([&] { restore(*restored); });
    if (!onRocksDB) recordContentsSchema();
    if (onRocksDB) {
      if constexpr (KeepsRecords<Policy>)
        this->openContents(&listState<TimeWindow>(*store_, ListStateDescriptor<T>(kWindowContentsState)));
      else
        this->openContents(&valueState<TimeWindow>(*store_, ValueStateDescriptor<Acc>(kWindowContentsState)));
      if constexpr (kMerging)
        this->openSessions(&valueState<VoidNamespace>(*store_, ValueStateDescriptor<StoredSessions>(kSessionsState)));
      RuntimeContext& context = this->context();
      storedTimers_ = std::make_unique<RocksDBTimers>(
          *store_->rocksdb(), kTimersState,
          computeKeyGroupRangeForOperatorIndex(context.getMaxNumberOfParallelSubtasks(),
                                               context.getNumberOfParallelSubtasks(), context.getIndexOfThisSubtask()));
      if constexpr (kProcessingTime)
        if (auto next = earliestTimer()) requestCallback(*next);
    }
    this->callUser([&] { openFunction(policy_.fn, this->context_); });
  }
  void close() override {
    Base::close();
    this->closeContents();
    this->closeSessions();
    storedTimers_.reset();
    store_.reset();
  }

  std::string checkpointUnsupportedReason() const override {
    if constexpr (!Serializable<K> || !Serializable<Acc>)
      return "its key type " + demangledTypeName(typeid(K)) + " or window contents " + demangledTypeName(typeid(Acc)) +
             " have no weir::Serializer, which checkpoints need";
    return "";
  }
  // Every window's contents, sessions' windows, and every pending timer, copied out.
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    this->callUser([&] { snapshotFunction(policy_.fn, checkpointId, timestamp); });
    StreamOperator::snapshotState(checkpointId, timestamp, out);
    if constexpr (Serializable<K> && Serializable<Acc>) {
      const int maxParallelism = this->context().getMaxNumberOfParallelSubtasks();
      auto keyGroup = [&](const K& k) { return assignToKeyGroup(KeyHash<K>{}(k), maxParallelism); };
      std::vector<OwnedStateEntry> windows, sessions, timers;
      DataOutput key, value;
      auto addWindow = [&](const K& k, const TimeWindow& w, const Acc& acc) {
        key.clear();
        value.clear();
        writeKeyAndWindow(k, w, key);
        encodeWindowContents<Policy>(acc, value);
        windows.push_back({keyGroup(k), key.data(), value.data()});
      };
      auto addSessions = [&](const K& k, const StoredSessions& stored) {
        key.clear();
        value.clear();
        Serializer<K>::serialize(k, key);
        Serializer<StoredSessions>::serialize(stored, value);
        sessions.push_back({keyGroup(k), key.data(), value.data()});
      };
      auto addTimer = [&](const Timer& t) {
        key.clear();
        writeTimerTime(t.time, key);
        encodeWindowTimer(t, key);
        timers.push_back({keyGroup(t.key), key.data(), {}});
      };
      this->snapshotPanes(addWindow);
      this->snapshotSessions(addWindow, addSessions);
      for (auto queue = timers_; !queue.empty(); queue.pop()) addTimer(queue.top());
      this->snapshotWindows(addWindow, addTimer);
      // The window function's state, and on RocksDB the windows' contents.
      if (store_) store_->snapshot(checkpointId, out);
      if (!this->onRocksDB()) {
        out.keyed[kWindowContentsState] = std::make_unique<MaterializedSnapshot>(std::move(windows));
        if constexpr (kMerging) out.keyed[kSessionsState] = std::make_unique<MaterializedSnapshot>(std::move(sessions));
      }
      if (!storedTimers_) out.keyed[kTimersState] = std::make_unique<MaterializedSnapshot>(std::move(timers));
    }
    snapshotWindowWatermark(this->context(), watermark_, out);
  }

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    if constexpr (kProcessingTime) now_ = std::max(now_, this->context().clock()->currentTimeMillis());
    else this->requireTimestamps(records.size(), timestamps);
    if constexpr (kSortable<T, K>) {
      if (sortedInput_.buffering()) {  // batch: processed by key at the end
        this->callUser([&] { sortedInput_.add(records, timestamps, [&](T& r) { return std::invoke(keySelector_, r); }); });
        return;
      }
    }
    Collector<OUT> collector = this->collector();
    const bool rocksdb = this->onRocksDB();
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        K key = std::invoke(keySelector_, records[i]);
        const int64_t time = kProcessingTime ? now_ : timestamps[i];
        bool placed = false;
        if constexpr (kMerging) {
          placed = rocksdb ? this->placeInStoredSession(assigner_, key, records[i], time, collector)
                           : this->placeInSession(assigner_, key, records[i], time, collector);
        } else if constexpr (kPaned) {
          placed = this->placeInPane(assigner_, key, records[i], time, collector);
        } else if (!rocksdb) {
          placed = this->placeInWindows(assigner_, key, records[i], time, collector);
        } else {
          placed = this->placeInBackend(assigner_, key, records[i], time, collector);
        }
        if (!placed) this->dropLate(records[i], timestamps[i]);
      }
    } catch (...) {
      releaseKey();
      this->failBatch();
    }
    releaseKey();
    collector.flush();
    sideOutputs_.flush();
  }

  void processWatermark(int64_t watermark) override {
    if constexpr (kSortable<T, K>) {
      if (watermark == kMaxWatermark && sortedInput_.buffering()) processSortedInput();
    }
    watermark_ = std::max(watermark_, watermark);  // a restored one may be ahead of upstream's first
    if constexpr (!kProcessingTime) fireTimers();
    this->forwardWatermark(watermark);
  }
  void endInput() override {
    if (sortedInput_.buffering()) processWatermark(kMaxWatermark);  // the input ended without it
    Base::endInput();
  }

 private:
  // Batch: the sorted input, one key at a time. Once a key's records are in its windows
  // they all fire (the watermark at the end of time) and are dropped, with the key's
  // window function state; the next key starts again with no watermark.
  void processSortedInput() {
    sortedInput_.drain([&](std::span<T> records, Timestamps timestamps) { processBatch(records, timestamps); },
                       [&](const K& key) {
                         watermark_ = kMaxWatermark;
                         fireTimers();
                         watermark_ = kMinWatermark;
                         if (store_) store_->dropStateOf(key);
                       });
  }

  // ProcessingTimeCallback: the clock passed a time this operator asked to be called at.
  void onProcessingTime(int64_t time) override {
    if constexpr (kProcessingTime) {
      passed_ = std::max(passed_, time);
      if (time < callbackAt_) return;  // superseded by an earlier callback: nothing is due
      callbackAt_ = std::numeric_limits<int64_t>::max();
      fireTimers();
      if (auto next = earliestTimer()) requestCallback(*next);
    }
  }

  // Fires and cleans up the windows whose timers the current time reached.
  void fireTimers() {
    Collector<OUT> collector = this->collector();
    try {
      if constexpr (!kMerging && !kPaned)
        if (!this->onRocksDB()) this->fireWindows(collector);
      while (std::optional<Timer> next = takeTimer(currentTime())) {
        const Timer& t = *next;
        if constexpr (kMerging) {
          if (this->sessionsInRocksDB()) this->onStoredSessionTimer(t, collector);
          else this->onSessionTimer(t, collector);
        } else if constexpr (kPaned) {
          this->onPaneTimer(assigner_, t, collector);
        } else {
          this->onBackendTimer(t, collector);
        }
      }
    } catch (...) {
      releaseKey();
      this->failBatch();
    }
    releaseKey();
    collector.flush();
    this->sideOutputs_.flush();  // what window functions emitted to side outputs goes now too
  }

  // Timers come back to the heap. Window contents and sessions: into RocksDB with the
  // rest of the keyed state, or to the heap from wherever the checkpoint holds them
  // (state files, or a RocksDB instance's incremental files). On the heap a key's
  // session timer is armed again from its windows.
  void restore(RestoredOperatorState& restored) {
    watermark_ = restoreWindowWatermark(restored, this->context());
    if (store_ != nullptr) {  // RocksDB: the timers, contents and sessions go into its columns
      store_->setRestored(restored);
      return;
    }
    if constexpr (Serializable<K> && Serializable<Acc>) {
      if (restored.hasKeyed()) {  // from state files or a RocksDB instance's incremental files
        keyedState().setRestored(restored);
        recordContentsSchema();  // the contents' records migrate, as a ListState's would
        if constexpr (kMerging) store_->takeRestored(kSessionsState, [&](const StateEntry& e) { restoreSessions(e); });
        store_->takeRestored(kWindowContentsState, [&](const StateEntry& e) { restoreWindow(e); });
        store_->takeRestored(kTimersState, [&](const StateEntry& e) { restoreTimer(e); });
      }
    }
    if constexpr (kMerging) this->finishRestore(this->name());
    if constexpr (!kMerging && !kPaned) this->scheduleRestoredWindows();
  }
  // Heap: the schema of "_windows" as RocksDB's contents state records it (a ListState
  // of the records, or a ValueState of the accumulator, per window), so that a changed
  // record type migrates or is refused on either backend, and checkpoints carry it.
  void recordContentsSchema() {
    if constexpr (Serializable<K> && Serializable<Acc>) {
      if constexpr (KeepsRecords<Policy>)
        keyedState().recordSchema(kWindowContentsState, "ListState", stateLayout<TimeWindow, T>({"element"}));
      else
        keyedState().recordSchema(kWindowContentsState, "ValueState", stateLayout<TimeWindow, Acc>({"value"}));
    }
  }
  // Heap: one restored "_sessions" entry, a key's sessions, whose contents come next.
  void restoreSessions(const StateEntry& e) {
    this->HeapSessions::restoreSessions(decodeState<K>(e.key, kSessionsState, e.keyGroup),
                                        decodeState<StoredSessions>(e.value, kSessionsState, e.keyGroup));
  }
  // Heap: one restored "_windows" entry, into the path's table.
  void restoreWindow(const StateEntry& e) {
    DataInput in(e.key);
    auto kw = readKeyAndWindow<K>(in, e.keyGroup);
    Acc acc = decodeWindowContents<T, Policy>(e.value, e.keyGroup);
    if constexpr (kMerging) this->restoreSessionContents(kw, std::move(acc), e.keyGroup, this->name());
    else if constexpr (kPaned) this->restorePane(std::move(kw), std::move(acc));
    else this->HeapTumbling::restoreWindow(std::move(kw), std::move(acc));
  }
  // Heap: one restored timer. A key's session timer is armed again from its windows.
  void restoreTimer(const StateEntry& e) {
    if constexpr (kMerging) return;
    Timer t = decodeWindowTimer<K>(checkpointedTimerTime(e, kTimersState), e.key.substr(8), e.keyGroup);
    if constexpr (kPaned) this->restorePaneTimer(std::move(t));
    else this->HeapTumbling::restoreTimer(t);
  }

  // What the windows' timers follow: the watermark, or the last time the clock passed
  // (not now_: records may still get the current millisecond).
  int64_t currentTime() const { return kProcessingTime ? passed_ : watermark_; }
  // When `w` is done: its end plus the allowed lateness.
  int64_t cleanupTime(const TimeWindow& w) const { return saturatingAdd(w.maxTimestamp(), allowedLateness_); }
  // `w` is done: the current time passed its end and the allowed lateness.
  bool expired(const TimeWindow& w) const { return cleanupTime(w) <= currentTime(); }
  // Too late for `w` (event time only: a record's processing-time windows are current).
  bool isLate(const TimeWindow& w) const { return !kProcessingTime && expired(w); }
  // The watermark passed the end of `w`, which a late record (within the lateness)
  // updates: it fires again at once.
  bool behindWatermark(const TimeWindow& w) const { return !kProcessingTime && w.maxTimestamp() <= watermark_; }
  Policy& policy() { return policy_; }

  // The timers of panes, sessions and RocksDB windows: on the heap or in RocksDB.
  void schedule(Timer timer) {
    onTimerQueued(timer.time);
    if (!storedTimers_) {
      timers_.push(std::move(timer));
      return;
    }
    if constexpr (Serializable<K>) {
      timerBytes_.clear();
      encodeWindowTimer(timer, timerBytes_);
      storedTimers_->add(keyGroupOf(timer.key), timer.time, timerBytes_.data());
    }
  }
  // RocksDB: whether `timer` is queued.
  bool isQueued(const Timer& timer) {
    timerBytes_.clear();
    encodeWindowTimer(timer, timerBytes_);
    return storedTimers_->contains(keyGroupOf(timer.key), timer.time, timerBytes_.data());
  }
  // A timer at `time` was queued: in processing time, the clock must call back then.
  void onTimerQueued(int64_t time) {
    if constexpr (kProcessingTime) requestCallback(time);
  }
  // Takes the earliest timer at or before `upTo`, if any.
  std::optional<Timer> takeTimer(int64_t upTo) {
    if (storedTimers_) {
      int keyGroup;
      int64_t time;
      if (!storedTimers_->pop(upTo, keyGroup, time, timerRest_)) return std::nullopt;
      return decodeWindowTimer<K>(time, timerRest_, keyGroup);
    }
    if (timers_.empty() || timers_.top().time > upTo) return std::nullopt;
    Timer t = timers_.top();
    timers_.pop();
    return t;
  }
  std::optional<int64_t> earliestTimer() {
    if (storedTimers_) return storedTimers_->earliest();
    std::optional<int64_t> earliest;
    if (!timers_.empty()) earliest = timers_.top().time;
    if (auto window = this->earliestWindowTimer(); window && (!earliest || *window < *earliest)) earliest = window;
    return earliest;
  }
  int keyGroupOf(const K& key) const {
    return assignToKeyGroup(KeyHash<K>{}(key), this->context_->getMaxNumberOfParallelSubtasks());
  }
  // Asks the subtask to call onProcessingTime at `time`, unless it will call earlier.
  void requestCallback(int64_t time) {
    if (time >= callbackAt_) return;
    callbackAt_ = time;
    this->context().processingTimeService().registerTimer(time, this);
  }

  // Queues the key's session timer for its next firing or cleanup, unless one comes
  // earlier.
  template <class Sessions>
  void arm(const K& key, Sessions& sessions) {
    int64_t next = std::numeric_limits<int64_t>::max();
    for (const auto& s : sessions.windows)
      next = std::min(next, s.fired ? cleanupTime(s.window) : s.window.maxTimestamp());
    if (next < sessions.armed) {
      sessions.armed = next;
      schedule(Timer{next, false, key, TimeWindow{}});
    }
  }

  // Hands window `w` of `key` to the window function.
  void fireWindow(const K& key, const TimeWindow& w, Acc& acc, Collector<OUT>& collector) {
    collector.setTimestamp(true, w.maxTimestamp());
    withKey(key, [&] { policy_.fire(key, w, acc, watermark_, *this->context().clock(), this, collector); });
  }
  // Window `w` of `key` is gone: a ProcessWindowFunction clears what it kept for it.
  void clearWindow(const K& key, const TimeWindow& w) {
    if constexpr (ClearsWindows<Policy>)
      withKey(key, [&] { policy_.clear(w, watermark_, *this->context().clock(), this); });
  }
  // Runs `call` with `key` as the one the function's state is for (set on first use).
  template <class Call>
  void withKey(const K& key, Call call) {
    firingKey_ = &key;
    keySet_ = false;
    call();
    if (keySet_) store_->clearCurrentKey();
    firingKey_ = nullptr;
  }
  // RocksDB: the key the window contents and sessions are read and written for.
  void setCurrentKey(const K& key) { store_->setCurrentKey(key); }
  void releaseKey() {
    if (this->onRocksDB()) store_->clearCurrentKey();
  }

  // WindowFunctionState: the function's keyed state, made when first asked for (most
  // window functions have none, and a RocksDB instance is not free).
  KeyedStateBackend<K>& keyedState() {
    if (!store_)
      store_ = sortedInput_.enabled() ? makeBatchKeyedStateBackend<K>(this->context())
                                      : makeKeyedStateBackend<K>(this->context());
    if (!keySet_ && firingKey_ != nullptr) {
      store_->setCurrentKey(*firingKey_);
      keySet_ = true;
    }
    return *store_;
  }
  StateStore<TimeWindow>& windowState(const TimeWindow& window) override {
    if constexpr (kMerging) throwNoWindowStateOnSessions();
    return windowStore_.bind(keyedState(), &window);
  }
  StateStore<TimeWindow>& globalState() override { return globalStore_.bind(keyedState(), nullptr); }
  SideOutputs* sideOutputs() override { return &this->sideOutputs_; }

  KeySelector keySelector_;
  Assigner assigner_;
  int64_t allowedLateness_;
  int64_t now_ = INT64_MIN;     // processing time: the clock when the last batch came
  int64_t passed_ = INT64_MIN;  // processing time: the last time the clock has passed
  int64_t callbackAt_ = std::numeric_limits<int64_t>::max();  // the earliest callback asked for
  std::priority_queue<Timer, std::vector<Timer>, LaterTimer> timers_;  // heap: those of panes and sessions
  std::unique_ptr<RocksDBTimers> storedTimers_;                         // RocksDB: the timers
  DataOutput timerBytes_;
  std::string timerRest_;
  // The window function's keyed state (ProcessWindowFunction's windowState and
  // globalState), if it has any, and the key it is for while the function runs; on
  // RocksDB also the window contents and sessions (rocksdb_windows.h).
  std::unique_ptr<KeyedStateBackend<K>> store_;
  const K* firingKey_ = nullptr;
  bool keySet_ = false;
  StateStore<TimeWindow> windowStore_{true};
  StateStore<TimeWindow> globalStore_{false};
  SortingDataInput<T, K> sortedInput_;  // batch
};

}  // namespace weir::detail
