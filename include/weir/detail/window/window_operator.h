// Keyed windows: assigns each record to its windows, aggregates it into the (key, window)
// accumulator, fires a window when the watermark passes its end, fires it again for late
// records within the allowed lateness, and drops its state after that. Processing-time
// assigners use the job's clock for both: a record's windows are those of the clock's
// time when its batch arrives, and a window fires when the clock passes its end.
// Sessions merge: a record's window absorbs the key's windows it overlaps or touches.
// Sliding windows are kept in panes that the windows combine when they fire.
// On the heap backend the contents are live objects in the operator's own hash maps,
// which a checkpoint copies out: tumbling windows window by window (each window's
// accumulators by key, and timers per window, as every key's window ends at the same
// time), sliding windows by (key, pane), sessions by key. On RocksDB they are
// keyed state in RocksDB (a ValueState of the accumulator, or a ListState of the records
// for a ProcessWindowFunction, namespaced by the window), so windows may hold more than
// memory. Sessions keep, besides, each key's windows under "_sessions". Both backends
// write the same entries, so either restores the other's checkpoints. The windows'
// timers are on the heap, or on RocksDB in its column "_timers" (timer_queue.h), where
// they also tell which windows exist, so a window costs no memory there. A
// ProcessWindowFunction's own state (windowState, globalState) is on the job's state
// backend.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <queue>

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/detail/state/state_factory.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/time/timer_queue.h"
#include "weir/windows.h"

