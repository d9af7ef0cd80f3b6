// Triggers: when a window's contents are handed to the window function, and when they
// are thrown away (Flink's Trigger). A trigger is asked for every record added to a
// window and whenever one of the timers it registered for that window comes due; it
// answers CONTINUE, FIRE, PURGE or FIRE_AND_PURGE.
//
// A trigger is a copyable object with these member functions (derive from Trigger<T, W>
// to have the compiler check them, or write them as templates, as the built-in ones do):
//   TriggerResult onElement(const T& element, int64_t timestamp, const W& window, TriggerContext<W>& ctx)
//   TriggerResult onEventTime(int64_t time, const W& window, TriggerContext<W>& ctx)
//   TriggerResult onProcessingTime(int64_t time, const W& window, TriggerContext<W>& ctx)
//   void clear(const W& window, TriggerContext<W>& ctx)   // delete its timers and state
// Its own per-window state comes from ctx.getPartitionedState(descriptor), scoped to the
// key and window it is called for; ask for it in each call rather than keeping it.
// On session (merging) windows a trigger also needs
//   void onMerge(const W& merged, OnMergeContext<W>& ctx)
// called when windows merged into `merged`: it sets the timers the merged window needs
// and combines its state with ctx.mergePartitionedState(descriptor). The windows merged
// away are clear()ed after it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "weir/detail/state/scoped_states.h"
#include "weir/detail/state/state_factory.h"
#include "weir/error.h"
#include "weir/state.h"
#include "weir/state_descriptor.h"
#include "weir/windows.h"

namespace weir {

enum class TriggerResult { CONTINUE, FIRE, PURGE, FIRE_AND_PURGE };

inline bool isFire(TriggerResult r) { return r == TriggerResult::FIRE || r == TriggerResult::FIRE_AND_PURGE; }
inline bool isPurge(TriggerResult r) { return r == TriggerResult::PURGE || r == TriggerResult::FIRE_AND_PURGE; }

// What a trigger may do for the (key, window) it is called for.
template <class W>
class TriggerContext {
 public:
  virtual ~TriggerContext() = default;
  virtual int64_t getCurrentProcessingTime() const = 0;
  virtual int64_t getCurrentWatermark() const = 0;
  // One timer per (key, window, time): registering it again does nothing.
  virtual void registerEventTimeTimer(int64_t time) = 0;
  virtual void registerProcessingTimeTimer(int64_t time) = 0;
  virtual void deleteEventTimeTimer(int64_t time) = 0;
  virtual void deleteProcessingTimeTimer(int64_t time) = 0;

  // Keyed state of the current key and window, on the job's state backend and in its
  // checkpoints. TTL is not available here.
  template <class T>
  ValueState<T>& getPartitionedState(const ValueStateDescriptor<T>& d) {
    return scoped<ValueState<T>>(d, [&](detail::KeyedStateBackendBase& s) -> auto& { return detail::valueState<W>(s, d); });
  }
  template <class T>
  ReducingState<T>& getPartitionedState(const ReducingStateDescriptor<T>& d) {
    return scoped<ReducingState<T>>(d,
                                    [&](detail::KeyedStateBackendBase& s) -> auto& { return detail::reducingState<W>(s, d); });
  }
  template <class T>
  ListState<T>& getPartitionedState(const ListStateDescriptor<T>& d) {
    return scoped<ListState<T>>(d, [&](detail::KeyedStateBackendBase& s) -> auto& { return detail::listState<W>(s, d); });
  }

 protected:
  virtual detail::KeyedStateBackendBase& windowStore() = 0;
  virtual const W& currentWindow() const = 0;
  // The states looked up so far belong to a store that is going away.
  void forgetStates() { states_.forget(); }

  // The state of `d` (made by `make` on first use), scoped to the current window.
  template <class State, class Make>
  State& scoped(const StateDescriptor& d, Make make) {
    return states_.template scoped<State>(d, windowStore(), currentWindow(), make);
  }

