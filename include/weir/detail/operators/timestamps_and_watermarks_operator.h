// assignTimestampsAndWatermarks: stamps every record with the strategy's timestamp and
// sends the strategy's watermarks in place of those from upstream (as Flink's
// TimestampsAndWatermarksOperator, which also passes on only the final one). With
// withIdleness(d), the stream is marked idle once no record came for d of the job's
// processing time (checked by a processing-time timer, as Flink's
// WatermarksWithIdleness), so it does not hold back the watermark downstream; the next
// record or watermark marks it active again.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/watermark_strategy.h"

namespace weir::detail {

template <class T>
class TimestampsAndWatermarksOperator final : public OneInputOperator<T, T>, private ProcessingTimeCallback {
  using SteadyClock = std::chrono::steady_clock;

 public:
  explicit TimestampsAndWatermarksOperator(WatermarkStrategy<T> strategy) : strategy_(std::move(strategy)) {}

  void setOutput(OutputBase* out) override {
    OneInputOperator<T, T>::setOutput(out);
    output_.out = this->out_;
  }

  void open() override {
    // A batch job has no watermark but the final one (docs/batch.md): nothing is late.
    if (strategy_.generator() && !this->context().isBatch())
      generator_ = this->callUser([&] { return strategy_.generator()(); });
    interval_ = this->context().getAutoWatermarkInterval();
    nextPeriodic_ = SteadyClock::now() + interval_;
    idleTimeout_ = this->context().isBatch() ? 0 : strategy_.idleTimeout().count();
    if (generator_ && idleTimeout_ > 0) {
      lastRecord_ = this->context().clock()->currentTimeMillis();
      scheduleIdleCheck();
    }
  }

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    if (idleTimeout_ > 0 && !records.empty()) {
      lastRecord_ = this->context().clock()->currentTimeMillis();
      output_.markActive();
      if (!idleCheckPending_) scheduleIdleCheck();
    }
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
  // ProcessingTimeCallback: the idleness check is due. Idle once no record came for the
  // timeout (a periodic watermark is not emitted then, as in Flink); otherwise checks
  // again when the timeout after the last record ends.
  void onProcessingTime(int64_t time) override {
    idleCheckPending_ = false;
    if (time + 1 - lastRecord_ >= idleTimeout_) {
      this->callUser([&] { output_.markIdle(); });
      return;  // the next record schedules the check again
    }
    scheduleIdleCheck();
  }
  // Asks to be called once the clock reads lastRecord_ + the timeout.
  void scheduleIdleCheck() {
    idleCheckPending_ = true;
    this->context().processingTimeService().registerTimer(lastRecord_ + idleTimeout_ - 1, this);
  }

  // What the generator writes to: watermarks that move forward go downstream; idleness
  // and activity only when they change.
  struct Output final : WatermarkOutput {
    detail::Output<T>* out = nullptr;
    int64_t watermark = kMinWatermark;
    int64_t pending = kMinWatermark;
    bool defer = false;
    bool idle = false;
    void emitWatermark(int64_t w) override {
      if (defer) {
        pending = std::max(pending, w);
        return;
      }
      if (w <= watermark) return;
      markActive();
      watermark = w;
      out->processWatermark(w);
    }
    void flush() {
      if (pending > watermark) emitWatermark(pending);
    }
    void markIdle() override {
      if (idle) return;
      idle = true;
      out->processIdleness(true);
    }
    void markActive() override {
      if (!idle) return;
      idle = false;
      out->processIdleness(false);
    }
  };

  WatermarkStrategy<T> strategy_;
  std::unique_ptr<WatermarkGenerator<T>> generator_;
  std::vector<int64_t> stamps_;
  Output output_;
  std::chrono::milliseconds interval_{200};
  SteadyClock::time_point nextPeriodic_{};
  int64_t idleTimeout_ = 0;         // ms of processing time; 0: never idle
  int64_t lastRecord_ = 0;          // the job clock when the last record came
  bool idleCheckPending_ = false;   // a processing-time timer is registered
};

}  // namespace weir::detail