namespace weir::detail {

// One session window of a key as "_sessions" holds it: the window, the window whose
// namespace holds its contents in "_windows", and whether it fired (the watermark passed
// its end; it fires again only for a late record). On RocksDB a session keeps the
// namespace it started with as it grows and absorbs others, so its contents never move;
// on the heap the two windows are the same.
struct StoredSession {
  TimeWindow window;
  TimeWindow stateWindow;
  bool fired = false;
};
WEIR_STRUCT(StoredSession, window, stateWindow, fired);
// A key's sessions, and the time its timer is armed for (INT64_MAX: none).
struct StoredSessions {
  int64_t armed = std::numeric_limits<int64_t>::max();
  std::vector<StoredSession> windows;
};
WEIR_STRUCT(StoredSessions, armed, windows);

// Whether window function F overrides clear(Context&); if not, its windows need not
// be told when they go.
template <class F>
constexpr bool overridesClear() {
  if constexpr (requires { F::kOverridesClear; }) return F::kOverridesClear;
  else return !std::is_same_v<decltype(&F::clear), decltype(&F::FunctionBase::clear)>;
}

// A policy whose function clears per-window state when a window goes.
template <class Policy>
concept ClearsWindows = Policy::kClears;

// A policy that keeps a window's records (its accumulator is their vector).
template <class Policy>
concept KeepsRecords = Policy::kKeepsRecords;

// What the policies with a ProcessWindowFunction share: its context, and clear().
template <class F>
struct ProcessFunctionPolicy {
  static constexpr bool kClears = overridesClear<F>();
  F fn;
  template <class W>
  static typename F::Context context(const W& window, int64_t watermark, const Clock& clock,
                                     WindowFunctionState<W>* state) {
    return typename F::Context(window, watermark, clock, state);
  }
  template <class W>
  void clear(const W& window, int64_t watermark, const Clock& clock, WindowFunctionState<W>* state) {
    auto ctx = context(window, watermark, clock, state);
    fn.clear(ctx);
  }
};

// Session windows merge, so a window function has no per-window state there (as in Flink).
[[noreturn]] inline void throwNoWindowStateOnSessions() {
  throw Error(ErrorCode::kState,
              "windowState(): session windows merge, so they have no per-window state; use globalState()");
}

// reduce(): the accumulator is the reduced record.
template <class T, class F>
struct ReduceWindowPolicy {
  using Acc = std::optional<T>;
  using Out = T;
  F fn;
  Acc create() { return std::nullopt; }
  void add(Acc& acc, const T& value) { acc = acc ? callReduce(fn, *acc, value) : value; }
  void merge(Acc& into, Acc& from) {
    if (from) add(into, *from);
  }
  template <class K, class W>
  void fire(const K&, const W&, Acc& acc, int64_t, const Clock&, WindowFunctionState<W>*, Collector<T>& out) {
    out.collect(*acc);
  }
};

// aggregate(): an AggregateFunction's accumulator.
template <class T, class A>
struct AggregateWindowPolicy {
  using Acc = typename A::AccumulatorType;
  using Out = typename A::OutputType;
  A fn;
  Acc create() { return fn.createAccumulator(); }
  void add(Acc& acc, const T& value) { acc = fn.add(value, std::move(acc)); }
  void merge(Acc& into, Acc& from) { into = fn.merge(std::move(into), from); }
  template <class K, class W>
  void fire(const K&, const W&, Acc& acc, int64_t, const Clock&, WindowFunctionState<W>*, Collector<Out>& out) {
    out.collect(fn.getResult(acc));
  }
};

// aggregate(agg, processWindowFunction): the accumulator's result is the one element the
// ProcessWindowFunction sees, with the key and the window.
template <class T, class A, class F>
struct AggregateProcessWindowPolicy : ProcessFunctionPolicy<F> {
  using Acc = typename A::AccumulatorType;
  using Out = typename F::OutputType;
  A agg;
  Acc create() { return agg.createAccumulator(); }
  void add(Acc& acc, const T& value) { acc = agg.add(value, std::move(acc)); }
  void merge(Acc& into, Acc& from) { into = agg.merge(std::move(into), from); }
  template <class K, class W>
  void fire(const K& key, const W& window, Acc& acc, int64_t watermark, const Clock& clock,
            WindowFunctionState<W>* state, Collector<Out>& out) {
    typename A::OutputType result = agg.getResult(acc);
    auto ctx = this->context(window, watermark, clock, state);
    this->fn.process(key, ctx, std::span<const typename A::OutputType>(&result, 1), out);
  }
};

// process(): keeps the window's records and hands them to a ProcessWindowFunction.
template <class T, class F>
struct ProcessWindowPolicy : ProcessFunctionPolicy<F> {
  static constexpr bool kKeepsRecords = true;
  using Acc = std::vector<T>;
  using Out = typename F::OutputType;
  Acc create() { return {}; }
  void add(Acc& acc, const T& value) { acc.push_back(value); }
  void merge(Acc& into, Acc& from) {
    into.insert(into.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
  template <class K, class W>
  void fire(const K& key, const W& window, Acc& acc, int64_t watermark, const Clock& clock,
            WindowFunctionState<W>* state, Collector<Out>& out) {
    auto ctx = this->context(window, watermark, clock, state);
    this->fn.process(key, ctx, std::span<const T>(acc), out);
  }
};

// A window subtask's watermark decides which records are late: checkpoints keep each
// subtask's in union operator state, so a restore starts from it rather than from the
// beginning of time and judges replayed records as they were judged.
inline constexpr const char* kWindowWatermarkState = "_watermark";
inline void snapshotWindowWatermark(RuntimeContext& context, int64_t watermark, OperatorSnapshot& out) {
  DataOutput bytes;
  bytes.write(static_cast<int32_t>(context.getIndexOfThisSubtask()));
  bytes.write(watermark);
  out.operatorState.push_back({kWindowWatermarkState, OperatorStateMode::kUnion, {bytes.data()}});
}
// The restored watermark: at the same parallelism a subtask's own, after rescaling the
// smallest (keys from any old subtask may come here); INT64_MIN when there is none.
inline int64_t restoreWindowWatermark(RestoredOperatorState& restored, RuntimeContext& context) {
  const auto* list = restored.operatorList(kWindowWatermarkState);
  if (list == nullptr || list->empty()) return std::numeric_limits<int64_t>::min();
  int64_t smallest = std::numeric_limits<int64_t>::max();
  std::optional<int64_t> own;
  for (const std::string& entry : *list) {
    DataInput in(entry);
    int32_t subtask = in.read<int32_t>();
    int64_t watermark = in.read<int64_t>();
    smallest = std::min(smallest, watermark);
    if (subtask == context.getIndexOfThisSubtask()) own = watermark;
  }
  bool sameParallelism = static_cast<int>(list->size()) == context.getNumberOfParallelSubtasks();
  return sameParallelism && own ? *own : smallest;
}

// What the two window operators (this file's and trigger_window_operator.h's) share:
// the window function in its policy, the watermark, the output buffer, and where late
// records go.
template <class T, class Policy>
class WindowOperatorBase : public OneInputOperator<T, typename Policy::Out> {
 protected:
  using OUT = typename Policy::Out;
  WindowOperatorBase(Policy policy, int lateTag) : policy_(std::move(policy)), lateTag_(lateTag) {}

 public:
  void close() override {
    this->callUser([&] { closeFunction(policy_.fn); });
  }
  void notifyCheckpointComplete(int64_t checkpointId) override {
    this->callUser([&] { notifyFunction(policy_.fn, checkpointId, true); });
  }
  void notifyCheckpointAborted(int64_t checkpointId) override {
    this->callUser([&] { notifyFunction(policy_.fn, checkpointId, false); });
  }
  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    if (tagIndex == lateTag_) late_ = out.get();
    sideOutputs_.add(tagIndex, std::move(out));
  }
  void processIdleness(bool idle) override {
    sideOutputs_.processIdleness(idle);
    this->out_->processIdleness(idle);
  }
  void endInput() override {
    sideOutputs_.endInput();
    this->out_->endInput();
  }

 protected:
  // Event-time windows cannot place records without timestamps.
  void requireTimestamps(size_t records, Timestamps timestamps) const {
    if (timestamps.empty() && records > 0)
      throw OperatorFailure(this->name(), this->context_->getIndexOfThisSubtask(),
                            this->context_->getNumberOfParallelSubtasks(),
                            "event-time windows need timestamps: give the source a WatermarkStrategy with "
                            "withTimestampAssigner");
  }
  Collector<OUT> collector() { return Collector<OUT>(&buffer_, &timestamps_, this->out_, kBatchRecords<OUT>); }
  // In a catch block: drops what the batch buffered and fails as the operator.
  [[noreturn]] void failBatch() {
    buffer_.clear();
    timestamps_.clear();
    this->rethrowAsOperatorFailure();
  }
  void forwardWatermark(int64_t watermark) {
    sideOutputs_.processWatermark(watermark);
    this->out_->processWatermark(watermark);
  }
  // A record too late for all its windows: to the late-data side output, or counted.
  void dropLate(T& record, int64_t timestamp) {
    if (late_) {
      sideOutputs_.setTimestamp(true, timestamp);
      static_cast<SideOutput<T>*>(late_)->collect(record);
    } else {
      this->metrics_->numLateRecordsDropped.fetch_add(1, std::memory_order_relaxed);
    }
  }

  Policy policy_;
  int64_t watermark_ = std::numeric_limits<int64_t>::min();
  SideOutputs sideOutputs_;

 private:
  int lateTag_;
  SideOutputBase* late_ = nullptr;
  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
};

template <class T, class K, class KeySelector, class Assigner, class Policy>
class WindowOperator final : public WindowOperatorBase<T, Policy>,
                             private ProcessingTimeCallback,
                             private WindowFunctionState<TimeWindow> {
  using Base = WindowOperatorBase<T, Policy>;
  using OUT = typename Policy::Out;
  using Base::policy_;
  using Base::sideOutputs_;
  using Base::watermark_;

 public:
  WindowOperator(KeySelector keySelector, Assigner assigner, int64_t allowedLateness, int lateTag, Policy policy)
      : Base(std::move(policy), lateTag), keySelector_(std::move(keySelector)), assigner_(std::move(assigner)),
        allowedLateness_(kProcessingTime ? 0 : allowedLateness) {}

  void open() override {
    // (Types without a Serializer stay on the heap, without checkpoints.)
    if constexpr (Serializable<K> && Serializable<Acc>)
      if (keyedStateInRocksDB(this->context())) store_ = makeKeyedStateBackend<K>(this->context());
    const bool onRocksDB = store_ != nullptr;  // (on the heap the store is made on first use)
    if (auto* restored = this->context().restored()) this->callUser([&] { restore(*restored); });
    if (onRocksDB) {
      if constexpr (KeepsRecords<Policy>)
        contents_ = &listState<TimeWindow>(*store_, ListStateDescriptor<T>(kWindowsState));
      else
        contents_ = &valueState<TimeWindow>(*store_, ValueStateDescriptor<Acc>(kWindowsState));
      contentsWindow_ = dynamic_cast<NamespacedState<TimeWindow>*>(contents_);
      if constexpr (kMerging)
        sessionsState_ = &valueState<VoidNamespace>(*store_, ValueStateDescriptor<StoredSessions>(kSessionsState));
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
    contents_ = nullptr;
    contentsWindow_ = nullptr;
    sessionsState_ = nullptr;
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
      std::vector<OwnedStateEntry> windows, sessions;
      DataOutput key, value;
      auto addWindow = [&](const K& k, const TimeWindow& w, const Acc& acc) {
        key.clear();
        value.clear();
        writeKeyAndWindow(k, w, key);
        encodeContents(acc, value);
        windows.push_back({keyGroup(k), key.data(), value.data()});
      };
      for (const auto& [kw, acc] : state_) addWindow(kw.first, kw.second, acc);
      for (const auto& [w, contents] : windows_)
        for (const auto& [k, acc] : contents.byKey) addWindow(k, w, acc);
      StoredSessions stored;
      for (const auto& [k, keySessions] : sessions_) {
        stored.armed = keySessions.armed;
        stored.windows.clear();
        for (const SessionWindow& s : keySessions.windows) {
          addWindow(k, s.window, s.acc);
          stored.windows.push_back({s.window, s.window, s.fired});
        }
        key.clear();
        value.clear();
        Serializer<K>::serialize(k, key);
        Serializer<StoredSessions>::serialize(stored, value);
        sessions.push_back({keyGroup(k), key.data(), value.data()});
      }
      std::vector<OwnedStateEntry> timers;
      auto addTimer = [&](const Timer& t) {
        key.clear();
        writeTimerTime(t.time, key);
        encodeTimer(t, key);
        timers.push_back({keyGroup(t.key), key.data(), {}});
      };
      for (auto queue = timers_; !queue.empty(); queue.pop()) addTimer(queue.top());
      // A tumbling window's timers are written as each of its keys' own.
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
      // The window function's state, and on RocksDB the windows' contents.
      if (store_) store_->snapshot(checkpointId, out);
      if (contents_ == nullptr) {
        out.keyed[kWindowsState] = std::make_unique<MaterializedSnapshot>(std::move(windows));
        if constexpr (kMerging) out.keyed[kSessionsState] = std::make_unique<MaterializedSnapshot>(std::move(sessions));
      }
      if (!storedTimers_) out.keyed[kTimersState] = std::make_unique<MaterializedSnapshot>(std::move(timers));
    }
    snapshotWindowWatermark(this->context(), watermark_, out);
  }
  void processBatch(std::span<T> records, Timestamps timestamps) override {
    if constexpr (kProcessingTime) now_ = std::max(now_, this->context().clock()->currentTimeMillis());
    else this->requireTimestamps(records.size(), timestamps);
    Collector<OUT> collector = this->collector();
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        K key = std::invoke(keySelector_, records[i]);
        const int64_t time = kProcessingTime ? now_ : timestamps[i];
        bool placed = false;
        if constexpr (kMerging) {
          placed = sessionsState_ != nullptr ? placeInStoredSession(key, records[i], time, collector)
                                             : placeInSession(key, records[i], time, collector);
        } else if constexpr (kPaned) {
          placed = placeInPane(key, records[i], time, collector);
        } else if (contents_ == nullptr) {
          placed = placeInWindows(key, records[i], time, collector);
        } else {
          assigner_.assignWindows(time, [&](const TimeWindow& w) {
            if (isLate(w)) return;
            placed = true;
            const bool created = addToBackend(
                key, w, records[i],
                {Timer{w.maxTimestamp(), true, key, w, false, true}, Timer{w.maxTimestamp(), false, key, w},
                 Timer{cleanupTime(w), true, key, w}});
            afterAdd(key, w, created, collector);
          });
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
    watermark_ = std::max(watermark_, watermark);  // a restored one may be ahead of upstream's first
    if constexpr (!kProcessingTime) fireTimers();
    this->forwardWatermark(watermark);
  }

 private:
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
        if (contents_ == nullptr) fireWindows(collector);
      while (std::optional<Timer> next = takeTimer(currentTime())) {
        const Timer& t = *next;
        if constexpr (kMerging) {
          if (sessionsState_ != nullptr) onStoredSessionTimer(t, collector);
          else onSessionTimer(t, collector);
          continue;
        }
        if constexpr (kPaned) {
          onPaneTimer(t, collector);
          continue;
        }
        // RocksDB: a (key, window)'s own timer.
        if (!t.cleanup || t.firesFirst)
          if (auto acc = backendContents(t.key, t.window)) fireWindow(t.key, t.window, *acc, collector);
        if (t.cleanup) {
          eraseFromBackend(t.key, t.window);
          clearWindow(t.key, t.window);
        }
      }
    } catch (...) {
      releaseKey();
      this->failBatch();
    }
    releaseKey();
    collector.flush();
  }

