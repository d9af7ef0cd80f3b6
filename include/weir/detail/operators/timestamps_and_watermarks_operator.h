// assignTimestampsAndWatermarks: stamps every record with the strategy's timestamp and
// sends the strategy's watermarks in place of those from upstream (as Flink's
// TimestampsAndWatermarksOperator, which also passes on only the final one).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "weir/detail/operators/stream_operator.h"
#include "weir/watermark_strategy.h"

namespace weir::detail {

template <class T>
class TimestampsAndWatermarksOperator final : public OneInputOperator<T, T> {
  using SteadyClock = std::chrono::steady_clock;

 public:
  explicit TimestampsAndWatermarksOperator(WatermarkStrategy<T> strategy) : strategy_(std::move(strategy)) {}

  void setOutput(OutputBase* out) override {
    OneInputOperator<T, T>::setOutput(out);
    output_.out = this->out_;
  }

  void open() override {
    if (strategy_.generator()) generator_ = this->callUser([&] { return strategy_.generator()(); });
    interval_ = this->context().getAutoWatermarkInterval();
    nextPeriodic_ = SteadyClock::now() + interval_;
  }

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    if (strategy_.assigner()) {
      stamps_.resize(records.size());
      this->callUser([&] { strategy_.assigner()(std::span<const T>(records.data(), records.size()), stamps_); });
    } else {
      stamps_.assign(timestamps.begin(), timestamps.end());
    }
    if (generator_ && !stamps_.empty()) {
      // A watermark the generator decides goes out after the batch, never ahead of it.
      output_.defer = true;
      this->callUser([&] { generator_->onBatch(records, stamps_, output_); });
      output_.defer = false;
    }
    this->out_->processBatch(records, stamps_);
    output_.flush();
    // Periodic watermarks ride on the records: a stream without records has no new
    // timestamp to move them anyway.
    auto now = SteadyClock::now();
    if (generator_ && now >= nextPeriodic_) {
      this->callUser([&] { generator_->onPeriodicEmit(output_); });
      nextPeriodic_ = now + interval_;
    }
  }

  // Upstream watermarks give way to this operator's own, except the final one.
  void processWatermark(int64_t watermark) override {
    if (watermark == kMaxWatermark) output_.emitWatermark(watermark);
  }

 private:
  // What the generator writes to: watermarks that move forward go downstream.
  struct Output final : WatermarkOutput {
    detail::Output<T>* out = nullptr;
    int64_t watermark = kMinWatermark;
    int64_t pending = kMinWatermark;
    bool defer = false;
    void emitWatermark(int64_t w) override {
      if (defer) {
        pending = std::max(pending, w);
        return;
      }
      if (w <= watermark) return;
      watermark = w;
      out->processWatermark(w);
    }
    void flush() {
      if (pending > watermark) emitWatermark(pending);
    }
    void markIdle() override { out->processIdleness(true); }
    void markActive() override { out->processIdleness(false); }
  };

  WatermarkStrategy<T> strategy_;
  std::unique_ptr<WatermarkGenerator<T>> generator_;
  std::vector<int64_t> stamps_;
  Output output_;
  std::chrono::milliseconds interval_{200};
  SteadyClock::time_point nextPeriodic_{};
};

}  // namespace weir::detail
