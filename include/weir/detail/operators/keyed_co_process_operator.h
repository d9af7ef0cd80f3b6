// The operator behind keyed1.connect(keyed2).process(...) and intervalJoin: two keyed
// inputs with the same key type share one keyed state backend and one set of timers.
#pragma once

#include <algorithm>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "weir/co_process_function.h"
#include "weir/detail/operators/collecting_operator.h"
#include "weir/detail/operators/keyed_function_operator.h"
#include "weir/detail/operators/second_input.h"
#include "weir/output_tag.h"
#include "weir/state_descriptor.h"
#include "weir/windows.h"

namespace weir::detail {

// Runs a KeyedCoProcessFunction<K, IN1, IN2, OUT>: each record's key (by its input's key
// selector) is current while the function sees it. In a batch job both inputs come
// grouped by key, together (docs/batch.md).
template <class IN1, class IN2, class K, class Selector1, class Selector2, class F>
class KeyedCoProcessOperator final : public KeyedFunctionOperator<IN1, typename F::OutputType, K, Selector1, F, IN2> {
  using OUT = typename F::OutputType;
  using Base = KeyedFunctionOperator<IN1, OUT, K, Selector1, F, IN2>;

 public:
  KeyedCoProcessOperator(Selector1 first, Selector2 second, F fn)
      : Base(std::move(first), std::move(fn)), secondSelector_(std::move(second)) {}

  OutputBase* secondInput() override { return &second_; }
  void open() override {
    if constexpr (requires { this->fn_.countLateRecordsIn(&this->metrics_->numLateRecordsDropped, nullptr); })
      this->fn_.countLateRecordsIn(&this->metrics_->numLateRecordsDropped,
                                   this->metrics_->registry.builtInCounter(this->metricScope(), "numLateRecordsDropped"));
    Base::open();
  }

  void processBatch(std::span<IN1> records, Timestamps timestamps) override {
    typename F::Context ctx(this, &this->sideOutputs_);
    this->forEachKeyed(records, timestamps, ctx,
                       [&](const IN1& r, Collector<OUT>& c) { this->fn_.processElement1(r, ctx, c); });
  }
  void processSecond(std::span<IN2> records, Timestamps timestamps) {
    typename F::Context ctx(this, &this->sideOutputs_);
    this->forEachKeyedSecond(records, timestamps, secondSelector_, ctx,
                             [&](const IN2& r, Collector<OUT>& c) { this->fn_.processElement2(r, ctx, c); });
  }
  void processWatermark(int64_t watermark) override {
    typename F::OnTimerContext ctx(this, &this->sideOutputs_);
    this->advanceWatermark(watermark, ctx);
  }
  void onProcessingTime(int64_t time) override {
    typename F::OnTimerContext ctx(this, &this->sideOutputs_);
    this->advanceProcessingTime(time, ctx);
  }

 protected:
  bool sortsInputInBatch() const override { return true; }
  void processSortedSecond(std::span<IN2> records, Timestamps timestamps) override { processSecond(records, timestamps); }

 private:
  Selector2 secondSelector_;
  SecondInput<IN2, KeyedCoProcessOperator> second_{this};
};

}  // namespace weir::detail
