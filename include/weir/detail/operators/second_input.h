#pragma once

#include <span>

#include "weir/detail/core/output.h"

namespace weir::detail {

// The second input of a two-input operator: hands its batches to the operator's
// processSecond. Watermarks, idleness and the end of input arrive combined at the first.
template <class IN2, class Owner>
class SecondInput final : public Output<IN2> {
 public:
  explicit SecondInput(Owner* owner) : owner_(owner) {}
  void processBatch(std::span<IN2> records, Timestamps timestamps) override { owner_->processSecond(records, timestamps); }
  void endInput() override {}
  void processWatermark(int64_t) override {}
  void processIdleness(bool) override {}

 private:
  Owner* owner_;
};

}  // namespace weir::detail