  detail::ScopedStates<W> states_{"trigger state"};
};

// What a trigger may do in onMerge: what TriggerContext offers for the merged window,
// and combining its per-window state with that of the windows merged into it.
template <class W>
class OnMergeContext : public TriggerContext<W> {
 public:
  // The state of `d` of the windows merged away is added to the merged window's and
  // cleared (Flink's mergePartitionedState). Value state cannot be merged.
  template <class T>
  void mergePartitionedState(const ReducingStateDescriptor<T>& d) {
    mergeFrom<ReducingState<T>>(d, [&](detail::KeyedStateBackendBase& s) -> auto& { return detail::reducingState<W>(s, d); },
                                [](ReducingState<T>& state, std::optional<T> value) {
                                  if (value) state.add(std::move(*value));
                                });
  }
  template <class T>
  void mergePartitionedState(const ListStateDescriptor<T>& d) {
    mergeFrom<ListState<T>>(d, [&](detail::KeyedStateBackendBase& s) -> auto& { return detail::listState<W>(s, d); },
                            [](ListState<T>& state, std::vector<T> values) { state.addAll(std::move(values)); });
  }

 protected:
  // The windows merged into the current one (it may be one of them).
  virtual std::span<const W> mergedWindows() const = 0;

 private:
  template <class State, class Make, class Add>
  void mergeFrom(const StateDescriptor& d, Make make, Add add) {
    auto& known = this->states_.template lookup<State>(d, this->windowStore(), make);
    auto& state = *static_cast<State*>(known.state);
    const W& target = this->currentWindow();
    for (const W& source : mergedWindows()) {
      if (source == target) continue;
      known.windowed->setCurrentNamespace(source);
      auto contents = state.get();
      state.clear();
      known.windowed->setCurrentNamespace(target);
      add(state, std::move(contents));
    }
    known.windowed->setCurrentNamespace(target);
  }
};

namespace detail {
// Whether a trigger with onMerge really merges: one derived from Trigger<T, W> says so
// by overriding canMerge().
template <class Tr>
bool canMerge(const Tr& trigger) {
  if constexpr (requires { trigger.canMerge(); }) return trigger.canMerge();
  else return true;
}

// What the built-in triggers answer to the calls they do not react to.
struct TriggerDefaults {
  template <class W>
  TriggerResult onEventTime(int64_t, const W&, TriggerContext<W>&) {
    return TriggerResult::CONTINUE;
  }
  template <class W>
  TriggerResult onProcessingTime(int64_t, const W&, TriggerContext<W>&) {
    return TriggerResult::CONTINUE;
  }
  template <class W>
  void clear(const W&, TriggerContext<W>&) {}
};
}  // namespace detail

// The interface a user trigger may derive from (Flink's Trigger<T, W>).
template <class T, class W>
class Trigger {
 public:
  using ElementType = T;
  using WindowType = W;
  virtual ~Trigger() = default;
  virtual TriggerResult onElement(const T& element, int64_t timestamp, const W& window, TriggerContext<W>& ctx) = 0;
  virtual TriggerResult onEventTime(int64_t time, const W& window, TriggerContext<W>& ctx) = 0;
  virtual TriggerResult onProcessingTime(int64_t time, const W& window, TriggerContext<W>& ctx) = 0;
  virtual void clear(const W& window, TriggerContext<W>& ctx) {}
  // Session windows take only triggers that can merge: override both to say how.
  virtual bool canMerge() const { return false; }
  virtual void onMerge(const W& window, OnMergeContext<W>& ctx) {
    throw Error(ErrorCode::kInvalidArgument, "this trigger does not support merging windows");
  }
};

// Fires once the watermark passes the window's end, and again at once for each record
// added to it later (within the allowed lateness). The default of event-time windows.
class EventTimeTrigger : public detail::TriggerDefaults {
 public:
  static EventTimeTrigger create() { return {}; }
  template <class T, class W>
  TriggerResult onElement(const T&, int64_t, const W& window, TriggerContext<W>& ctx) {
    if (window.maxTimestamp() <= ctx.getCurrentWatermark()) return TriggerResult::FIRE;
    ctx.registerEventTimeTimer(window.maxTimestamp());
    return TriggerResult::CONTINUE;
  }
  template <class W>
  TriggerResult onEventTime(int64_t time, const W& window, TriggerContext<W>&) {
    return time == window.maxTimestamp() ? TriggerResult::FIRE : TriggerResult::CONTINUE;
  }
  template <class W>
  void clear(const W& window, TriggerContext<W>& ctx) {
    ctx.deleteEventTimeTimer(window.maxTimestamp());
  }
  // A merged window the watermark already passed fires from onElement, which follows.
  template <class W>
  void onMerge(const W& window, OnMergeContext<W>& ctx) {
    if (window.maxTimestamp() > ctx.getCurrentWatermark()) ctx.registerEventTimeTimer(window.maxTimestamp());
  }
};

// Fires once the clock passes the window's end. The default of processing-time windows.
class ProcessingTimeTrigger : public detail::TriggerDefaults {
 public:
  static ProcessingTimeTrigger create() { return {}; }
  template <class T, class W>
  TriggerResult onElement(const T&, int64_t, const W& window, TriggerContext<W>& ctx) {
    ctx.registerProcessingTimeTimer(window.maxTimestamp());
    return TriggerResult::CONTINUE;
  }
  template <class W>
  TriggerResult onProcessingTime(int64_t, const W&, TriggerContext<W>&) {
    return TriggerResult::FIRE;
  }
  template <class W>
  void clear(const W& window, TriggerContext<W>& ctx) {
    ctx.deleteProcessingTimeTimer(window.maxTimestamp());
  }
  template <class W>
  void onMerge(const W& window, OnMergeContext<W>& ctx) {
    if (window.maxTimestamp() > ctx.getCurrentProcessingTime()) ctx.registerProcessingTimeTimer(window.maxTimestamp());
  }
};

// Fires when a window holds `count` more records than when it last fired (its count is
// per-window state, so it survives restarts). Without purging, the window keeps its
// contents: wrap it in PurgingTrigger for windows of `count` records each.
class CountTrigger : public detail::TriggerDefaults {
 public:
  // Throws weir::Error when count ≤ 0.
  static CountTrigger of(int64_t count) {
    if (count <= 0)
      throw Error(ErrorCode::kInvalidArgument, "CountTrigger: the count must be positive, got " + std::to_string(count));
    return CountTrigger(count);
  }
  template <class T, class W>
  TriggerResult onElement(const T&, int64_t, const W&, TriggerContext<W>& ctx) {
    ReducingState<int64_t>& seen = ctx.getPartitionedState(descriptor());
    seen.add(1);
    if (*seen.get() < count_) return TriggerResult::CONTINUE;
    seen.clear();
    return TriggerResult::FIRE;
  }
  template <class W>
  void clear(const W&, TriggerContext<W>& ctx) {
    ctx.getPartitionedState(descriptor()).clear();
  }
  // A merged window counts the records of all it merged.
  template <class W>
  void onMerge(const W&, OnMergeContext<W>& ctx) {
    ctx.mergePartitionedState(descriptor());
  }
  int64_t count() const { return count_; }

