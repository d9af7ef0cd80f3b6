// Windows: what a window is, and the assigners that put records into them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "weir/aggregate_function.h"
#include "weir/clock.h"
#include "weir/error.h"
#include "weir/functions.h"
#include "weir/key_group.h"
#include "weir/output_tag.h"
#include "weir/serializer.h"
#include "weir/state_store.h"

namespace weir {

// A window of time [start, end), end exclusive (Flink's TimeWindow).
struct TimeWindow {
  int64_t start = 0;
  int64_t end = 0;
  // The largest timestamp that still belongs to the window; results carry it.
  int64_t maxTimestamp() const { return end == std::numeric_limits<int64_t>::min() ? end : end - 1; }
  // Whether the two overlap or touch (Flink's rule for merging sessions).
  bool intersects(const TimeWindow& o) const { return start <= o.end && end >= o.start; }
  // The smallest window that covers both.
  TimeWindow cover(const TimeWindow& o) const { return {std::min(start, o.start), std::max(end, o.end)}; }
  bool operator==(const TimeWindow&) const = default;
  // The start of the window of `windowSize` (shifted by `offset`) that holds `timestamp`
  // (Flink's TimeWindow.getWindowStartWithOffset), negative timestamps included.
  static int64_t getWindowStartWithOffset(int64_t timestamp, int64_t offset, int64_t windowSize);
};
WEIR_STRUCT(TimeWindow, start, end);

// The one window of GlobalWindows: all of a key's records, for all time. It never ends,
// so what fires it is a trigger (CountTrigger, or one of your own).
struct GlobalWindow {
  int64_t maxTimestamp() const { return std::numeric_limits<int64_t>::max(); }
  bool operator==(const GlobalWindow&) const = default;
};

namespace detail {
// floor((t - offset) / step) * step + offset, computed wide: the start of the
// step-aligned window that contains t, which may lie below the int64 range.
inline __int128 alignedStartWide(int64_t t, int64_t offset, int64_t step) {
  __int128 x = static_cast<__int128>(t) - offset;
  __int128 r = x % step;
  if (r < 0) r += step;
  return static_cast<__int128>(t) - r;
}
inline int64_t clampToInt64(__int128 v) {
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}
inline int64_t alignedStart(int64_t t, int64_t offset, int64_t step) {
  return clampToInt64(alignedStartWide(t, offset, step));
}
}  // namespace detail

inline int64_t TimeWindow::getWindowStartWithOffset(int64_t timestamp, int64_t offset, int64_t windowSize) {
  if (windowSize <= 0)
    throw Error(ErrorCode::kInvalidArgument, "getWindowStartWithOffset: the window size must be positive, got " +
                                                 std::to_string(windowSize));
  return detail::alignedStart(timestamp, offset, windowSize);
}

namespace detail {
// The aligned window [start, start + size) computed wide, then clamped to the range: the
// first and last windows are cut short where the range ends, not moved.
inline TimeWindow clampedWindow(__int128 start, int64_t size) { return {clampToInt64(start), clampToInt64(start + size)}; }
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  __int128 s = static_cast<__int128>(a) + b;
  if (s > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (s < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(s);
}
}  // namespace detail

// The window assigners exist in both time domains, with Flink's names:
// TumblingEventTimeWindows / TumblingProcessingTimeWindows, SlidingEventTimeWindows /
// SlidingProcessingTimeWindows, EventTimeSessionWindows / ProcessingTimeSessionWindows.
// In processing time a record's windows follow the job's clock when the window operator
// takes it (its timestamp is not used, and need not exist), and a window fires when the
// clock passes its end; no record is late.
namespace detail {
template <TimeDomain D>
constexpr const char* assignerName(const char* eventTime, const char* processingTime) {
  return D == TimeDomain::EVENT_TIME ? eventTime : processingTime;
}
}  // namespace detail

// Windows of a fixed size that do not overlap: [offset + k·size, offset + (k+1)·size).
template <TimeDomain D>
class TumblingWindows {
 public:
  using WindowType = TimeWindow;
  static constexpr TimeDomain kDomain = D;
  static constexpr bool kTumbling = true;
  // Throws weir::Error when size ≤ 0 or |offset| ≥ size.
  static TumblingWindows of(std::chrono::milliseconds size, std::chrono::milliseconds offset = std::chrono::milliseconds(0)) {
    const std::string name = detail::assignerName<D>("TumblingEventTimeWindows", "TumblingProcessingTimeWindows");
    if (size.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  name + ": the size must be positive, got " + std::to_string(size.count()) + " ms");
    if (offset.count() <= -size.count() || offset.count() >= size.count())
      throw Error(ErrorCode::kInvalidArgument, name + ": the offset must be smaller than the size");
    return TumblingWindows(size.count(), offset.count());
  }
  template <class Out>
  void assignWindows(int64_t timestamp, Out&& out) const {
    out(detail::clampedWindow(detail::alignedStartWide(timestamp, offset_, size_), size_));
  }
  int64_t size() const { return size_; }

