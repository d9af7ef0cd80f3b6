#pragma once

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/stream_operator.h"

namespace weir::detail {

// Keeps the records the predicate accepts, compacting the batch in place (or, for a
// shared batch, copying them out).
template <class T, class F>
class StreamFilter final : public UdfOperator<T, T, F> {
 public:
  using UdfOperator<T, T, F>::UdfOperator;
  void processBatch(std::span<T> records, Timestamps timestamps) override {
    size_t kept = 0;
    const bool stamped = !timestamps.empty();
    try {
      if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= 16) {
        // Branch-free compaction: copy every record, advance only past kept ones.
        for (size_t i = 0; i < records.size(); ++i) {
          bool keep = callFilter(this->fn_, records[i]);
          records[kept] = records[i];
          if (stamped) timestamps[kept] = timestamps[i];
          kept += keep ? 1 : 0;
        }
      } else {
        for (size_t i = 0; i < records.size(); ++i) {
          if (callFilter(this->fn_, records[i])) {
            if (kept != i) {
              records[kept] = std::move(records[i]);
              if (stamped) timestamps[kept] = timestamps[i];
            }
            ++kept;
          }
        }
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    if (kept > 0) this->out_->processBatch(records.first(kept), stamped ? timestamps.first(kept) : timestamps);
  }
  bool processSharedBatch(std::span<const T> records, std::span<const int64_t> timestamps) override {
    kept_.clear();
    keptTimestamps_.clear();
    try {
      for (size_t i = 0; i < records.size(); ++i) {
        if (!callFilter(this->fn_, records[i])) continue;
        kept_.push_back(records[i]);
        if (!timestamps.empty()) keptTimestamps_.push_back(timestamps[i]);
      }
    } catch (...) {
      this->rethrowAsOperatorFailure();
    }
    if (!kept_.empty()) this->out_->processBatch(kept_, keptTimestamps_);
    return true;
  }

 private:
  std::vector<T> kept_;  // of a shared batch
  std::vector<int64_t> keptTimestamps_;
};

}  // namespace weir::detail