  struct Timer {
    int64_t time;
    bool cleanup;  // drop the window's state; ordered after its firing at the same time
    K key;
    TimeWindow window;
    bool clears = false;  // paned: the cleanup of a window (not a pane), for the function's clear()
    bool firesFirst = false;  // a cleanup that fires the window first (no allowed lateness)
  };
  // Tumbling windows on the heap: a window's timer, for all its keys at once.
  struct WindowTimer {
    int64_t time;
    bool cleanup;
    TimeWindow window;
    bool firesFirst;
  };
  struct Later {
    template <class Kind>
    bool operator()(const Kind& a, const Kind& b) const {
      return a.time != b.time ? a.time > b.time : a.cleanup > b.cleanup;
    }
  };
  struct StateHash {
    size_t operator()(const std::pair<K, TimeWindow>& s) const {
      return KeyHasher<K>{}(s.first) * 31 + KeyHasher<TimeWindow>{}(s.second);
    }
  };

  using Acc = typename Policy::Acc;
  static constexpr const char* kWindowsState = "_windows";
  static constexpr const char* kSessionsState = "_sessions";
  static constexpr bool kMerging = MergingWindowAssigner<Assigner>;
  static constexpr bool kPaned = PanedWindowAssigner<Assigner>;
  static constexpr bool kProcessingTime = ProcessingTimeWindowAssigner<Assigner>;

