// Keyed windows fired by a trigger, optionally with an evictor (Flink's WindowOperator
// and EvictingWindowOperator): the path taken by GlobalWindows, .trigger(...) and
// .evictor(...). The windows without either take the faster WindowOperator.
//
// Everything lives on the job's state backend, scoped to (key, window): the window's
// contents (one accumulator, or the records with their timestamps when an evictor or a
// ProcessWindowFunction needs them all) and the trigger's own state. Timers are one per
// (key, window, time) in each time domain, checkpointed per key group. A window's state
// is cleared when the time passes its end plus the allowed lateness (never for
// GlobalWindows), after the trigger saw that time. Session windows merge as Flink's do:
// the key's windows and the namespace each keeps its contents in are keyed state too
// (MergingWindowSet), and the trigger's onMerge sets up the merged window. In a batch
// job the input comes grouped by key (SortingDataInput) and each key's timers fire once
// its records are done, after which its state is dropped (docs/batch.md).
#pragma once

#include <type_traits>

#include "weir/detail/operators/sorting_data_input.h"
#include "weir/detail/window/merging_window_set.h"
#include "weir/detail/state/state_factory.h"
#include "weir/detail/time/timer_queue.h"
#include "weir/detail/window/window_operator_base.h"
#include "weir/evictor.h"
#include "weir/trigger.h"

