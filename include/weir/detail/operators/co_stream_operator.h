// The operator behind first.connect(second).map/flatMap/process(...).
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

// Runs a CoMapFunction, CoFlatMapFunction or CoProcessFunction on two inputs.
template <class IN1, class IN2, class F>
class CoStreamOperator final : public CollectingOperator<IN1, typename F::OutputType, F> {
  using OUT = typename F::OutputType;
  using Context = typename ProcessFunction<IN1, OUT>::Context;

 public:
  using CollectingOperator<IN1, OUT, F>::CollectingOperator;

  OutputBase* secondInput() override { return &second_; }
  void processBatch(std::span<IN1> records, Timestamps timestamps) override { process<1>(records, timestamps); }
  void processSecond(std::span<IN2> records, Timestamps timestamps) { process<2>(records, timestamps); }
  void processWatermark(int64_t watermark) override {
    watermark_ = watermark;
    this->forwardWatermark(watermark);
  }

 private:
  template <int kInput, class R>
  void process(std::span<R> records, Timestamps timestamps) {
    Context ctx(&this->sideOutputs_, &watermark_, this->context().clock().get());
    this->forEachRecord(records, timestamps, ctx, [&](const R& r, Collector<OUT>& out) {
      if constexpr (std::is_base_of_v<CoMapFunction<IN1, IN2, OUT>, F>) {
        if constexpr (kInput == 1) out.collect(this->fn_.map1(r));
        else out.collect(this->fn_.map2(r));
      } else if constexpr (std::is_base_of_v<CoFlatMapFunction<IN1, IN2, OUT>, F>) {
        if constexpr (kInput == 1) this->fn_.flatMap1(r, out);
        else this->fn_.flatMap2(r, out);
      } else {
        if constexpr (kInput == 1) this->fn_.processElement1(r, ctx, out);
        else this->fn_.processElement2(r, ctx, out);
      }
    });
  }

  SecondInput<IN2, CoStreamOperator> second_{this};
  int64_t watermark_ = std::numeric_limits<int64_t>::min();
};

}  // namespace weir::detail
