// Where records leave an operator of a chain (Flink's CountingOutput): what it emitted
// there is its operator-scoped numRecordsOut and currentOutputWatermark, and the
// numRecordsIn and currentInputWatermark of the operators it feeds.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "weir/detail/core/output.h"

namespace weir::detail {

// What one output of an operator (its main output, or one side output) emitted. Written
// by the subtask's thread only, read by any.
struct EmittedCounts {
  std::atomic<uint64_t> records{0};
  std::atomic<int64_t> watermark{INT64_MIN};  // the last one passed on; INT64_MIN before the first

  // A single writer: a load and a store, no read-modify-write.
  void add(size_t n) { records.store(records.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
};

// Counts what passes, then hands it on unchanged: one addition per batch.
template <class T>
class CountingOutput final : public Output<T> {
 public:
  CountingOutput(Output<T>* target, EmittedCounts* counts) : target_(target), counts_(counts) {}

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    counts_->add(records.size());
    target_->processBatch(records, timestamps);
  }
  bool processSharedBatch(std::span<const T> records, std::span<const int64_t> timestamps) override {
    if (!target_->processSharedBatch(records, timestamps)) return false;
    counts_->add(records.size());
    return true;
  }
  void endInput() override { target_->endInput(); }
  void processWatermark(int64_t watermark) override {
    counts_->watermark.store(watermark, std::memory_order_relaxed);
    target_->processWatermark(watermark);
  }
  void processIdleness(bool idle) override { target_->processIdleness(idle); }

 private:
  Output<T>* target_;
  EmittedCounts* counts_;
};

}  // namespace weir::detail