  // A tumbling window's contents on the heap: each key's accumulator.
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

  struct SessionWindow {
    TimeWindow window;
    bool fired;  // the watermark passed its end (it fires again only for a late record)
    Acc acc;
  };
  struct KeySessions {
    std::vector<SessionWindow> windows;
    int64_t armed = std::numeric_limits<int64_t>::max();  // the key's timer, if queued
  };

  static void writeKeyAndWindow(const K& key, const TimeWindow& w, DataOutput& out) {
    Serializer<K>::serialize(key, out);
    out.write(w.start);
    out.write(w.end);
  }
  static std::pair<K, TimeWindow> readKeyAndWindow(DataInput& in, int keyGroup, const char* state = kWindowsState) {
    K key = decodeState<K>(in, state, keyGroup);
    TimeWindow w;
    w.start = decodeState<int64_t>(in, state, keyGroup);
    w.end = decodeState<int64_t>(in, state, keyGroup);
    return {std::move(key), w};
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
      if constexpr (kMerging)
        for (const auto& e : restored.takeKeyed(kSessionsState)) restoreSessions(StateEntry{e.keyGroup, e.key, e.value});
      for (const auto& e : restored.takeKeyed(kWindowsState)) restoreWindow(StateEntry{e.keyGroup, e.key, e.value});
      for (const auto& e : restored.takeKeyed(kTimersState)) restoreTimer(StateEntry{e.keyGroup, e.key, e.value});
      if (restored.hasKeyed()) {  // a RocksDB instance's incremental checkpoint, or the function's state
        keyedState().setRestored(restored);
        if constexpr (kMerging) store_->takeRestored(kSessionsState, [&](const StateEntry& e) { restoreSessions(e); });
        store_->takeRestored(kWindowsState, [&](const StateEntry& e) { restoreWindow(e); });
        store_->takeRestored(kTimersState, [&](const StateEntry& e) { restoreTimer(e); });
      }
    }
    if constexpr (kMerging) {
      if (!restoredSessions_.empty())
        throw Error(ErrorCode::kCheckpoint, "operator '" + this->name() + "': state '" + kSessionsState + "' has " +
                                                std::to_string(restoredSessions_.size()) +
                                                " session windows without contents in '" + kWindowsState + "'");
      restoredSessions_ = {};
    }
    for (auto& [key, sessions] : sessions_) arm(key, sessions);
    if constexpr (!kMerging && !kPaned) scheduleRestoredWindows();
  }
  // Heap, tumbling: each restored window's timers. Its keys without a firing timer
  // fired before (see WindowContents::fired). The window fires if any key still has to,
  // or if the restored watermark is before its end (after rescaling it is the smallest
  // of the old subtasks'), where keys that come next must fire.
  void scheduleRestoredWindows() {
    for (auto& [w, contents] : windows_) {
      for (const auto& [k, acc] : contents.byKey)
        if (!restoredFirings_.contains(std::pair<K, TimeWindow>{k, w})) contents.fired.insert(k);
      const bool fires = contents.fired.size() < contents.byKey.size() || !behindWatermark(w);
      if (!fires) contents.fired.clear();
      scheduleWindow(w, fires);
    }
    restoredFirings_ = {};
  }
  // Heap: one restored timer. A key's session timer is armed again from its windows.
  void restoreTimer(const StateEntry& e) {
    if constexpr (kMerging) return;
    Timer t = decodeTimer(checkpointedTimerTime(e, kTimersState), e.key.substr(8), e.keyGroup);
    if constexpr (kPaned) {
      if (!t.cleanup) scheduled_.insert(std::pair<K, TimeWindow>{t.key, t.window});
      if (t.clears) clearing_.insert(std::pair<K, TimeWindow>{t.key, t.window});
      schedule(std::move(t));
    } else if (!t.cleanup || t.firesFirst) {  // tumbling: the window's timers come from its contents
      restoredFirings_.insert(std::pair<K, TimeWindow>{t.key, t.window});
    }
  }
  // One restored "_sessions" entry: a key's windows, whose contents come next.
  void restoreSessions(const StateEntry& e) {
    K key = decodeState<K>(e.key, kSessionsState, e.keyGroup);
    for (StoredSession& s : decodeState<StoredSessions>(e.value, kSessionsState, e.keyGroup).windows)
      restoredSessions_.emplace(std::pair<K, TimeWindow>{key, s.stateWindow}, std::move(s));
  }
  // One restored "_windows" entry, into the heap's windows or sessions.
  void restoreWindow(const StateEntry& e) {
    DataInput in(e.key);
    auto kw = readKeyAndWindow(in, e.keyGroup);
    if constexpr (kMerging) {
      auto session = restoredSessions_.find(kw);
      if (session != restoredSessions_.end()) {
        sessions_[kw.first].windows.push_back(
            {session->second.window, session->second.fired, decodeContents(e.value, e.keyGroup)});
        restoredSessions_.erase(session);
        return;
      }
      throw Error(ErrorCode::kCheckpoint, "operator '" + this->name() + "': state '" + kWindowsState +
                                              "' holds contents of a session that '" + kSessionsState +
                                              "' does not have (key group " + std::to_string(e.keyGroup) + ")");
    } else if constexpr (kPaned) {
      state_.insert_or_assign(std::move(kw), decodeContents(e.value, e.keyGroup));
    } else {
      windows_[kw.second].byKey.insert_or_assign(std::move(kw.first), decodeContents(e.value, e.keyGroup));
    }
  }
  // A window's contents as "_windows" holds them: the accumulator, or the records as a
  // ListState holds a list (each element length-prefixed).
  static void encodeContents(const Acc& acc, DataOutput& out) {
    if constexpr (KeepsRecords<Policy>) writeListElements(acc, out);
    else Serializer<Acc>::serialize(acc, out);
  }
  static Acc decodeContents(std::string_view bytes, int keyGroup) {
    if constexpr (KeepsRecords<Policy>) {
      return readListElements<T>(bytes, kWindowsState, keyGroup);
    } else {
      return decodeState<Acc>(bytes, kWindowsState, keyGroup);
    }
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

  void schedule(Timer timer) {
    if constexpr (kProcessingTime) requestCallback(timer.time);
    if (!storedTimers_) {
      timers_.push(std::move(timer));
      return;
    }
    if constexpr (Serializable<K>) {
      timerBytes_.clear();
      encodeTimer(timer, timerBytes_);
      storedTimers_->add(keyGroupOf(timer.key), timer.time, timerBytes_.data());
    }
  }
  // Takes the earliest timer at or before `upTo`, if any.
  std::optional<Timer> takeTimer(int64_t upTo) {
    if (storedTimers_) {
      int keyGroup;
      int64_t time;
      if (!storedTimers_->pop(upTo, keyGroup, time, timerRest_)) return std::nullopt;
      return decodeTimer(time, timerRest_, keyGroup);
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
    if (!windowTimers_.empty() && (!earliest || windowTimers_.top().time < *earliest))
      earliest = windowTimers_.top().time;
    return earliest;
  }
  // A timer's entry key after its time: its kind (0 fire, 1 cleanup, 2 clear a paned
  // window, 3 fire and clean up), key and window.
  static void encodeTimer(const Timer& t, DataOutput& out) {
    out.write(static_cast<uint8_t>(t.clears ? 2 : !t.cleanup ? 0 : t.firesFirst ? 3 : 1));
    writeKeyAndWindow(t.key, t.window, out);
  }
  Timer decodeTimer(int64_t time, std::string_view rest, int keyGroup) const {
    DataInput in(rest);
    const uint8_t kind = decodeState<uint8_t>(in, kTimersState, keyGroup);
    if (kind > 3)
      throw Error(ErrorCode::kSerialization, stateWhere(kTimersState, keyGroup) + ": a timer of unknown kind " +
                                                 std::to_string(kind));
    auto [key, window] = readKeyAndWindow(in, keyGroup, kTimersState);
    return Timer{time, kind != 0, std::move(key), window, kind == 2, kind == 3};
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

  // Heap, tumbling: `record` goes into the contents of its window (mostly the last
  // record's) under `key`. A new window gets its timers; a window already behind the
  // watermark (late within the allowed lateness) fires again at once for the key.
  bool placeInWindows(const K& key, const T& record, int64_t time, Collector<OUT>& collector) {
    if constexpr (TumblingWindowAssigner<Assigner>)
      if (current_ != nullptr && time >= currentWindow_.start && time < currentWindow_.end) {
        addToWindow(key, currentWindow_, *current_, record, collector);
        return true;
      }
    bool placed = false;
    assigner_.assignWindows(time, [&](const TimeWindow& w) {
      if (isLate(w)) return;
      placed = true;
      auto [it, created] = windows_.try_emplace(w);
      if (created) scheduleWindow(w, !behindWatermark(w));
      current_ = &it->second;
      currentWindow_ = w;
      addToWindow(key, w, it->second, record, collector);
    });
    return placed;
  }
  void addToWindow(const K& key, const TimeWindow& w, WindowContents& contents, const T& record,
                   Collector<OUT>& collector) {
    auto it = contents.byKey.find(key);
    if (it == contents.byKey.end()) it = contents.byKey.emplace(key, policy_.create()).first;
    policy_.add(it->second, record);
    if (behindWatermark(w)) fireWindow(key, w, it->second, collector);
  }
  // Heap, tumbling: window `w`'s timers — a firing at its end (when `fires`) and a
  // cleanup after the allowed lateness, or one timer that does both when there is no
  // allowed lateness (as Flink's two timers of the same time are one).
  void scheduleWindow(const TimeWindow& w, bool fires) {
    const bool firesAtCleanup = cleanupTime(w) == w.maxTimestamp();
    if (fires && !firesAtCleanup) pushWindowTimer({w.maxTimestamp(), false, w, false});
    pushWindowTimer({cleanupTime(w), true, w, fires && firesAtCleanup});
  }
  void pushWindowTimer(const WindowTimer& timer) {
    if constexpr (kProcessingTime) requestCallback(timer.time);
    windowTimers_.push(timer);
  }
  // Heap, tumbling: fires and drops the windows whose timers the current time reached,
  // every key's at once.
  void fireWindows(Collector<OUT>& collector) {
    while (!windowTimers_.empty() && windowTimers_.top().time <= currentTime()) {
      const WindowTimer t = windowTimers_.top();
      windowTimers_.pop();
      auto it = windows_.find(t.window);
      if (it == windows_.end()) continue;
      WindowContents& contents = it->second;
      if (!t.cleanup || t.firesFirst) {
        for (auto& [key, acc] : contents.byKey)
          if (contents.fired.empty() || !contents.fired.contains(key)) fireWindow(key, t.window, acc, collector);
        contents.fired.clear();
      }
      if (t.cleanup) {
        if constexpr (ClearsWindows<Policy>)
          for (auto& [key, acc] : contents.byKey) clearWindow(key, t.window);
        if (current_ == &contents) current_ = nullptr;
        windows_.erase(it);
      }
    }
  }

  // RocksDB, after a record went into window `w` of `key`: as placeInWindows does on
  // the heap, with a timer of each kind per (key, window).
  void afterAdd(const K& key, const TimeWindow& w, bool created, Collector<OUT>& collector) {
    if (behindWatermark(w)) {
      if (auto stored = backendContents(key, w)) fireWindow(key, w, *stored, collector);
    } else if (created && cleanupTime(w) != w.maxTimestamp()) {
      schedule(Timer{w.maxTimestamp(), false, key, w});
    }
    if (created) schedule(Timer{cleanupTime(w), true, key, w, false, cleanupTime(w) == w.maxTimestamp()});
  }

  // Sessions (Flink's MergingWindowSet): the record's window merges with every window of
  // its key it intersects, their contents merged in order of start. Windows of a key
  // never intersect each other, so only the new one can merge, and the merged window is
  // never late unless nothing merged. A session that grows moves its end with every
  // record, so its timers are not queued per window: each key has one timer, armed for
  // the earliest time one of its windows must fire or be dropped.
  bool placeInSession(const K& key, const T& record, int64_t timestamp, Collector<OUT>& collector) {
    TimeWindow w = assigner_.assignWindow(record, timestamp);
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
    if (isLate(merged)) {
      if (windows.empty()) sessions_.erase(entry);
      return false;
    }
    if (intersecting == 0) {
      windows.push_back({merged, false, policy_.create()});
      session = &windows.back();
    } else if (intersecting > 1) {
      std::sort(windows.begin(), windows.end(),
                [](const SessionWindow& a, const SessionWindow& b) { return a.window.start < b.window.start; });
      auto first = std::find_if(windows.begin(), windows.end(), [&](const SessionWindow& s) { return s.window.intersects(w); });
      for (auto s = first + 1; s != windows.end() && s->window.intersects(w); ++s) policy_.merge(first->acc, s->acc);
      windows.erase(first + 1, first + intersecting);
      session = &*first;
    }
    session->window = merged;
    policy_.add(session->acc, record);
    if (behindWatermark(merged)) {  // late within the allowed lateness
      fireWindow(key, merged, session->acc, collector);
      session->fired = true;
    } else {
      session->fired = false;  // it fires (again) when the watermark passes its end
    }
    arm(key, entry->second);
    return true;
  }

  // The key's timer came due: fires its windows the watermark passed, drops those past
  // the allowed lateness, and arms the timer for the next.
  void onSessionTimer(const Timer& t, Collector<OUT>& collector) {
    auto entry = sessions_.find(t.key);
    if (entry == sessions_.end() || entry->second.armed != t.time) return;  // superseded by an earlier one
    auto& windows = entry->second.windows;
    entry->second.armed = std::numeric_limits<int64_t>::max();
    for (SessionWindow& s : windows) {
      if (s.fired || s.window.maxTimestamp() > currentTime()) continue;
      fireWindow(t.key, s.window, s.acc, collector);
      s.fired = true;
    }
    std::erase_if(windows, [&](const SessionWindow& s) {
      if (!expired(s.window)) return false;
      clearWindow(t.key, s.window);
      return true;
    });
    if (windows.empty()) sessions_.erase(entry);
    else arm(t.key, entry->second);
  }

  // Sessions on RocksDB: as placeInSession, with the key's windows in "_sessions" and
  // their contents in "_windows" under each session's state window. A session that grows
  // keeps its state window; one that absorbs others takes their contents into its own.
  bool placeInStoredSession(const K& key, const T& record, int64_t timestamp, Collector<OUT>& collector) {
    TimeWindow w = assigner_.assignWindow(record, timestamp);
    store_->setCurrentKey(key);
    StoredSessions sessions = sessionsState_->value().value_or(StoredSessions{});
    auto& windows = sessions.windows;
    TimeWindow merged = w;
    int intersecting = 0;
    for (const StoredSession& s : windows) {
      if (!s.window.intersects(w)) continue;
      merged = merged.cover(s.window);
      ++intersecting;
    }
    if (isLate(merged)) return false;
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
    std::optional<Acc> acc;  // the contents, when they were read anyway
    selectContents(key, stateWindow);
    if constexpr (KeepsRecords<Policy>) {
      contents_->add(record);
    } else {
      acc = intersecting == 0 ? std::nullopt : contents_->value();
      if (!acc) acc = policy_.create();
      policy_.add(*acc, record);
      contents_->update(*acc);
    }
    session->fired = behindWatermark(merged);  // late within the allowed lateness: fires again at once
    if (session->fired) {
      if constexpr (KeepsRecords<Policy>) acc = contents_->get();
      fireWindow(key, merged, *acc, collector);
    }
    arm(key, sessions);
    store_->setCurrentKey(key);
    sessionsState_->update(std::move(sessions));
    return true;
  }

  // Sessions on RocksDB: as onSessionTimer.
  void onStoredSessionTimer(const Timer& t, Collector<OUT>& collector) {
    store_->setCurrentKey(t.key);
    std::optional<StoredSessions> stored = sessionsState_->value();
    if (!stored || stored->armed != t.time) return;  // superseded by an earlier one
    StoredSessions sessions = std::move(*stored);
    sessions.armed = std::numeric_limits<int64_t>::max();
    for (StoredSession& s : sessions.windows) {
      if (s.fired || s.window.maxTimestamp() > currentTime()) continue;
      selectContents(t.key, s.stateWindow);
      std::optional<Acc> acc;
      if constexpr (KeepsRecords<Policy>) acc = contents_->get();
      else acc = contents_->value();
      if (acc) fireWindow(t.key, s.window, *acc, collector);
      s.fired = true;
    }
    std::erase_if(sessions.windows, [&](const StoredSession& s) {
      if (!expired(s.window)) return false;
      selectContents(t.key, s.stateWindow);
      contents_->clear();
      clearWindow(t.key, s.window);
      return true;
    });
    store_->setCurrentKey(t.key);
    if (sessions.windows.empty()) {
      sessionsState_->clear();
      return;
    }
    arm(t.key, sessions);  // (leaves the store's key alone)
    sessionsState_->update(std::move(sessions));
  }

  // Sessions on RocksDB: moves the contents under state window `from` into those under
  // `into` (the earlier session's), as the heap merges them.
  void mergeStoredContents(const K& key, const TimeWindow& into, const TimeWindow& from) {
    selectContents(key, from);
    if constexpr (KeepsRecords<Policy>) {
      std::vector<T> records = contents_->get();
      contents_->clear();
      selectContents(key, into);
      contents_->addAll(std::move(records));
    } else {
      std::optional<Acc> other = contents_->value();
      contents_->clear();
      if (!other) return;
      selectContents(key, into);
      Acc acc = contents_->value().value_or(policy_.create());
      policy_.merge(acc, *other);
      contents_->update(std::move(acc));
    }
  }

  // Sliding windows in panes: the record goes into its one pane. A new pane queues the
  // firing timer of each of its windows not queued yet, and a cleanup timer for when its
  // last window is past the allowed lateness; a window behind the watermark (a late
  // record within the lateness) fires again at once.
  bool placeInPane(const K& key, const T& record, int64_t timestamp, Collector<OUT>& collector) {
    if (timestamp < pane_.start || timestamp >= pane_.end) {  // records mostly come in time order
      pane_ = assigner_.paneOf(timestamp);
      paneWindows_.clear();
      assigner_.assignWindows(pane_.start, [&](const TimeWindow& w) { paneWindows_.push_back(w); });
    }
    const TimeWindow pane = pane_;
    if (isLate(paneWindows_.front())) return false;  // its last window is gone: so are the others
    bool created;
    if (contents_ != nullptr) {
      created = addToBackend(key, pane, record, {Timer{cleanupTime(paneWindows_.front()), true, key, pane}});
    } else {
      auto it = state_.find(std::pair<K, TimeWindow>{key, pane});
      created = it == state_.end();
      if (created) it = state_.emplace(std::pair<K, TimeWindow>{key, pane}, policy_.create()).first;
      policy_.add(it->second, record);
    }
    if (!created && !behindWatermark(paneWindows_.back())) return true;  // the common case
    for (const TimeWindow& w : paneWindows_) {
      if (isLate(w)) continue;
      if (behindWatermark(w)) firePanes(key, w, collector);
      else if (created && (storedTimers_ || scheduled_.insert(std::pair<K, TimeWindow>{key, w}).second))
        schedule(Timer{w.maxTimestamp(), false, key, w});
      if constexpr (ClearsWindows<Policy>)
        if (created && (storedTimers_ || clearing_.insert(std::pair<K, TimeWindow>{key, w}).second))
          schedule(Timer{cleanupTime(w), true, key, w, true});
    }
    if (created)
      schedule(Timer{cleanupTime(paneWindows_.front()), true, key, pane});
    return true;
  }

  void onPaneTimer(const Timer& t, Collector<OUT>& collector) {
    if (t.clears) {
      clearing_.erase(std::pair<K, TimeWindow>{t.key, t.window});
      clearWindow(t.key, t.window);
      return;
    }
    if (t.cleanup) {
      if (contents_ != nullptr) eraseFromBackend(t.key, t.window);
      else state_.erase(std::pair<K, TimeWindow>{t.key, t.window});
      return;
    }
    scheduled_.erase(std::pair<K, TimeWindow>{t.key, t.window});
    firePanes(t.key, t.window, collector);
  }

  // Fires window `w` of `key` with its panes' contents combined, oldest first.
  void firePanes(const K& key, const TimeWindow& w, Collector<OUT>& collector) {
    Acc acc = policy_.create();
    bool any = false;
    for (__int128 start = w.start; start < w.end;) {
      TimeWindow pane = assigner_.paneOf(static_cast<int64_t>(start));
      if (contents_ != nullptr) {
        if (auto stored = backendContents(key, pane)) {
          policy_.merge(acc, *stored);
          any = true;
        }
      } else if (auto it = state_.find(std::pair<K, TimeWindow>{key, pane}); it != state_.end()) {
        Acc copy = it->second;  // merge may consume its second argument; the pane lives on
        policy_.merge(acc, copy);
        any = true;
      }
      start = static_cast<__int128>(pane.end) + (pane.end == std::numeric_limits<int64_t>::max() ? 1 : 0);
    }
    if (!any) return;
    fireWindow(key, w, acc, collector);
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

  // WindowFunctionState: the function's keyed state, made when first asked for (most
  // window functions have none, and a RocksDB instance is not free).
  KeyedStateBackend<K>& keyedState() {
    if (!store_) store_ = makeKeyedStateBackend<K>(this->context());
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

  // RocksDB: adds `record` to the contents of (key, w) (a window or a pane); true when
  // it made them. A list is appended to without reading it: it is new unless one of
  // `timersOfW` — those that exist while it does — is queued. (All of them, so that a
  // restore with another allowed lateness does not take a window for new.)
  bool addToBackend(const K& key, const TimeWindow& w, const T& record, std::initializer_list<Timer> timersOfW) {
    selectContents(key, w);
    if constexpr (KeepsRecords<Policy>) {
      contents_->add(record);
      return std::none_of(timersOfW.begin(), timersOfW.end(), [&](const Timer& t) {
        timerBytes_.clear();
        encodeTimer(t, timerBytes_);
        return storedTimers_->contains(keyGroupOf(key), t.time, timerBytes_.data());
      });
    } else {
      std::optional<Acc> acc = contents_->value();
      const bool created = !acc;
      if (created) acc = policy_.create();
      policy_.add(*acc, record);
      contents_->update(std::move(*acc));
      return created;
    }
  }
  // RocksDB: the contents of (key, w), if it has any.
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
  // RocksDB: drops the contents of (key, w), whose cleanup timer came.
  void eraseFromBackend(const K& key, const TimeWindow& w) {
    selectContents(key, w);
    contents_->clear();
  }
  // `key` must live until releaseKey() (the store keeps a pointer to it).
  void selectContents(const K& key, const TimeWindow& w) {
    store_->setCurrentKey(key);
    contentsWindow_->setCurrentNamespace(w);
  }
  void releaseKey() {
    if (contents_ != nullptr) store_->clearCurrentKey();
  }

  // Queues the key's timer for its next firing or cleanup, unless one comes earlier.
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

  KeySelector keySelector_;
  Assigner assigner_;
  int64_t allowedLateness_;
  int64_t now_ = INT64_MIN;     // processing time: the clock when the last batch came
  int64_t passed_ = INT64_MIN;  // processing time: the last time the clock has passed
  int64_t callbackAt_ = std::numeric_limits<int64_t>::max();  // the earliest callback asked for
  // Paned assigners on the heap: the contents of each (key, pane).
  absl::flat_hash_map<std::pair<K, TimeWindow>, Acc, StateHash> state_;
  // Tumbling on the heap: each window's contents and timers, and the last record's window.
  std::map<TimeWindow, WindowContents, WindowOrder> windows_;
  std::priority_queue<WindowTimer, std::vector<WindowTimer>, Later> windowTimers_;
  WindowContents* current_ = nullptr;
  TimeWindow currentWindow_;
  // While a heap restore reads them: the (key, window)s with a firing timer.
  absl::flat_hash_set<std::pair<K, TimeWindow>, StateHash> restoredFirings_;
  // Merging assigners: each key's live windows and their contents (state_ stays empty).
  absl::flat_hash_map<K, KeySessions, KeyHasher<K>> sessions_;
  // While a heap restore reads them: the sessions "_sessions" listed, by the window
  // holding their contents, until "_windows" gives those.
  absl::flat_hash_map<std::pair<K, TimeWindow>, StoredSession, StateHash> restoredSessions_;
  // Paned on the heap: windows whose firing timer is queued (RocksDB's timers are one of
  // each anyway).
  absl::flat_hash_set<std::pair<K, TimeWindow>, StateHash> scheduled_;
  // Paned, with a function that clears: windows whose clear timer is queued.
  absl::flat_hash_set<std::pair<K, TimeWindow>, StateHash> clearing_;
  TimeWindow pane_;                      // the pane of the last record,
  std::vector<TimeWindow> paneWindows_;  // and its windows, latest first
  std::priority_queue<Timer, std::vector<Timer>, Later> timers_;  // heap: those of panes and sessions
  std::unique_ptr<RocksDBTimers> storedTimers_;                    // RocksDB: the timers
  DataOutput timerBytes_;
  std::string timerRest_;
  // RocksDB: the contents of each (key, window) — or (key, pane), or session — in the
  // store.
  std::conditional_t<KeepsRecords<Policy>, ListState<T>, ValueState<Acc>>* contents_ = nullptr;
  NamespacedState<TimeWindow>* contentsWindow_ = nullptr;
  ValueState<StoredSessions>* sessionsState_ = nullptr;  // RocksDB, sessions: each key's windows
  // The window function's keyed state (ProcessWindowFunction's windowState and
  // globalState), if it has any, and the key it is for while the function runs.
  std::unique_ptr<KeyedStateBackend<K>> store_;
  const K* firingKey_ = nullptr;
  bool keySet_ = false;
  StateStore<TimeWindow> windowStore_{true};
  StateStore<TimeWindow> globalStore_{false};
};

}  // namespace weir::detail