 private:
  explicit CountTrigger(int64_t count) : count_(count) {}
  static ReducingStateDescriptor<int64_t> descriptor() {
    return ReducingStateDescriptor<int64_t>("count", [](int64_t a, int64_t b) { return a + b; });
  }
  int64_t count_;
};

// Fires every `interval` of event time while the window is open (aligned to multiples of
// the interval), and when the watermark passes the window's end: early results of long
// windows.
class ContinuousEventTimeTrigger : public detail::TriggerDefaults {
 public:
  // Throws weir::Error when interval ≤ 0.
  static ContinuousEventTimeTrigger of(std::chrono::milliseconds interval) {
    if (interval.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument, "ContinuousEventTimeTrigger: the interval must be positive, got " +
                                                   std::to_string(interval.count()) + " ms");
    return ContinuousEventTimeTrigger(interval.count());
  }
  template <class T, class W>
  TriggerResult onElement(const T&, int64_t timestamp, const W& window, TriggerContext<W>& ctx) {
    if (window.maxTimestamp() <= ctx.getCurrentWatermark()) return TriggerResult::FIRE;
    ctx.registerEventTimeTimer(window.maxTimestamp());
    ReducingState<int64_t>& next = ctx.getPartitionedState(descriptor());
    if (!next.get()) scheduleNext(detail::alignedStart(timestamp, 0, interval_), window, next, ctx);
    return TriggerResult::CONTINUE;
  }
  template <class W>
  TriggerResult onEventTime(int64_t time, const W& window, TriggerContext<W>& ctx) {
    if (time == window.maxTimestamp()) return TriggerResult::FIRE;
    ReducingState<int64_t>& next = ctx.getPartitionedState(descriptor());
    if (next.get() != time) return TriggerResult::CONTINUE;
    next.clear();
    // At the end of input (the final watermark) the next firing is the window's end: a
    // GlobalWindow would otherwise fire every interval up to INT64_MAX.
    bool ended = ctx.getCurrentWatermark() == std::numeric_limits<int64_t>::max();
    scheduleNext(ended ? window.maxTimestamp() : time, window, next, ctx);
    return TriggerResult::FIRE;
  }
  template <class W>
  void clear(const W& window, TriggerContext<W>& ctx) {
    ReducingState<int64_t>& next = ctx.getPartitionedState(descriptor());
    if (auto at = next.get()) ctx.deleteEventTimeTimer(*at);
    next.clear();
    ctx.deleteEventTimeTimer(window.maxTimestamp());
  }
  // A merged window fires early at the earliest time one of its parts would have.
  template <class W>
  void onMerge(const W& window, OnMergeContext<W>& ctx) {
    ctx.mergePartitionedState(descriptor());
    if (auto at = ctx.getPartitionedState(descriptor()).get()) ctx.registerEventTimeTimer(*at);
    if (window.maxTimestamp() > ctx.getCurrentWatermark()) ctx.registerEventTimeTimer(window.maxTimestamp());
  }

