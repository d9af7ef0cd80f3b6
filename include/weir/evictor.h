// Evictors: remove records from a window when it fires, before and/or after the window
// function sees them (Flink's Evictor). A window with an evictor keeps every record (with
// its timestamp) instead of one accumulator, since what is evicted is only known when
// it fires; what remains after the firing stays in the window.
//
// An evictor is a copyable object with
//   void evictBefore(std::vector<TimestampedValue<T>>& elements, const W& window, const EvictorContext& ctx)
//   void evictAfter(std::vector<TimestampedValue<T>>& elements, const W& window, const EvictorContext& ctx)
// that erase from `elements` (in the order the records arrived).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "weir/error.h"
#include "weir/serializer.h"

namespace weir {

// A record with its event timestamp, if it has one.
template <class T>
struct TimestampedValue {
  T value;
  int64_t timestamp = 0;
  bool timestamped = false;
  const T& getValue() const { return value; }
  int64_t getTimestamp() const { return timestamp; }
  bool hasTimestamp() const { return timestamped; }
  bool operator==(const TimestampedValue&) const = default;
};

template <Serializable T>
struct Serializer<TimestampedValue<T>> {
  static constexpr std::size_t kMinEncodedSize = detail::minEncodedSize<T>() + sizeof(int64_t) + 1;
  static void serialize(const TimestampedValue<T>& v, DataOutput& out) {
    Serializer<T>::serialize(v.value, out);
    out.write(v.timestamp);
    out.write(v.timestamped);
  }
  static TimestampedValue<T> deserialize(DataInput& in) {
    T value = Serializer<T>::deserialize(in);
    int64_t timestamp = in.read<int64_t>();
    return {std::move(value), timestamp, in.read<bool>()};
  }
  static TypeSchema schema() { return detail::indexedSchema<T, int64_t, bool>("TimestampedValue"); }
};

// What an evictor can read besides the window.
struct EvictorContext {
  int64_t currentProcessingTime;
  int64_t currentWatermark;
};

namespace detail {
// An evictor that evicts either before or after the window function (Derived::evict).
template <class Derived>
class EvictBeforeOrAfter {
 public:
  template <class T, class W>
  void evictBefore(std::vector<TimestampedValue<T>>& elements, const W&, const EvictorContext&) const {
    if (!after_) static_cast<const Derived&>(*this).evict(elements);
  }
  template <class T, class W>
  void evictAfter(std::vector<TimestampedValue<T>>& elements, const W&, const EvictorContext&) const {
    if (after_) static_cast<const Derived&>(*this).evict(elements);
  }

 protected:
  explicit EvictBeforeOrAfter(bool after) : after_(after) {}

 private:
  bool after_;
};
}  // namespace detail

// Keeps the last `maxCount` records of a window.
class CountEvictor : public detail::EvictBeforeOrAfter<CountEvictor> {
 public:
  // Evicts before the window function unless `doEvictAfter`. Throws weir::Error when
  // maxCount ≤ 0.
  static CountEvictor of(int64_t maxCount, bool doEvictAfter = false) {
    if (maxCount <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "CountEvictor: the count must be positive, got " + std::to_string(maxCount));
    return CountEvictor(maxCount, doEvictAfter);
  }

 private:
  friend class detail::EvictBeforeOrAfter<CountEvictor>;
  CountEvictor(int64_t maxCount, bool after) : EvictBeforeOrAfter(after), maxCount_(maxCount) {}
  template <class T>
  void evict(std::vector<TimestampedValue<T>>& elements) const {
    if (static_cast<int64_t>(elements.size()) > maxCount_)
      elements.erase(elements.begin(), elements.end() - maxCount_);
  }
  int64_t maxCount_;
};

// Keeps the records of a window no more than `windowSize` older than its newest record
// (by timestamp): those at or before newest − windowSize go. Records without timestamps
// are left alone.
class TimeEvictor : public detail::EvictBeforeOrAfter<TimeEvictor> {
 public:
  // Throws weir::Error when windowSize < 0.
  static TimeEvictor of(std::chrono::milliseconds windowSize, bool doEvictAfter = false) {
    if (windowSize.count() < 0)
      throw Error(ErrorCode::kInvalidArgument, "TimeEvictor: the window size must not be negative, got " +
                                                   std::to_string(windowSize.count()) + " ms");
    return TimeEvictor(windowSize.count(), doEvictAfter);
  }

 private:
  friend class detail::EvictBeforeOrAfter<TimeEvictor>;
  TimeEvictor(int64_t size, bool after) : EvictBeforeOrAfter(after), size_(size) {}
  template <class T>
  void evict(std::vector<TimestampedValue<T>>& elements) const {
    int64_t newest = std::numeric_limits<int64_t>::min();
    bool any = false;
    for (const auto& e : elements) {
      if (!e.hasTimestamp()) continue;
      newest = std::max(newest, e.timestamp);
      any = true;
    }
    if (!any) return;
    // newest − size, computed without overflow: a record goes when timestamp + size ≤ newest.
    std::erase_if(elements, [&](const TimestampedValue<T>& e) {
      return e.hasTimestamp() && static_cast<__int128>(e.timestamp) + size_ <= newest;
    });
  }
  int64_t size_;
};

// Evicts the records of a window whose `deltaFunction(record, last)` to the window's last
// record is at least `threshold` (Flink's DeltaEvictor).
template <class T>
class DeltaEvictor : public detail::EvictBeforeOrAfter<DeltaEvictor<T>> {
 public:
  using DeltaFunction = std::function<double(const T& oldPoint, const T& newPoint)>;
  static DeltaEvictor of(double threshold, DeltaFunction deltaFunction, bool doEvictAfter = false) {
    if (!deltaFunction) throw Error(ErrorCode::kInvalidArgument, "DeltaEvictor: the delta function is empty");
    return DeltaEvictor(threshold, std::move(deltaFunction), doEvictAfter);
  }

 private:
  friend class detail::EvictBeforeOrAfter<DeltaEvictor>;
  DeltaEvictor(double threshold, DeltaFunction delta, bool after)
      : detail::EvictBeforeOrAfter<DeltaEvictor>(after), threshold_(threshold), delta_(std::move(delta)) {}
  void evict(std::vector<TimestampedValue<T>>& elements) const {
    if (elements.empty()) return;
    const T last = elements.back().value;
    std::erase_if(elements, [&](const TimestampedValue<T>& e) { return delta_(e.value, last) >= threshold_; });
  }
  double threshold_;
  DeltaFunction delta_;
};

// Whether `E` can evict records of type T from windows of type W.
template <class E, class T, class W>
concept EvictorFor = requires(const E& evictor, std::vector<TimestampedValue<T>>& elements, const W& window,
                              const EvictorContext& ctx) {
  evictor.evictBefore(elements, window, ctx);
  evictor.evictAfter(elements, window, ctx);
};

}  // namespace weir
