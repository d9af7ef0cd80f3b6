#include "weir/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "weir/detail/core/histogram_window.h"
#include "weir/error.h"

namespace weir {

HistogramStatistics::HistogramStatistics(std::vector<int64_t> values) : sorted_(std::move(values)) {
  std::sort(sorted_.begin(), sorted_.end());
}

double HistogramStatistics::getQuantile(double q) const {
  if (!(q >= 0 && q <= 1))
    throw Error(ErrorCode::kInvalidArgument, "histogram: a quantile is between 0 and 1, not " + std::to_string(q));
  const size_t n = sorted_.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(n + 1);
  if (pos < 1) return static_cast<double>(sorted_.front());
  if (pos >= static_cast<double>(n)) return static_cast<double>(sorted_.back());
  const double floor = std::floor(pos);
  const auto lower = static_cast<double>(sorted_[static_cast<size_t>(floor) - 1]);
  const auto upper = static_cast<double>(sorted_[static_cast<size_t>(floor)]);
  return lower + (pos - floor) * (upper - lower);
}

double HistogramStatistics::getMean() const {
  if (sorted_.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (int64_t v : sorted_) sum += static_cast<double>(v);
  return sum / static_cast<double>(sorted_.size());
}

double HistogramStatistics::getStdDev() const {
  const size_t n = sorted_.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  if (n == 1) return 0;
  const double mean = getMean();
  double squares = 0;
  for (int64_t v : sorted_) squares += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  return std::sqrt(squares / static_cast<double>(n - 1));
}

int64_t HistogramStatistics::getMin() const { return sorted_.empty() ? 0 : sorted_.front(); }
int64_t HistogramStatistics::getMax() const { return sorted_.empty() ? 0 : sorted_.back(); }

void Histogram::update(int64_t value) const {
  if (window_ != nullptr) window_->add(value);
}

uint64_t Histogram::getCount() const { return window_ != nullptr ? window_->count() : 0; }

HistogramStatistics Histogram::getStatistics() const {
  return window_ != nullptr ? HistogramStatistics(window_->values()) : HistogramStatistics();
}

}  // namespace weir
