// A distribution an operator measures (Flink's Histogram):
// getRuntimeContext().getMetricGroup().histogram("latencyMs") keeps the last 1,000
// values it was given, as Flink's DescriptiveStatisticsHistogram does, and shows their
// quantiles in the REST API and /metrics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weir {

namespace detail {
class HistogramWindow;
}

// Statistics over the values a histogram holds (Flink's HistogramStatistics).
class HistogramStatistics {
 public:
  HistogramStatistics() = default;  // over no values
  explicit HistogramStatistics(std::vector<int64_t> values);

  // The q-quantile, 0 <= q <= 1, as Flink computes it (Commons Math's Percentile, its
  // legacy estimate): the position q * (n + 1) in the sorted values, interpolated
  // between its neighbours. NaN over no values; throws weir::Error (kInvalidArgument)
  // for a q outside [0, 1].
  double getQuantile(double q) const;
  const std::vector<int64_t>& getValues() const { return sorted_; }  // ascending
  size_t size() const { return sorted_.size(); }
  double getMean() const;    // NaN over no values
  double getStdDev() const;  // the sample standard deviation (n - 1); 0 for one value, NaN for none
  int64_t getMin() const;    // 0 over no values
  int64_t getMax() const;

 private:
  std::vector<int64_t> sorted_;
};

// One histogram of a subtask's metric group. Update it from the subtask's own thread
// (where the operator's functions run); the REST API and /metrics show the statistics
// the subtask computed at its last metrics interval.
class Histogram {
 public:
  Histogram() = default;  // not attached to a subtask: keeps nothing
  explicit Histogram(detail::HistogramWindow* window) : window_(window) {}
  void update(int64_t value) const;
  // Every value given so far, not only those kept. Any thread.
  uint64_t getCount() const;
  // Over the values kept. The subtask's thread.
  HistogramStatistics getStatistics() const;

 private:
  detail::HistogramWindow* window_ = nullptr;
};

}  // namespace weir