namespace weir::detail {

// The trigger of windows the user gave none: the assigner's own (EventTimeTrigger,
// ProcessingTimeTrigger, or NeverTrigger for GlobalWindows).
struct DefaultTrigger {};
struct NoEvictor {};

template <class Assigner>
auto defaultTriggerOf() {
  if constexpr (EventTimeWindowAssigner<Assigner>) return EventTimeTrigger::create();
  else if constexpr (ProcessingTimeWindowAssigner<Assigner>) return ProcessingTimeTrigger::create();
  else return NeverTrigger{};
}

template <class T, class K, class KeySelector, class Assigner, class Tr, class Ev, class Policy>
class TriggerWindowOperator final : public WindowOperatorBase<T, Policy>,
                                    private ProcessingTimeCallback,
                                    private OnMergeContext<typename Assigner::WindowType>,
                                    private WindowFunctionState<typename Assigner::WindowType> {
  using Base = WindowOperatorBase<T, Policy>;
  using Base::policy_;
  using Base::watermark_;
  using W = typename Assigner::WindowType;
  using OUT = typename Policy::Out;
  using Acc = typename Policy::Acc;
  using Element = TimestampedValue<T>;
  static constexpr bool kEvicting = !std::is_same_v<Ev, NoEvictor>;
  // The records themselves are kept when an evictor or the window function needs them.
  static constexpr bool kKeepsRecords = kEvicting || KeepsRecords<Policy>;
  using Stored = std::conditional_t<kKeepsRecords, Element, Acc>;
  static constexpr bool kEventTime = EventTimeWindowAssigner<Assigner>;
  static constexpr bool kProcessingTime = ProcessingTimeWindowAssigner<Assigner>;
  static constexpr bool kMerging = MergingWindowAssigner<Assigner>;
  static constexpr const char* kContentsState = "_window_contents";
  static constexpr const char* kMergingWindowsState = "_merging_windows";
  // What the contents' accumulator takes: a record, or (merging) another accumulator.
  struct ContentsInput {
    const T* record;
    Acc* acc;
  };

 public:
  TriggerWindowOperator(KeySelector keySelector, Assigner assigner, Tr trigger, Ev evictor, int64_t allowedLateness,
                        int lateTag, Policy policy)
      : Base(std::move(policy), lateTag), keySelector_(std::move(keySelector)), assigner_(std::move(assigner)),
        trigger_(std::move(trigger)), evictor_(std::move(evictor)), allowedLateness_(kEventTime ? allowedLateness : 0) {}

  std::string batchUnsupportedReason() const override { return kProcessingTime ? kProcessingTimeWindowsInBatch : ""; }

  void open() override {
    this->registerLateRecordsMetric();
    RuntimeContext& context = this->context();
    this->callUser([&] {
      store_ = sortedInput_.open(context) ? makeBatchKeyedStateBackend<K>(context) : makeKeyedStateBackend<K>(context);
      if (auto* restored = context.restored()) {
        watermark_ = restoreWindowWatermark(*restored, context);
        store_->setRestored(*restored);
      }
      const KeyGroupRange range = computeKeyGroupRangeForOperatorIndex(
          context.getMaxNumberOfParallelSubtasks(), context.getNumberOfParallelSubtasks(), context.getIndexOfThisSubtask());
      auto keyGroupOf = [maxParallelism = context.getMaxNumberOfParallelSubtasks()](const std::pair<K, W>& kw) {
        return assignToKeyGroup(KeyHash<K>{}(kw.first), maxParallelism);
      };
      eventTimers_.open(*store_, kTimersState, range, keyGroupOf);
      processingTimers_.open(*store_, kProcessingTimersState, range, keyGroupOf);
      if (auto next = processingTimers_.earliest()) requestCallback(*next);
      if constexpr (kKeepsRecords) {
        contents_ = &listState<W>(*store_, ListStateDescriptor<Element>(kContentsState));
      } else {
        contents_ = &aggregatingState<W>(*store_, AggregatingStateDescriptor<ContentsInput, Acc, Acc>(
                                                      kContentsState, std::make_shared<PolicyAggregate>(&policy_)));
      }
      contentsWindow_ = dynamic_cast<NamespacedState<W>*>(contents_);
      if constexpr (kMerging)
        mergingWindows_ = &valueState<VoidNamespace>(*store_, ValueStateDescriptor<MergingWindowSet::Mapping>(
                                                                   kMergingWindowsState));
      openFunction(policy_.fn, this->context_);
    });
  }
  void close() override {
    Base::close();
    this->forgetStates();
    contents_ = nullptr;
    mergingWindows_ = nullptr;
    eventTimers_.close();
    processingTimers_.close();
    store_.reset();
  }

  std::string checkpointUnsupportedReason() const override {
    if constexpr (!Serializable<K> || !Serializable<W> || !Serializable<Stored>)
      return "its key type " + demangledTypeName(typeid(K)) + ", window type " + demangledTypeName(typeid(W)) +
             " or window contents " + demangledTypeName(typeid(Stored)) +
             " have no weir::Serializer, which checkpoints need";
    return "";
  }
  // Window contents and trigger state from the backend, the timers, the watermark.
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    this->callUser([&] { snapshotFunction(policy_.fn, checkpointId, timestamp); });
    StreamOperator::snapshotState(checkpointId, timestamp, out);
    store_->snapshot(checkpointId, out);
    eventTimers_.snapshot(out);
    processingTimers_.snapshot(out);
    snapshotWindowWatermark(this->context(), watermark_, out);
  }
  void processBatch(std::span<T> records, Timestamps timestamps) override {
    if constexpr (kProcessingTime) now_ = std::max(now_, this->context().clock()->currentTimeMillis());
    if constexpr (kEventTime) this->requireTimestamps(records.size(), timestamps);
    if constexpr (kSortable<T, K>) {
      if (sortedInput_.buffering()) {  // batch: processed by key at the end
        this->callUser([&] { sortedInput_.add(records, timestamps, [&](T& r) { return std::invoke(keySelector_, r); }); });
        return;
      }
    }
    Collector<OUT> collector = this->collector();
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        // Flink hands triggers INT64_MIN for a record without a timestamp.
        const int64_t timestamp = timestamps.empty() ? std::numeric_limits<int64_t>::min() : timestamps[i];
        key_ = std::invoke(keySelector_, records[i]);
        store_->setCurrentKey(key_);
        const int64_t time = kProcessingTime ? now_ : timestamp;
        bool placed;
        if constexpr (kMerging) {
          placed = placeMerging(records[i], time, timestamp, !timestamps.empty(), collector);
        } else {
          placed = false;
          windows_.clear();
          assigner_.assignWindows(time, [&](const W& w) { windows_.push_back(w); });
          for (const W& w : windows_) {
            if (isLate(w)) continue;
            placed = true;
            setWindow(w, w);
            place(records[i], timestamp, !timestamps.empty(), collector);
          }
        }
        if (!placed) this->dropLate(records[i], timestamp);
      }
    } catch (...) {
      store_->clearCurrentKey();
      this->failBatch();
    }
    store_->clearCurrentKey();
    collector.flush();
    this->sideOutputs_.flush();
  }

  void processWatermark(int64_t watermark) override {
    if constexpr (kSortable<T, K>) {
      if (watermark == kMaxWatermark && sortedInput_.buffering()) processSortedInput();
    }
    watermark_ = std::max(watermark_, watermark);  // a restored one may be ahead of upstream's first
    if (watermark == kMaxWatermark && this->context().isBatch()) fireAtEndOfTime();
    else fireTimers(eventTimers_, watermark_, false);
    this->forwardWatermark(watermark);
  }
  void endInput() override {
    if (sortedInput_.buffering()) processWatermark(kMaxWatermark);  // the input ended without it
    Base::endInput();
  }

 private:
  // Batch: the sorted input, one key at a time. Once a key's records are in its windows
  // its timers fire, the event-time ones with the watermark at the end of time, then
  // its processing-time ones; then its state goes and the next key starts again with no
  // watermark.
  void processSortedInput() {
    sortedInput_.drain([&](std::span<T> records, Timestamps timestamps) { processBatch(records, timestamps); },
                       [&](const K& key) {
                         watermark_ = kMaxWatermark;
                         fireAtEndOfTime();
                         endOfTime_ = false;
                         store_->dropStateOf(key);
                         watermark_ = kMinWatermark;
                       });
  }
  // Batch: every timer left fires (docs/batch.md).
  void fireAtEndOfTime() {
    detail::fireAtEndOfTime(endOfTime_, eventTimers_, [&](bool processingTime) {
      fireTimers(processingTime ? processingTimers_ : eventTimers_, kMaxWatermark, processingTime);
    });
  }

  struct KeyWindowHash {
    size_t operator()(const std::pair<K, W>& kw) const { return KeyHasher<K>{}(kw.first) * 31 + KeyHasher<W>{}(kw.second); }
  };
  using Timers = TimerQueue<std::pair<K, W>, KeyWindowHash>;

  // ProcessingTimeCallback: the clock passed `time`.
  void onProcessingTime(int64_t time) override {
    if (time < callbackAt_) return;  // superseded by an earlier callback: nothing is due
    callbackAt_ = std::numeric_limits<int64_t>::max();
    fireTimers(processingTimers_, time, true);
    if (auto next = processingTimers_.earliest()) requestCallback(*next);
  }
  // Asks the subtask to call onProcessingTime at `time`, unless it will call earlier: one
  // callback for all windows' timers, not one per timer.
  void requestCallback(int64_t time) {
    if (time >= callbackAt_) return;
    callbackAt_ = time;
    this->context().processingTimeService().registerTimer(time, static_cast<ProcessingTimeCallback*>(this));
  }

  // TriggerContext, for the current key and window.
  int64_t getCurrentProcessingTime() const override { return this->context_->clock()->currentTimeMillis(); }
  int64_t getCurrentWatermark() const override { return watermark_; }
  void registerEventTimeTimer(int64_t time) override { eventTimers_.add({key_, window_}, time); }
  void registerProcessingTimeTimer(int64_t time) override {
    if (endOfTime_) return;
    // Batch: at the end of the input.
    if (processingTimers_.add({key_, window_}, time) && !this->context().isBatch()) requestCallback(time);
  }
  void deleteEventTimeTimer(int64_t time) override { eventTimers_.remove({key_, window_}, time); }
  void deleteProcessingTimeTimer(int64_t time) override { processingTimers_.remove({key_, window_}, time); }
  KeyedStateBackendBase& windowStore() override { return *store_; }
  const W& currentWindow() const override { return window_; }
  std::span<const W> mergedWindows() const override { return merged_; }

  // WindowFunctionState, for the current key.
  StateStore<W>& windowState(const W& window) override {
    if constexpr (kMerging) throwNoWindowStateOnSessions();
    return windowStore_.bind(*store_, &window);
  }
  StateStore<W>& globalState() override { return globalStore_.bind(*store_, nullptr); }
  SideOutputs* sideOutputs() override { return &this->sideOutputs_; }

  // Makes `w` the current window, its contents kept under `stateWindow` (itself unless
  // sessions merged).
  void setWindow(const W& w, const W& stateWindow) {
    window_ = w;
    contentsWindow_->setCurrentNamespace(stateWindow);
  }

  // Adds the record to the current window and asks the trigger.
  void place(const T& record, int64_t timestamp, bool timestamped, Collector<OUT>& collector) {
    add(record, timestamp, timestamped);
    TriggerResult result = trigger_.onElement(record, timestamp, window_, *this);
    act(result, collector);
    registerCleanupTimer(window_);
  }

  // Sessions: the record's window joins the key's windows (merging those it touches,
  // their trigger state and contents with them), then takes the record like any window.
  bool placeMerging(const T& record, int64_t time, int64_t timestamp, bool timestamped, Collector<OUT>& collector)
    requires kMerging
  {
    sessions_.load(*mergingWindows_);
    W actual = sessions_.addWindow(
        assigner_.assignWindow(record, time),
        [&](const W& merged, std::span<const W> mergedWindows, const W& stateWindow, std::span<const W> mergedStates) {
          window_ = merged;
          merged_ = mergedWindows;
          trigger_.onMerge(merged, static_cast<OnMergeContext<W>&>(*this));
          merged_ = {};
          for (const W& m : mergedWindows) {
            window_ = m;
            trigger_.clear(m, *this);
            deleteCleanupTimer(m);
          }
          mergeContents(stateWindow, mergedStates);
        });
    bool placed = !isLate(actual);
    if (placed) {
      setWindow(actual, *sessions_.stateWindowOf(actual));
      place(record, timestamp, timestamped, collector);
    } else {
      sessions_.retire(actual);  // a new window alone, behind the watermark
    }
    sessions_.persist();
    return placed;
  }

  // Moves the contents kept under `sources` into `target`'s.
  void mergeContents(const W& target, std::span<const W> sources) {
    for (const W& source : sources) {
      contentsWindow_->setCurrentNamespace(source);
      auto contents = contents_->get();
      contents_->clear();
      contentsWindow_->setCurrentNamespace(target);
      if constexpr (kKeepsRecords) contents_->addAll(std::move(contents));
      else if (contents) contents_->add(ContentsInput{nullptr, &*contents});
    }
  }

  // When a window's state goes: its end plus the allowed lateness in its time domain;
  // never for a window without end.
  int64_t cleanupTime(const W& w) const {
    if (w.maxTimestamp() == std::numeric_limits<int64_t>::max()) return w.maxTimestamp();
    return saturatingAdd(w.maxTimestamp(), allowedLateness_);
  }
  bool isLate(const W& w) const {
    return kEventTime && w.maxTimestamp() != std::numeric_limits<int64_t>::max() && cleanupTime(w) <= watermark_;
  }
  void registerCleanupTimer(const W& w) {
    if (w.maxTimestamp() == std::numeric_limits<int64_t>::max()) return;
    if constexpr (kEventTime) registerEventTimeTimer(cleanupTime(w));
    else if constexpr (kProcessingTime) registerProcessingTimeTimer(cleanupTime(w));
  }
  void deleteCleanupTimer(const W& w) {
    if (w.maxTimestamp() == std::numeric_limits<int64_t>::max()) return;
    if constexpr (kEventTime) eventTimers_.remove({key_, w}, cleanupTime(w));
    else if constexpr (kProcessingTime) processingTimers_.remove({key_, w}, cleanupTime(w));
  }

  void add(const T& record, int64_t timestamp, bool timestamped) {
    if constexpr (kKeepsRecords) {
      contents_->add(Element{record, timestamp, timestamped});
    } else {
      contents_->add(ContentsInput{&record, nullptr});  // in place on the heap
    }
  }

  void act(TriggerResult result, Collector<OUT>& collector) {
    if (isFire(result)) fire(collector);
    if (isPurge(result)) contents_->clear();
  }

  // Hands the current window's contents to the window function; with an evictor, what
  // it leaves stays in the window. A window with nothing (left) in it emits nothing.
  void fire(Collector<OUT>& collector) {
    const Clock& clock = *this->context().clock();
    collector.setTimestamp(true, window_.maxTimestamp());
    if constexpr (kKeepsRecords) {
      std::vector<Element> elements = contents_->get();
      if (elements.empty()) return;
      const size_t before = elements.size();
      EvictorContext ctx{clock.currentTimeMillis(), watermark_};
      if constexpr (kEvicting) evictor_.evictBefore(elements, window_, ctx);
      if (!elements.empty()) {
        Acc acc = policy_.create();
        for (const Element& e : elements) policy_.add(acc, e.value);
        policy_.fire(key_, window_, acc, watermark_, clock, this, collector);
      }
      if constexpr (kEvicting) {
        evictor_.evictAfter(elements, window_, ctx);
        if (elements.size() != before) contents_->update(std::move(elements));
      }
    } else {
      if (std::optional<Acc> acc = contents_->get())
        policy_.fire(key_, window_, *acc, watermark_, clock, this, collector);
    }
  }

  // Fires the timers of `timers` up to `upTo` through the trigger, and clears the
  // windows whose cleanup time it is.
  void fireTimers(Timers& timers, int64_t upTo, bool processingTime) {
    Collector<OUT> collector = this->collector();
    try {
      std::pair<K, W> kw;
      int64_t time;
      while (timers.pop(upTo, kw, time)) {
        key_ = std::move(kw.first);
        store_->setCurrentKey(key_);
        if constexpr (kMerging) {
          sessions_.load(*mergingWindows_);
          const W* stateWindow = sessions_.stateWindowOf(kw.second);
          if (stateWindow == nullptr) continue;  // the window merged away; its trigger left the timer
          setWindow(kw.second, *stateWindow);
        } else {
          setWindow(kw.second, kw.second);
        }
        TriggerResult result = processingTime ? trigger_.onProcessingTime(time, window_, *this)
                                              : trigger_.onEventTime(time, window_, *this);
        act(result, collector);
        const bool cleanupDomain = processingTime ? kProcessingTime : kEventTime;
        const bool cleanup = cleanupDomain && time == cleanupTime(window_);
        // A trigger that deleted a timer at the cleanup time (one per key, window and
        // time) deleted the cleanup timer with it: the window still goes then.
        if (!cleanup) registerCleanupTimer(window_);
        if (cleanup) {
          contents_->clear();
          trigger_.clear(window_, *this);
          if constexpr (ClearsWindows<Policy>) policy_.clear(window_, watermark_, *this->context().clock(), this);
          if constexpr (kMerging) {
            sessions_.retire(window_);
            sessions_.persist();
          }
        }
      }
    } catch (...) {
      store_->clearCurrentKey();
      this->failBatch();
    }
    store_->clearCurrentKey();
    collector.flush();
    this->sideOutputs_.flush();  // what window functions emitted to side outputs goes now too
  }

  KeySelector keySelector_;
  Assigner assigner_;
  Tr trigger_;
  [[no_unique_address]] Ev evictor_;
  int64_t allowedLateness_;
  std::unique_ptr<KeyedStateBackend<K>> store_;
  // The window function's policy as an AggregateFunction: the contents' accumulator.
  class PolicyAggregate final : public AggregateFunction<ContentsInput, Acc, Acc> {
   public:
    explicit PolicyAggregate(Policy* policy) : policy_(policy) {}
    Acc createAccumulator() override { return policy_->create(); }
    Acc add(const ContentsInput& in, Acc acc) override {
      if (in.record != nullptr) policy_->add(acc, *in.record);
      else policy_->merge(acc, *in.acc);
      return acc;
    }
    Acc getResult(const Acc& acc) override { return acc; }
    Acc merge(Acc a, const Acc& b) override {
      Acc from = b;
      policy_->merge(a, from);
      return a;
    }

   private:
    Policy* policy_;
  };
  std::conditional_t<kKeepsRecords, ListState<Element>, AggregatingState<ContentsInput, Acc>>* contents_ = nullptr;
  NamespacedState<W>* contentsWindow_ = nullptr;
  ValueState<MergingWindowSet::Mapping>* mergingWindows_ = nullptr;  // sessions: the key's windows,
  MergingWindowSet sessions_;                                        // as last loaded
  std::span<const W> merged_;  // during onMerge: the windows merged
  StateStore<W> windowStore_{true};    // the window function's state: per window,
  StateStore<W> globalStore_{false};  // and per key
  K key_{};     // the current key,
  W window_{};  // and window
  std::vector<W> windows_;  // the current record's
  Timers eventTimers_;
  Timers processingTimers_;
  int64_t now_ = std::numeric_limits<int64_t>::min();  // processing time: the clock when the last batch came
  int64_t callbackAt_ = std::numeric_limits<int64_t>::max();  // the earliest callback asked for
  bool endOfTime_ = false;  // batch: the processing-time timers fired
  SortingDataInput<T, K> sortedInput_;  // batch
};

}  // namespace weir::detail
