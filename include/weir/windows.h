// Event-time windows: what a window is, and the assigners that put records into them.
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

namespace weir {

// A window of event time [start, end), end exclusive (Flink's TimeWindow).
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
};

namespace detail {
// floor((t - offset) / step) * step + offset, without overflow: the start of the
// step-aligned window that contains t, clamped to the int64 range.
inline int64_t alignedStart(int64_t t, int64_t offset, int64_t step) {
  __int128 x = static_cast<__int128>(t) - offset;
  __int128 r = x % step;
  if (r < 0) r += step;
  __int128 start = static_cast<__int128>(t) - r;
  if (start < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(start);
}
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  __int128 s = static_cast<__int128>(a) + b;
  if (s > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (s < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(s);
}
}  // namespace detail

// Windows of a fixed size that do not overlap: [offset + k·size, offset + (k+1)·size).
class TumblingEventTimeWindows {
 public:
  // Throws weir::Error when size ≤ 0 or |offset| ≥ size.
  static TumblingEventTimeWindows of(std::chrono::milliseconds size,
                                     std::chrono::milliseconds offset = std::chrono::milliseconds(0)) {
    if (size.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument, "TumblingEventTimeWindows: the size must be positive, got " +
                                                   std::to_string(size.count()) + " ms");
    if (offset.count() <= -size.count() || offset.count() >= size.count())
      throw Error(ErrorCode::kInvalidArgument, "TumblingEventTimeWindows: the offset must be smaller than the size");
    return TumblingEventTimeWindows(size.count(), offset.count());
  }
  template <class Out>
  void assignWindows(int64_t timestamp, Out&& out) const {
    int64_t start = detail::alignedStart(timestamp, offset_, size_);
    out(TimeWindow{start, detail::saturatingAdd(start, size_)});
  }
  int64_t size() const { return size_; }

 private:
  TumblingEventTimeWindows(int64_t size, int64_t offset) : size_(size), offset_(offset) {}
  int64_t size_;
  int64_t offset_;
};

// Windows of a fixed size that start every `slide`: a record belongs to size / slide of
// them.
class SlidingEventTimeWindows {
 public:
  // Throws weir::Error when size ≤ 0, slide ≤ 0, slide > size, or |offset| ≥ slide.
  static SlidingEventTimeWindows of(std::chrono::milliseconds size, std::chrono::milliseconds slide,
                                    std::chrono::milliseconds offset = std::chrono::milliseconds(0)) {
    if (size.count() <= 0 || slide.count() <= 0 || slide.count() > size.count())
      throw Error(ErrorCode::kInvalidArgument, "SlidingEventTimeWindows: need 0 < slide <= size, got size " +
                                                   std::to_string(size.count()) + " ms and slide " +
                                                   std::to_string(slide.count()) + " ms");
    if (offset.count() <= -slide.count() || offset.count() >= slide.count())
      throw Error(ErrorCode::kInvalidArgument, "SlidingEventTimeWindows: the offset must be smaller than the slide");
    return SlidingEventTimeWindows(size.count(), slide.count(), offset.count());
  }
  template <class Out>
  void assignWindows(int64_t timestamp, Out&& out) const {
    int64_t lastStart = detail::alignedStart(timestamp, offset_, slide_);
    for (__int128 start = lastStart; start > static_cast<__int128>(timestamp) - size_; start -= slide_) {
      if (start < std::numeric_limits<int64_t>::min()) break;
      auto s = static_cast<int64_t>(start);
      out(TimeWindow{s, detail::saturatingAdd(s, size_)});
    }
  }
  // Panes: time cut into slices of gcd(size, slide), aligned like the windows, so every
  // window is a whole number of panes and every window containing a pane's start
  // contains the pane. The window operator aggregates each record into its one pane and
  // combines a window's panes when it fires, instead of updating size / slide windows.
  static constexpr bool kPaned = true;
  TimeWindow paneOf(int64_t timestamp) const {
    int64_t start = detail::alignedStart(timestamp, offset_, pane_);
    return {start, detail::saturatingAdd(start, pane_)};
  }

 private:
  SlidingEventTimeWindows(int64_t size, int64_t slide, int64_t offset)
      : size_(size), slide_(slide), offset_(offset), pane_(std::gcd(size, slide)) {}
  int64_t size_;
  int64_t slide_;
  int64_t offset_;
  int64_t pane_;
};

// Sessions: a record at t opens the window [t, t + gap), and windows of a key that
// overlap or touch merge into one, so a session ends after a gap without records. A late
// record that bridges two sessions merges them.
class EventTimeSessionWindows {
 public:
  static constexpr bool kMerging = true;
  // Throws weir::Error when gap ≤ 0.
  static EventTimeSessionWindows withGap(std::chrono::milliseconds gap) {
    if (gap.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument, "EventTimeSessionWindows: the gap must be positive, got " +
                                                   std::to_string(gap.count()) + " ms");
    return EventTimeSessionWindows(gap.count());
  }
  // The gap is computed per record by `extractor` (Flink's SessionWindowTimeGapExtractor):
  // callable on the record, returning std::chrono::milliseconds or a count of ms. A gap
  // ≤ 0 fails the job, naming the operator. Defined below.
  template <class F>
  static auto withDynamicGap(F extractor);

  template <class T>
  TimeWindow assignWindow(const T&, int64_t timestamp) const {
    return {timestamp, detail::saturatingAdd(timestamp, gap_)};
  }

 private:
  explicit EventTimeSessionWindows(int64_t gap) : gap_(gap) {}
  int64_t gap_;
};

// Sessions whose gap each record sets (EventTimeSessionWindows::withDynamicGap).
template <class F>
class DynamicEventTimeSessionWindows {
 public:
  static constexpr bool kMerging = true;
  explicit DynamicEventTimeSessionWindows(F extractor) : extractor_(std::move(extractor)) {}

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

template <class F>
auto EventTimeSessionWindows::withDynamicGap(F extractor) {
  return DynamicEventTimeSessionWindows<F>(std::move(extractor));
}

// Assigners whose windows merge (sessions) give one window per record, which the window
// operator merges with the key's windows it intersects.
template <class A>
concept MergingWindowAssigner = A::kMerging;
// Assigners whose overlapping windows are unions of panes (SlidingEventTimeWindows).
template <class A>
concept PanedWindowAssigner = A::kPaned;

template <>
struct KeyHash<TimeWindow> {
  int32_t operator()(const TimeWindow& w) const {
    return detail::combineHash(KeyHash<int64_t>{}(w.start), KeyHash<int64_t>{}(w.end));
  }
};

// Sees all records of a window at once when it fires (Flink's ProcessWindowFunction);
// costs the window's records in memory, where reduce and aggregate keep one value.
template <class IN, class OUT, class KEY, class W = TimeWindow>
class ProcessWindowFunction : public RichFunction {
 public:
  using InputType = IN;
  using OutputType = OUT;
  using KeyType = KEY;

  class Context {
   public:
    Context(const W& window, int64_t watermark, const Clock& clock)
        : window_(window), watermark_(watermark), clock_(&clock) {}
    const W& window() const { return window_; }
    int64_t currentWatermark() const { return watermark_; }
    // The job's processing-time clock (env.setClock), in ms.
    int64_t currentProcessingTime() const { return clock_->currentTimeMillis(); }

   private:
    W window_;
    int64_t watermark_;
    const Clock* clock_;
  };

  // Called when the window fires; everything emitted carries window.maxTimestamp().
  virtual void process(const KEY& key, Context& ctx, std::span<const IN> elements, Collector<OUT>& out) = 0;
};


}  // namespace weir
