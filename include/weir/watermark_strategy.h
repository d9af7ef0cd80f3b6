// How a source assigns event timestamps and generates watermarks (Flink's
// WatermarkStrategy): a timestamp assigner plus a watermark generator, optionally with
// idleness detection.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "weir/error.h"

namespace weir {

// The watermark before any record, and the one that ends a bounded input (every window
// fires, every timer runs).
inline constexpr int64_t kMinWatermark = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMaxWatermark = std::numeric_limits<int64_t>::max();

// Where a WatermarkGenerator sends what it decides.
class WatermarkOutput {
 public:
  virtual ~WatermarkOutput() = default;
  // Emits a watermark; one that does not move forward is ignored.
  virtual void emitWatermark(int64_t watermark) = 0;
  // The source emits nothing for now; downstream stops waiting for its watermark.
  virtual void markIdle() = 0;
  // The source emits again (also implied by emitWatermark).
  virtual void markActive() = 0;
};

// Decides watermarks from the records a source reads: punctuated (in onEvent) or
// periodic (in onPeriodicEmit, every autoWatermarkInterval).
template <class T>
class WatermarkGenerator {
 public:
  virtual ~WatermarkGenerator() = default;
  virtual void onEvent(const T& event, int64_t timestamp, WatermarkOutput& output) = 0;
  virtual void onPeriodicEmit(WatermarkOutput& output) = 0;
  // A whole batch; built-in generators override it with a tight loop.
  virtual void onBatch(std::span<const T> events, std::span<const int64_t> timestamps, WatermarkOutput& output) {
    for (size_t i = 0; i < events.size(); ++i) onEvent(events[i], timestamps[i], output);
  }
};

// Watermark = highest timestamp seen − maxOutOfOrderness − 1, emitted periodically.
template <class T>
class BoundedOutOfOrdernessWatermarks : public WatermarkGenerator<T> {
 public:
  explicit BoundedOutOfOrdernessWatermarks(int64_t maxOutOfOrdernessMillis)
      : outOfOrderness_(maxOutOfOrdernessMillis), maxTimestamp_(kMinWatermark + maxOutOfOrdernessMillis + 1) {}
  void onEvent(const T&, int64_t timestamp, WatermarkOutput&) override {
    if (timestamp > maxTimestamp_) maxTimestamp_ = timestamp;
  }
  void onBatch(std::span<const T>, std::span<const int64_t> timestamps, WatermarkOutput&) override {
    int64_t m = maxTimestamp_;
    for (int64_t t : timestamps) m = t > m ? t : m;
    maxTimestamp_ = m;
  }
  void onPeriodicEmit(WatermarkOutput& output) override { output.emitWatermark(maxTimestamp_ - outOfOrderness_ - 1); }

 private:
  int64_t outOfOrderness_;
  int64_t maxTimestamp_;
};

// Timestamps that never decrease: bounded out-of-orderness of zero.
template <class T>
class AscendingTimestampsWatermarks : public BoundedOutOfOrdernessWatermarks<T> {
 public:
  AscendingTimestampsWatermarks() : BoundedOutOfOrdernessWatermarks<T>(0) {}
};

template <class T>
class WatermarkStrategy {
 public:
  using GeneratorFactory = std::function<std::unique_ptr<WatermarkGenerator<T>>()>;
  // Fills timestamps[i] for events[i]; one call per batch.
  using BatchAssigner = std::function<void(std::span<const T> events, std::span<int64_t> timestamps)>;

  // Records carry no event time and no watermarks are emitted.
  static WatermarkStrategy noWatermarks() { return WatermarkStrategy(); }

  // For timestamps that never decrease.
  static WatermarkStrategy forMonotonousTimestamps() {
    WatermarkStrategy s;
    s.generator_ = [] { return std::make_unique<AscendingTimestampsWatermarks<T>>(); };
    return s;
  }

