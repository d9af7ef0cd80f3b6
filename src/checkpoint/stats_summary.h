// One figure of the checkpoints (a size, a duration) summed up as Flink's REST API shows
// it: the smallest, largest and average over every value, and percentiles over the last
// 10,000 (Flink's StatsSummary over a DescriptiveStatisticsHistogram).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace weir::checkpoint {

class StatsSummary {
 public:
  static constexpr size_t kWindow = 10'000;

  // What the REST API shows; the percentiles are NaN while there is no value.
  struct Snapshot {
    int64_t min = 0, max = 0, avg = 0;
    double p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
  };

  // A negative value (a figure not measured) is left out, as in Flink.
  void add(int64_t value) {
    if (value < 0) return;
    min_ = count_ == 0 ? value : std::min(min_, value);
    max_ = count_ == 0 ? value : std::max(max_, value);
    sum_ += value;
    ++count_;
    if (window_.size() < kWindow) window_.push_back(value);
    else window_[next_] = value;
    next_ = (next_ + 1) % kWindow;
  }

  Snapshot snapshot() const {
    std::vector<int64_t> sorted = window_;
    std::sort(sorted.begin(), sorted.end());
    Snapshot s;
    if (count_ > 0) {
      s.min = min_;
      s.max = max_;
      s.avg = sum_ / count_;  // integer division, as Flink's
    }
    s.p50 = quantile(sorted, 0.5);
    s.p90 = quantile(sorted, 0.9);
    s.p95 = quantile(sorted, 0.95);
    s.p99 = quantile(sorted, 0.99);
    s.p999 = quantile(sorted, 0.999);
    return s;
  }

  // Commons Math's Percentile (the LEGACY estimation Flink uses) over sorted values:
  // the position q * (n + 1), interpolated between its neighbours.
  static double quantile(const std::vector<int64_t>& sorted, double q) {
    const size_t n = sorted.size();
    if (n == 0) return std::numeric_limits<double>::quiet_NaN();
    const double pos = q * static_cast<double>(n + 1);
    if (pos < 1) return static_cast<double>(sorted.front());
    if (pos >= static_cast<double>(n)) return static_cast<double>(sorted.back());
    const double floor = std::floor(pos);
    const auto lower = static_cast<double>(sorted[static_cast<size_t>(floor) - 1]);
    const auto upper = static_cast<double>(sorted[static_cast<size_t>(floor)]);
    return lower + (pos - floor) * (upper - lower);
  }

 private:
  int64_t min_ = 0, max_ = 0, sum_ = 0, count_ = 0;
  std::vector<int64_t> window_;  // the last kWindow values, a ring
  size_t next_ = 0;
};

}  // namespace weir::checkpoint
