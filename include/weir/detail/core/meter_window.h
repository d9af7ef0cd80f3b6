// The events a meter counted and, on its owner's thread, their rate over a time span
// (Flink's MeterView): the count is remembered once a second, and the rate is the count
// since the newest remembered one at least a span old (the oldest, before a span has
// passed), over the time between.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>

namespace weir::detail {

class MeterWindow {
 public:
  using Clock = std::chrono::steady_clock;

  MeterWindow(std::chrono::seconds span, Clock::time_point now) : span_(span) { points_.emplace_back(now, 0); }

  void mark(uint64_t n) { count_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }  // any thread

  // The owner's thread: events per second up to `now`.
  double rate(Clock::time_point now) {
    const uint64_t count = this->count();
    if (now - points_.back().first >= std::chrono::seconds(1)) points_.emplace_back(now, count);
    while (points_.size() > 1 && points_[1].first <= now - span_) points_.pop_front();
    const auto& [since, then] = points_.front();
    const double seconds = std::chrono::duration<double>(now - since).count();
    return seconds > 0 ? static_cast<double>(count - then) / seconds : 0;
  }

 private:
  std::chrono::seconds span_;
  std::atomic<uint64_t> count_{0};
  std::deque<std::pair<Clock::time_point, uint64_t>> points_;  // the owner's thread
};

}  // namespace weir::detail