 private:
  explicit ContinuousEventTimeTrigger(int64_t interval) : interval_(interval) {}
  // The next early firing: an interval after `from`, but not after the window's end.
  template <class W>
  void scheduleNext(int64_t from, const W& window, ReducingState<int64_t>& next, TriggerContext<W>& ctx) {
    int64_t fireAt = std::min(detail::saturatingAdd(from, interval_), window.maxTimestamp());
    ctx.registerEventTimeTimer(fireAt);
    next.add(fireAt);
  }
  // The next early firing's time; merged windows keep the earliest.
  static ReducingStateDescriptor<int64_t> descriptor() {
    return ReducingStateDescriptor<int64_t>("continuous-fire-time", [](int64_t a, int64_t b) { return std::min(a, b); });
  }
  int64_t interval_;
};

// Fires every `interval` of processing time while the window holds records (aligned to
// multiples of the interval), the last time at the window's end (Flink's
// ContinuousProcessingTimeTrigger): early results of long processing-time windows.
class ContinuousProcessingTimeTrigger : public detail::TriggerDefaults {
 public:
  // Throws weir::Error when interval ≤ 0.
  static ContinuousProcessingTimeTrigger of(std::chrono::milliseconds interval) {
    if (interval.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument, "ContinuousProcessingTimeTrigger: the interval must be positive, got " +
                                                   std::to_string(interval.count()) + " ms");
    return ContinuousProcessingTimeTrigger(interval.count());
  }
  template <class T, class W>
  TriggerResult onElement(const T&, int64_t, const W& window, TriggerContext<W>& ctx) {
    ReducingState<int64_t>& next = ctx.getPartitionedState(descriptor());
    if (!next.get()) scheduleNext(detail::alignedStart(ctx.getCurrentProcessingTime(), 0, interval_), window, next, ctx);
    return TriggerResult::CONTINUE;
  }
  template <class W>
  TriggerResult onProcessingTime(int64_t time, const W& window, TriggerContext<W>& ctx) {
    ReducingState<int64_t>& next = ctx.getPartitionedState(descriptor());
    if (next.get() != time) return TriggerResult::CONTINUE;
    next.clear();
    // Once it fired at the window's end, it is done (the window goes then).
    if (time < window.maxTimestamp()) scheduleNext(time, window, next, ctx);
    return TriggerResult::FIRE;
  }
  template <class W>
  void clear(const W&, TriggerContext<W>& ctx) {
    ReducingState<int64_t>& next = ctx.getPartitionedState(descriptor());
    if (auto at = next.get()) ctx.deleteProcessingTimeTimer(*at);
    next.clear();
  }
  template <class W>
  void onMerge(const W&, OnMergeContext<W>& ctx) {
    ctx.mergePartitionedState(descriptor());
    if (auto at = ctx.getPartitionedState(descriptor()).get()) ctx.registerProcessingTimeTimer(*at);
  }
  int64_t getInterval() const { return interval_; }

