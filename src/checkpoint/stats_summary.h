// One figure of the checkpoints (a size, a duration) summed up as Flink's REST API shows
// it: the smallest, largest and average over every value, and percentiles over the last
// 10,000 (Flink's StatsSummary over a DescriptiveStatisticsHistogram, the window
// user histograms keep).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "weir/detail/core/histogram_window.h"
#include "weir/histogram.h"

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
    window_.add(value);
  }

  Snapshot snapshot() const {
    const HistogramStatistics window(window_.values());
    Snapshot s;
    if (count_ > 0) {
      s.min = min_;
      s.max = max_;
      s.avg = sum_ / count_;  // integer division, as Flink's
    }
    s.p50 = window.getQuantile(0.5);
    s.p90 = window.getQuantile(0.9);
    s.p95 = window.getQuantile(0.95);
    s.p99 = window.getQuantile(0.99);
    s.p999 = window.getQuantile(0.999);
    return s;
  }

 private:
  int64_t min_ = 0, max_ = 0, sum_ = 0, count_ = 0;
  detail::HistogramWindow window_{kWindow};
};

}  // namespace weir::checkpoint