 private:
  TumblingWindows(int64_t size, int64_t offset) : size_(size), offset_(offset) {}
  int64_t size_;
  int64_t offset_;
};
using TumblingEventTimeWindows = TumblingWindows<TimeDomain::EVENT_TIME>;
using TumblingProcessingTimeWindows = TumblingWindows<TimeDomain::PROCESSING_TIME>;

// Windows of a fixed size that start every `slide`: a record belongs to size / slide of
// them.
template <TimeDomain D>
class SlidingWindows {
 public:
  using WindowType = TimeWindow;
  static constexpr TimeDomain kDomain = D;
  // Throws weir::Error when size ≤ 0, slide ≤ 0, slide > size, or |offset| ≥ slide.
  static SlidingWindows of(std::chrono::milliseconds size, std::chrono::milliseconds slide,
                           std::chrono::milliseconds offset = std::chrono::milliseconds(0)) {
    const std::string name = detail::assignerName<D>("SlidingEventTimeWindows", "SlidingProcessingTimeWindows");
    if (size.count() <= 0 || slide.count() <= 0 || slide.count() > size.count())
      throw Error(ErrorCode::kInvalidArgument, name + ": need 0 < slide <= size, got size " +
                                                   std::to_string(size.count()) + " ms and slide " +
                                                   std::to_string(slide.count()) + " ms");
    if (offset.count() <= -slide.count() || offset.count() >= slide.count())
      throw Error(ErrorCode::kInvalidArgument, name + ": the offset must be smaller than the slide");
    return SlidingWindows(size.count(), slide.count(), offset.count());
  }
  template <class Out>
  void assignWindows(int64_t timestamp, Out&& out) const {
    __int128 lastStart = detail::alignedStartWide(timestamp, offset_, slide_);
    for (__int128 start = lastStart; start > static_cast<__int128>(timestamp) - size_; start -= slide_)
      out(detail::clampedWindow(start, size_));
  }
  // Panes: time cut into slices of gcd(size, slide), aligned like the windows, so every
  // window is a whole number of panes and every window containing a pane's start
  // contains the pane. The window operator aggregates each record into its one pane and
  // combines a window's panes when it fires, instead of updating size / slide windows.
  static constexpr bool kPaned = true;
  TimeWindow paneOf(int64_t timestamp) const {
    return detail::clampedWindow(detail::alignedStartWide(timestamp, offset_, pane_), pane_);
  }