 private:
  explicit ContinuousProcessingTimeTrigger(int64_t interval) : interval_(interval) {}
  // The next firing: an interval after `from`, but not after the window's end (which may
  // be behind already: the timer then fires at once, as in Flink).
  template <class W>
  void scheduleNext(int64_t from, const W& window, ReducingState<int64_t>& next, TriggerContext<W>& ctx) {
    int64_t fireAt = std::min(detail::saturatingAdd(from, interval_), window.maxTimestamp());
    ctx.registerProcessingTimeTimer(fireAt);
    next.add(fireAt);
  }
  static ReducingStateDescriptor<int64_t> descriptor() {
    return ReducingStateDescriptor<int64_t>("fire-time", [](int64_t a, int64_t b) { return std::min(a, b); });
  }
  int64_t interval_;
};

// Fires when `deltaFunction(last, element)` — between the record that last fired the
// window (or its first record) and a new one — exceeds `threshold` (Flink's
// DeltaTrigger). The last record is per-window state, so T must be Serializable.
template <class T>
class DeltaTrigger : public detail::TriggerDefaults {
 public:
  using DeltaFunction = std::function<double(const T& oldPoint, const T& newPoint)>;
  static DeltaTrigger of(double threshold, DeltaFunction deltaFunction) {
    if (!deltaFunction) throw Error(ErrorCode::kInvalidArgument, "DeltaTrigger: the delta function is empty");
    return DeltaTrigger(threshold, std::move(deltaFunction));
  }
  template <class W>
  TriggerResult onElement(const T& element, int64_t, const W&, TriggerContext<W>& ctx) {
    ValueState<T>& last = ctx.getPartitionedState(descriptor());
    std::optional<T> previous = last.value();
    if (!previous) {
      last.update(element);
      return TriggerResult::CONTINUE;
    }
    if (delta_(*previous, element) > threshold_) {
      last.update(element);
      return TriggerResult::FIRE;
    }
    return TriggerResult::CONTINUE;
  }
  template <class W>
  void clear(const W&, TriggerContext<W>& ctx) {
    ctx.getPartitionedState(descriptor()).clear();
  }

 private:
  DeltaTrigger(double threshold, DeltaFunction delta) : threshold_(threshold), delta_(std::move(delta)) {}
  static ValueStateDescriptor<T> descriptor() { return ValueStateDescriptor<T>("last-element"); }
  double threshold_;
  DeltaFunction delta_;
};

// Wraps a trigger: fires the window also `timeout` of processing time after its first
// record (or, with resetTimerOnNewRecord, after its latest), and on any timer; with
// shouldClearOnTimeout the trigger's state is cleared when it fires (Flink's
// ProcessingTimeoutTrigger).
template <class Inner>
class ProcessingTimeoutTrigger {
 public:
  static ProcessingTimeoutTrigger of(Inner trigger, std::chrono::milliseconds timeout) {
    return of(std::move(trigger), timeout, false, true);
  }
  // Throws weir::Error when timeout ≤ 0.
  static ProcessingTimeoutTrigger of(Inner trigger, std::chrono::milliseconds timeout, bool resetTimerOnNewRecord,
                                     bool shouldClearOnTimeout) {
    if (timeout.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument, "ProcessingTimeoutTrigger: the timeout must be positive, got " +
                                                   std::to_string(timeout.count()) + " ms");
    return ProcessingTimeoutTrigger(std::move(trigger), timeout.count(), resetTimerOnNewRecord, shouldClearOnTimeout);
  }
  template <class T, class W>
  TriggerResult onElement(const T& element, int64_t timestamp, const W& window, TriggerContext<W>& ctx) {
    TriggerResult result = inner_.onElement(element, timestamp, window, ctx);
    if (isFire(result)) {
      clear(window, ctx);
      return result;
    }
    ValueState<int64_t>& timeout = ctx.getPartitionedState(descriptor());
    std::optional<int64_t> at = timeout.value();
    if (at && reset_) {
      ctx.deleteProcessingTimeTimer(*at);
      timeout.clear();
      at.reset();
    }
    if (!at) {
      const int64_t fireAt = detail::saturatingAdd(ctx.getCurrentProcessingTime(), timeout_);
      timeout.update(fireAt);
      ctx.registerProcessingTimeTimer(fireAt);
    }
    return result;
  }
  template <class W>
  TriggerResult onProcessingTime(int64_t time, const W& window, TriggerContext<W>& ctx) {
    TriggerResult result = inner_.onProcessingTime(time, window, ctx);
    if (clearOnTimeout_) clear(window, ctx);
    return isPurge(result) ? TriggerResult::FIRE_AND_PURGE : TriggerResult::FIRE;
  }
  template <class W>
  TriggerResult onEventTime(int64_t time, const W& window, TriggerContext<W>& ctx) {
    TriggerResult result = inner_.onEventTime(time, window, ctx);
    if (clearOnTimeout_) clear(window, ctx);
    return isPurge(result) ? TriggerResult::FIRE_AND_PURGE : TriggerResult::FIRE;
  }
  template <class W>
  void clear(const W& window, TriggerContext<W>& ctx) {
    ValueState<int64_t>& timeout = ctx.getPartitionedState(descriptor());
    if (auto at = timeout.value()) {
      ctx.deleteProcessingTimeTimer(*at);
      timeout.clear();
    }
    inner_.clear(window, ctx);
  }

