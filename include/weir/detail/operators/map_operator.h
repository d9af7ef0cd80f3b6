// map(): one record out per record in, the function inlined into the loop over a batch.
#pragma once

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"

namespace weir::detail {

template <class IN, class OUT, class F>
class StreamMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void processBatch(std::span<IN> records, Timestamps timestamps) override {
    if constexpr (std::is_same_v<IN, OUT>) {
      // The batch is ours to consume: map it in place and pass it on.
      try {
        for (auto& r : records) r = callMap(this->fn_, std::move(r));
      } catch (...) {
        this->rethrowAsOperatorFailure();
      }
      this->out_->processBatch(records, timestamps);  // one output per input: same timestamps
    } else {
      this->out_->processBatch(mapInto(records), timestamps);
    }
  }
  bool processSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (MapObject<F, IN> || std::invocable<F&, const IN&>) {
      std::span<OUT> mapped = mapInto(records);
      timestamps_.assign(timestamps.begin(), timestamps.end());
      this->out_->processBatch(mapped, timestamps_);
      return true;
    } else {
      return false;
    }
  }

 private:
  // Maps into buffer_, moving from records unless they are const.
  template <class R>
  std::span<OUT> mapInto(std::span<R> records) {
    auto map = [&](size_t i) {
      if constexpr (std::is_const_v<R>) return callMap(this->fn_, records[i]);
      else return callMap(this->fn_, std::move(records[i]));
    };
    try {
      return fillBuffer(buffer_, records.size(), map);
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
  }

  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;  // of a shared batch
};

}  // namespace weir::detail
