// The values a histogram keeps: the last `size` it was given, a ring (Flink's
// DescriptiveStatisticsHistogram), and the count and sum of every value given.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace weir::detail {

class HistogramWindow {
 public:
  explicit HistogramWindow(size_t size) : size_(size) {}
  // A copy, made where add() could be called.
  HistogramWindow(const HistogramWindow& o)
      : size_(o.size_), values_(o.values_), next_(o.next_), sum_(o.sum_), count_(o.count()) {}
  HistogramWindow& operator=(const HistogramWindow&) = delete;

  // The owner's thread, as values() and sum().
  void add(int64_t value) {
    if (values_.size() < size_) values_.push_back(value);
    else values_[next_] = value;
    next_ = (next_ + 1) % size_;
    sum_ += static_cast<double>(value);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  const std::vector<int64_t>& values() const { return values_; }  // in no order
  double sum() const { return sum_; }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }  // any thread

 private:
  size_t size_;
  std::vector<int64_t> values_;
  size_t next_ = 0;
  double sum_ = 0;
  std::atomic<uint64_t> count_{0};
};

}  // namespace weir::detail