 private:
  ProcessingTimeoutTrigger(Inner inner, int64_t timeout, bool reset, bool clearOnTimeout)
      : inner_(std::move(inner)), timeout_(timeout), reset_(reset), clearOnTimeout_(clearOnTimeout) {}
  static ValueStateDescriptor<int64_t> descriptor() { return ValueStateDescriptor<int64_t>("timeout"); }
  Inner inner_;
  int64_t timeout_;
  bool reset_;
  bool clearOnTimeout_;
};

// Turns every FIRE of `trigger` into FIRE_AND_PURGE: the window's contents are dropped
// each time it fires.
template <class Inner>
class PurgingTrigger {
 public:
  static PurgingTrigger of(Inner trigger) { return PurgingTrigger(std::move(trigger)); }
  template <class T, class W>
  TriggerResult onElement(const T& element, int64_t timestamp, const W& window, TriggerContext<W>& ctx) {
    return purging(inner_.onElement(element, timestamp, window, ctx));
  }
  template <class W>
  TriggerResult onEventTime(int64_t time, const W& window, TriggerContext<W>& ctx) {
    return purging(inner_.onEventTime(time, window, ctx));
  }
  template <class W>
  TriggerResult onProcessingTime(int64_t time, const W& window, TriggerContext<W>& ctx) {
    return purging(inner_.onProcessingTime(time, window, ctx));
  }
  template <class W>
  void clear(const W& window, TriggerContext<W>& ctx) {
    inner_.clear(window, ctx);
  }
  template <class W>
  void onMerge(const W& window, OnMergeContext<W>& ctx) {
    inner_.onMerge(window, ctx);
  }
  bool canMerge() const { return detail::canMerge(inner_); }

 private:
  explicit PurgingTrigger(Inner trigger) : inner_(std::move(trigger)) {}
  static TriggerResult purging(TriggerResult r) { return isFire(r) ? TriggerResult::FIRE_AND_PURGE : r; }
  Inner inner_;
};

// Never fires: the default of GlobalWindows, whose one window has no end.
class NeverTrigger : public detail::TriggerDefaults {
 public:
  template <class T, class W>
  TriggerResult onElement(const T&, int64_t, const W&, TriggerContext<W>&) {
    return TriggerResult::CONTINUE;
  }
};

// Whether `Tr` can trigger windows of type W over records of type T.
template <class Tr, class T, class W>
concept TriggerFor = requires(Tr trigger, const T& element, int64_t time, const W& window, TriggerContext<W>& ctx) {
  { trigger.onElement(element, time, window, ctx) } -> std::same_as<TriggerResult>;
  { trigger.onEventTime(time, window, ctx) } -> std::same_as<TriggerResult>;
  { trigger.onProcessingTime(time, window, ctx) } -> std::same_as<TriggerResult>;
  trigger.clear(window, ctx);
};

// Whether `Tr` can also trigger merging (session) windows: it has onMerge.
template <class Tr, class T, class W>
concept MergingTriggerFor = TriggerFor<Tr, T, W> && requires(Tr trigger, const W& window, OnMergeContext<W>& ctx) {
  trigger.onMerge(window, ctx);
};

}  // namespace weir