 private:
  SlidingWindows(int64_t size, int64_t slide, int64_t offset)
      : size_(size), slide_(slide), offset_(offset), pane_(std::gcd(size, slide)) {}
  int64_t size_;
  int64_t slide_;
  int64_t offset_;
  int64_t pane_;
};
using SlidingEventTimeWindows = SlidingWindows<TimeDomain::EVENT_TIME>;
using SlidingProcessingTimeWindows = SlidingWindows<TimeDomain::PROCESSING_TIME>;

// Sessions whose gap each record sets (withDynamicGap).
template <TimeDomain D, class F>
class DynamicSessionWindows {
 public:
  using WindowType = TimeWindow;
  static constexpr TimeDomain kDomain = D;
  static constexpr bool kMerging = true;
  explicit DynamicSessionWindows(F extractor) : extractor_(std::move(extractor)) {}

  template <class T>
  TimeWindow assignWindow(const T& record, int64_t timestamp) const {
    static_assert(std::is_invocable_v<const F&, const T&>,
                  "withDynamicGap(f): f must be callable on the stream's record type");
    auto gap = std::invoke(extractor_, record);
    int64_t millis;
    if constexpr (std::is_integral_v<decltype(gap)>) millis = static_cast<int64_t>(gap);
    else millis = std::chrono::duration_cast<std::chrono::milliseconds>(gap).count();
    if (millis <= 0)
      throw Error(ErrorCode::kInvalidArgument, "the dynamic session gap must be positive, got " +
                                                   std::to_string(millis) + " ms for a record at " +
                                                   std::to_string(timestamp));
    return {timestamp, detail::saturatingAdd(timestamp, millis)};
  }

 private:
  F extractor_;
};

// Sessions: a record at t opens the window [t, t + gap), and windows of a key that
// overlap or touch merge into one, so a session ends after a gap without records. A late
// record that bridges two sessions merges them.
template <TimeDomain D>
class SessionWindows {
 public:
  using WindowType = TimeWindow;
  static constexpr TimeDomain kDomain = D;
  static constexpr bool kMerging = true;
  // Throws weir::Error when gap ≤ 0.
  static SessionWindows withGap(std::chrono::milliseconds gap) {
    if (gap.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(detail::assignerName<D>("EventTimeSessionWindows", "ProcessingTimeSessionWindows")) +
                      ": the gap must be positive, got " + std::to_string(gap.count()) + " ms");
    return SessionWindows(gap.count());
  }
  // The gap is computed per record by `extractor` (Flink's SessionWindowTimeGapExtractor):
  // callable on the record, returning std::chrono::milliseconds or a count of ms. A gap
  // ≤ 0 fails the job, naming the operator.
  template <class F>
  static DynamicSessionWindows<D, F> withDynamicGap(F extractor) {
    return DynamicSessionWindows<D, F>(std::move(extractor));
  }

  template <class T>
  TimeWindow assignWindow(const T&, int64_t timestamp) const {
    return {timestamp, detail::saturatingAdd(timestamp, gap_)};
  }

