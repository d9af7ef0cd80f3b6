#pragma once

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/operators/collecting_operator.h"

namespace weir::detail {

// Runs a ProcessFunction (or a lambda with its signature), with side outputs.
template <class IN, class OUT, class F>
class ProcessOperator final : public CollectingOperator<IN, OUT, F> {
 public:
  using CollectingOperator<IN, OUT, F>::CollectingOperator;
  using Context = typename ProcessFunction<IN, OUT>::Context;

  void processBatch(std::span<IN> records, Timestamps timestamps) override { run(records, timestamps); }
  bool processSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (kReadsConst) {
      run(records, timestamps);
      return true;
    } else {
      return false;
    }
  }

  void processWatermark(int64_t watermark) override {
    watermark_ = watermark;
    this->forwardWatermark(watermark);
  }

 private:
  static constexpr bool kReadsConst =
      requires(F& f, const IN& r, Context& c, Collector<OUT>& out) { f.processElement(r, c, out); } ||
      std::invocable<F&, const IN&, Context&, Collector<OUT>&>;

  template <class R>
  void run(std::span<R> records, std::span<const int64_t> timestamps) {
    Context ctx(&this->sideOutputs_, &watermark_, this->context().clock().get());
    this->forEachRecord(records, timestamps, ctx, [&](R& r, Collector<OUT>& collector) {
      if constexpr (requires { this->fn_.processElement(r, ctx, collector); }) {
        this->fn_.processElement(r, ctx, collector);
      } else {
        std::invoke(this->fn_, r, ctx, collector);
      }
    });
  }

  int64_t watermark_ = INT64_MIN;
};

}  // namespace weir::detail
