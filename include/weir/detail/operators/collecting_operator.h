#pragma once

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"

namespace weir::detail {

// An operator whose function emits through a Collector and to side outputs: owns the
// buffers, discards what a failing call had collected, stamps outputs with the time of
// the record or timer that made them, and passes events on to the side outputs too.
template <class IN, class OUT, class F>
class CollectingOperator : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;

  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    sideOutputs_.add(tagIndex, std::move(out));
  }
  void endInput() override {
    sideOutputs_.endInput();
    this->out_->endInput();
  }
  void processIdleness(bool idle) override {
    sideOutputs_.processIdleness(idle);
    this->out_->processIdleness(idle);
  }

 protected:
  // Runs `body(collector)`; whatever it throws fails the operator.
  template <class Body>
  void collecting(Body&& body) {
    Collector<OUT> collector(&buffer_, &timestamps_, this->out_, kBatchRecords<OUT>);
    try {
      body(collector);
    } catch (...) {
      buffer_.clear();
      timestamps_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
    sideOutputs_.flush();
  }
  // Calls call(record, collector) for each record, inside collecting(); what it emits,
  // and ctx.timestamp(), carry the record's timestamp.
  template <class R, class Context, class Call>
  void forEachRecord(std::span<R> records, std::span<const int64_t> timestamps, Context& ctx, Call call) {
    collecting([&](Collector<OUT>& collector) {
      for (size_t i = 0; i < records.size(); ++i) {
        if (!timestamps.empty()) {
          stamp(collector, timestamps[i]);
          ctx.setTimestamp(timestamps[i]);
        }
        call(records[i], collector);
      }
    });
  }
  // What is collected next carries `timestamp`.
  void stamp(Collector<OUT>& collector, int64_t timestamp) {
    collector.setTimestamp(true, timestamp);
    sideOutputs_.setTimestamp(true, timestamp);
  }
  void forwardWatermark(int64_t watermark) {
    sideOutputs_.processWatermark(watermark);
    this->out_->processWatermark(watermark);
  }

  SideOutputs sideOutputs_;

 private:
  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
};

}  // namespace weir::detail