 private:
  explicit SessionWindows(int64_t gap) : gap_(gap) {}
  int64_t gap_;
};
using EventTimeSessionWindows = SessionWindows<TimeDomain::EVENT_TIME>;
using ProcessingTimeSessionWindows = SessionWindows<TimeDomain::PROCESSING_TIME>;

// Puts every record of a key into its one GlobalWindow; fires only by a trigger (the
// default never fires). KeyedStream::countWindow is built on it.
class GlobalWindows {
 public:
  using WindowType = GlobalWindow;
  static GlobalWindows create() { return {}; }
  template <class Out>
  void assignWindows(int64_t, Out&& out) const {
    out(GlobalWindow{});
  }
};

// Assigners whose windows merge (sessions) give one window per record, which the window
// operator merges with the key's windows it intersects.
template <class A>
concept MergingWindowAssigner = A::kMerging;
// Assigners that give every timestamp one window, the same for all keys: a record whose
// time lies inside the last record's window belongs to that window.
template <class A>
concept TumblingWindowAssigner = A::kTumbling;
// Assigners whose overlapping windows are unions of panes (SlidingEventTimeWindows).
template <class A>
concept PanedWindowAssigner = A::kPaned;
// Assigners that follow the job's clock instead of the records' timestamps.
template <class A>
concept ProcessingTimeWindowAssigner = A::kDomain == TimeDomain::PROCESSING_TIME;
// Assigners whose windows end by event time (records beyond the lateness are late).
template <class A>
concept EventTimeWindowAssigner = A::kDomain == TimeDomain::EVENT_TIME;

template <>
struct KeyHash<TimeWindow> {
  int32_t operator()(const TimeWindow& w) const {
    return detail::combineHash(KeyHash<int64_t>{}(w.start), KeyHash<int64_t>{}(w.end));
  }
};
template <>
struct KeyHash<GlobalWindow> {
  int32_t operator()(const GlobalWindow&) const { return 0; }
};
template <>
struct Serializer<GlobalWindow> {
  static constexpr std::size_t kMinEncodedSize = 0;
  static void serialize(const GlobalWindow&, DataOutput&) {}
  static GlobalWindow deserialize(DataInput&) { return {}; }
  static TypeSchema schema() { return {"GlobalWindow", 1, {}}; }
};

// Sees all records of a window at once when it fires (Flink's ProcessWindowFunction);
// costs the window's records in memory, where reduce and aggregate keep one value.
template <class IN, class OUT, class KEY, class W = TimeWindow>
class ProcessWindowFunction : public RichFunction {
 public:
  using InputType = IN;
  using OutputType = OUT;
  using KeyType = KEY;
  using FunctionBase = ProcessWindowFunction;

  class Context {
   public:
    Context(const W& window, int64_t watermark, const Clock& clock, detail::WindowFunctionState<W>* state = nullptr)
        : window_(window), watermark_(watermark), clock_(&clock), state_(state) {}
    const W& window() const { return window_; }
    int64_t currentWatermark() const { return watermark_; }
    // The job's processing-time clock (env.setClock), in ms.
    int64_t currentProcessingTime() const { return clock_->currentTimeMillis(); }
    // Keyed state of the current key and this window: each window has its own. Delete
    // it in clear(), which is called when the window goes. Session windows merge, so
    // they have none (an error, as in Flink).
    StateStore<W>& windowState() { return state().windowState(window_); }
    // Keyed state of the current key, shared by all its windows.
    StateStore<W>& globalState() { return state().globalState(); }
    // Emits `value` to the side output named by `tag`, with the window's maxTimestamp().
    template <class X>
    void output(const OutputTag<X>& tag, X value) {
      detail::SideOutputs* outputs = state().sideOutputs();
      if (outputs == nullptr) throw Error(ErrorCode::kInvalidArgument, "this window function's context has no side outputs");
      outputs->setTimestamp(true, window_.maxTimestamp());
      outputs->collect(tag, std::move(value));
    }

   private:
    detail::WindowFunctionState<W>& state() {
      if (state_ == nullptr) throw Error(ErrorCode::kState, "this window function's context has no keyed state");
      return *state_;
    }
    W window_;
    int64_t watermark_;
    const Clock* clock_;
    detail::WindowFunctionState<W>* state_;
  };

  // Called when the window fires; everything emitted carries window.maxTimestamp().
  virtual void process(const KEY& key, Context& ctx, std::span<const IN> elements, Collector<OUT>& out) = 0;
  // Called when the window's state goes: its end plus the allowed lateness passed (never
  // for a GlobalWindow). Clear what the window kept in ctx.windowState() here.
  virtual void clear(Context& ctx) {}
};

// Flink's WindowFunction (what apply() takes, and reduce and aggregate as their second
// function): the key, the window and its records — or, after reduce or aggregate, the
// one result — at once. ProcessWindowFunction offers more (state, the watermark, side
// outputs).
template <class IN, class OUT, class KEY, class W = TimeWindow>
class WindowFunction : public RichFunction {
 public:
  using InputType = IN;
  using OutputType = OUT;
  using KeyType = KEY;
  virtual void apply(const KEY& key, const W& window, std::span<const IN> input, Collector<OUT>& out) = 0;
};

}  // namespace weir
