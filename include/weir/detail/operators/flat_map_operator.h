// flatMap(): any number of records out per record in, through a Collector.
#pragma once

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"

namespace weir::detail {

template <class IN, class OUT, class F>
class StreamFlatMap final : public UdfOperator<IN, OUT, F> {
 public:
  using UdfOperator<IN, OUT, F>::UdfOperator;
  void processBatch(std::span<IN> records, Timestamps timestamps) override { run(records, timestamps); }
  bool processSharedBatch(std::span<const IN> records, std::span<const int64_t> timestamps) override {
    if constexpr (FlatMapObject<F, IN, OUT> || std::invocable<F&, const IN&, Collector<OUT>&>) {
      run(records, timestamps);
      return true;
    } else {
      return false;
    }
  }

 private:
  // Calls the function on each record, moving from it unless it is const.
  template <class R>
  void run(std::span<R> records, std::span<const int64_t> timestamps) {
    Collector<OUT> collector(&buffer_, &timestamps_, this->out_, kBatchRecords<OUT>);
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        if (!timestamps.empty()) collector.setTimestamp(true, timestamps[i]);
        if constexpr (std::is_const_v<R>) callFlatMap(this->fn_, records[i], collector);
        else callFlatMap(this->fn_, std::move(records[i]), collector);
      }
    } catch (...) {
      buffer_.clear();
      timestamps_.clear();
      this->rethrowAsOperatorFailure();
    }
    collector.flush();
  }

  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
};

}  // namespace weir::detail