  // For records at most `maxOutOfOrderness` later than the latest timestamp seen;
  // throws weir::Error when it is negative.
  static WatermarkStrategy forBoundedOutOfOrderness(std::chrono::milliseconds maxOutOfOrderness) {
    if (maxOutOfOrderness.count() < 0)
      throw Error(ErrorCode::kInvalidArgument, "forBoundedOutOfOrderness: the out-of-orderness must not be negative, got " +
                                                   std::to_string(maxOutOfOrderness.count()) + " ms");
    WatermarkStrategy s;
    int64_t ms = maxOutOfOrderness.count();
    s.generator_ = [ms] { return std::make_unique<BoundedOutOfOrdernessWatermarks<T>>(ms); };
    return s;
  }

  // A user generator, created once per source subtask.
  static WatermarkStrategy forGenerator(GeneratorFactory factory) {
    WatermarkStrategy s;
    s.generator_ = std::move(factory);
    return s;
  }

  // Takes each record's event timestamp (ms) from the record: int64_t f(const T&), or
  // Flink's int64_t f(const T&, int64_t recordTimestamp).
  template <class F>
  WatermarkStrategy withTimestampAssigner(F f) const {
    WatermarkStrategy s = *this;
    s.assigner_ = [f](std::span<const T> events, std::span<int64_t> timestamps) mutable {
      for (size_t i = 0; i < events.size(); ++i) {
        if constexpr (std::is_invocable_v<F&, const T&, int64_t>) timestamps[i] = f(events[i], kMinWatermark);
        else timestamps[i] = f(events[i]);
      }
    };
    return s;
  }

  // Marks a source subtask idle after `timeout` without records, so it does not hold the
  // watermark back; throws weir::Error when the timeout is not positive.
  WatermarkStrategy withIdleness(std::chrono::milliseconds timeout) const {
    if (timeout.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "withIdleness: the timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
    WatermarkStrategy s = *this;
    s.idleTimeout_ = timeout;
    return s;
  }

  // Watermark alignment (Flink's withWatermarkAlignment): the sources whose strategies
  // name the same `group` keep within `maxAllowedDrift` of the group's slowest. A split
  // whose watermark is further ahead than that stops being read until the others catch
  // up (a reader that cannot pause single splits pauses its whole source subtask
  // instead). Every `updateInterval` each source subtask reports its watermark and
  // learns the group's smallest. Throws weir::Error for an empty group, a negative
  // drift, an interval that is not positive, or a strategy without watermarks.
  WatermarkStrategy withWatermarkAlignment(std::string group, std::chrono::milliseconds maxAllowedDrift,
                                           std::chrono::milliseconds updateInterval = std::chrono::seconds(1)) const {
    if (group.empty()) throw Error(ErrorCode::kInvalidArgument, "withWatermarkAlignment: the group name must not be empty");
    if (maxAllowedDrift.count() < 0)
      throw Error(ErrorCode::kInvalidArgument, "withWatermarkAlignment: the allowed drift must not be negative, got " +
                                                   std::to_string(maxAllowedDrift.count()) + " ms");
    if (updateInterval.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument, "withWatermarkAlignment: the update interval must be positive, got " +
                                                   std::to_string(updateInterval.count()) + " ms");
    if (!generator_)
      throw Error(ErrorCode::kInvalidArgument,
                  "withWatermarkAlignment: the strategy emits no watermarks (noWatermarks), so there is nothing to align");
    WatermarkStrategy s = *this;
    s.alignment_ = Alignment{std::move(group), maxAllowedDrift, updateInterval};
    return s;
  }
  struct Alignment {
    std::string group;
    std::chrono::milliseconds maxAllowedDrift;
    std::chrono::milliseconds updateInterval;
  };

  const GeneratorFactory& generator() const { return generator_; }
  const BatchAssigner& assigner() const { return assigner_; }
  std::chrono::milliseconds idleTimeout() const { return idleTimeout_; }
  const std::optional<Alignment>& alignment() const { return alignment_; }

 private:
  WatermarkStrategy() = default;
  GeneratorFactory generator_;           // empty: no watermarks
  BatchAssigner assigner_;               // empty: records carry no timestamps
  std::chrono::milliseconds idleTimeout_{0};  // 0: never idle
  std::optional<Alignment> alignment_;         // none: not aligned
};

}  // namespace weir
