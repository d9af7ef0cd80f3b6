// What the two keyed window operators (window_operator.h's and
// trigger_window_operator.h's) share: the window function in its policy, the watermark
// and its checkpointing, the output buffer, and where late records go.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/window/window_functions.h"
#include "weir/serializer.h"

namespace weir::detail {

// A window subtask's watermark decides which records are late: checkpoints keep each
// subtask's in union operator state, so a restore starts from it rather than from the
// beginning of time and judges replayed records as they were judged.
inline constexpr const char* kWindowWatermarkState = "_watermark";
inline void snapshotWindowWatermark(RuntimeContext& context, int64_t watermark, OperatorSnapshot& out) {
  DataOutput bytes;
  bytes.write(static_cast<int32_t>(context.getIndexOfThisSubtask()));
  bytes.write(watermark);
  out.operatorState.push_back({kWindowWatermarkState, OperatorStateMode::kUnion, {bytes.data()}});
}
// The restored watermark: at the same parallelism a subtask's own, after rescaling the
// smallest (keys from any old subtask may come here); INT64_MIN when there is none.
inline int64_t restoreWindowWatermark(RestoredOperatorState& restored, RuntimeContext& context) {
  const auto* list = restored.operatorList(kWindowWatermarkState);
  if (list == nullptr || list->empty()) return std::numeric_limits<int64_t>::min();
  int64_t smallest = std::numeric_limits<int64_t>::max();
  std::optional<int64_t> own;
  for (const std::string& entry : *list) {
    DataInput in(entry);
    int32_t subtask = in.read<int32_t>();
    int64_t watermark = in.read<int64_t>();
    smallest = std::min(smallest, watermark);
    if (subtask == context.getIndexOfThisSubtask()) own = watermark;
  }
  bool sameParallelism = static_cast<int>(list->size()) == context.getNumberOfParallelSubtasks();
  return sameParallelism && own ? *own : smallest;
}

// Why a batch job refuses windows in processing time: which window a record falls in
// would depend on when the job happens to read it (docs/batch.md).
inline constexpr const char* kProcessingTimeWindowsInBatch =
    "its windows are in processing time, which gives a batch job no repeatable result; use event-time windows";

// The base of both keyed window operators.
template <class T, class Policy>
class WindowOperatorBase : public OneInputOperator<T, typename Policy::Out> {
 protected:
  using OUT = typename Policy::Out;
  WindowOperatorBase(Policy policy, int lateTag) : policy_(std::move(policy)), lateTag_(lateTag) {}

 public:
  void close() override {
    this->callUser([&] { closeFunction(policy_.fn); });
  }
  void notifyCheckpointComplete(int64_t checkpointId) override {
    this->callUser([&] { notifyFunction(policy_.fn, checkpointId, true); });
  }
  void notifyCheckpointAborted(int64_t checkpointId) override {
    this->callUser([&] { notifyFunction(policy_.fn, checkpointId, false); });
  }
  void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) override {
    if (tagIndex == lateTag_) late_ = out.get();
    sideOutputs_.add(tagIndex, std::move(out));
  }
  void processIdleness(bool idle) override {
    sideOutputs_.processIdleness(idle);
    this->out_->processIdleness(idle);
  }
  void endInput() override {
    sideOutputs_.endInput();
    this->out_->endInput();
  }

 protected:
  // From open(): the operator's numLateRecordsDropped (Flink's WindowOperator metric).
  void registerLateRecordsMetric() {
    lateRecordsDropped_ = this->metrics_->registry.builtInCounter(this->metricScope(), "numLateRecordsDropped");
  }
  // Event-time windows cannot place records without timestamps.
  void requireTimestamps(size_t records, Timestamps timestamps) const {
    if (timestamps.empty() && records > 0)
      throw OperatorFailure(this->name(), this->context_->getIndexOfThisSubtask(),
                            this->context_->getNumberOfParallelSubtasks(),
                            "event-time windows need timestamps: give the source a WatermarkStrategy with "
                            "withTimestampAssigner");
  }
  Collector<OUT> collector() { return Collector<OUT>(&buffer_, &timestamps_, this->out_, kBatchRecords<OUT>); }
  // In a catch block: drops what the batch buffered and fails as the operator.
  [[noreturn]] void failBatch() {
    buffer_.clear();
    timestamps_.clear();
    this->rethrowAsOperatorFailure();
  }
  void forwardWatermark(int64_t watermark) {
    sideOutputs_.processWatermark(watermark);
    this->out_->processWatermark(watermark);
  }
  // A record too late for all its windows: to the late-data side output, or counted.
  void dropLate(T& record, int64_t timestamp) {
    if (late_) {
      sideOutputs_.setTimestamp(true, timestamp);
      static_cast<SideOutput<T>*>(late_)->collect(record);
    } else {
      this->metrics_->numLateRecordsDropped.fetch_add(1, std::memory_order_relaxed);
      lateRecordsDropped_->fetch_add(1, std::memory_order_relaxed);
    }
  }

  Policy policy_;
  int64_t watermark_ = std::numeric_limits<int64_t>::min();
  SideOutputs sideOutputs_;

 private:
  int lateTag_;
  SideOutputBase* late_ = nullptr;
  std::atomic<uint64_t>* lateRecordsDropped_ = nullptr;  // this operator's; the subtask's counts every window's
  std::vector<OUT> buffer_;
  std::vector<int64_t> timestamps_;
};

}  // namespace weir::detail
