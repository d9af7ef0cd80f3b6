#pragma once

#include <absl/container/flat_hash_map.h>

#include "weir/detail/operators/collecting_operator.h"
#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/state_factory.h"
#include "weir/detail/time/timer_queue.h"
#include "weir/key_group.h"
#include "weir/keyed_process_function.h"
#include "weir/detail/operators/keyed_function_operator.h"

namespace weir::detail {

// Runs a KeyedProcessFunction.
template <class T, class K, class KeySelector, class F>
class KeyedProcessOperator final : public KeyedFunctionOperator<T, typename F::OutputType, K, KeySelector, F> {
  using Base = KeyedFunctionOperator<T, typename F::OutputType, K, KeySelector, F>;

 public:
  using Base::Base;

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    typename F::Context ctx(this, &this->sideOutputs_);
    this->forEachKeyed(records, timestamps, ctx, [&](const T& r, auto& collector) {
      this->fn_.processElement(r, ctx, collector);
    });
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
};

}  // namespace weir::detail
