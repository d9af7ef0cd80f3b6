// The operator at the end of a chain that writes into a Sink: it hands every batch to
// the sink's writer and flushes the writer at each checkpoint barrier.
#pragma once

#include <memory>
#include <span>

#include "weir/checkpoint_listener.h"
#include "weir/checkpointed_function.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/sink.h"

namespace weir::detail {

// The tail of a chain that ends in a sink: hands batches to the sink's writer.
template <class T>
class SinkOperator : public StreamOperator, public Output<T> {
 public:
  explicit SinkOperator(std::shared_ptr<const Sink<T>> sink) : sink_(std::move(sink)) {}

  OutputBase* input() override { return this; }
  void setOutput(OutputBase*) override {}

  void open() override {
    writer_ = callUser([&] { return sink_->createWriter(*context_); });
    listener_ = dynamic_cast<CheckpointListener*>(writer_.get());
    checkpointed_ = dynamic_cast<CheckpointedFunction*>(writer_.get());
    if (checkpointed_) {
      auto& registry = context_->operatorState();
      FunctionInitializationContext init(registry.isRestored(), OperatorStateStore(&registry));
      callUser([&] { checkpointed_->initializeState(init); });
    }
  }

  // At the barrier the writer flushes (at-least-once: nothing before the barrier stays
  // buffered) and, if it is a CheckpointedFunction, snapshots.
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    callUser([&] { writer_->flush(false); });
    snapshotWriter(checkpointId, timestamp, out);
  }
  void notifyCheckpointComplete(int64_t checkpointId) override {
    if (listener_) callUser([&] { listener_->notifyCheckpointComplete(checkpointId); });
  }
  void notifyCheckpointAborted(int64_t checkpointId) override {
    if (listener_) callUser([&] { listener_->notifyCheckpointAborted(checkpointId); });
  }

  void processBatch(std::span<T> records, Timestamps) override {
    metrics_->numRecordsOut.fetch_add(records.size(), std::memory_order_relaxed);
    callUser([&] { writer_->writeBatch(records); });
  }
  void processWatermark(int64_t) override {}
  void processIdleness(bool) override {}

  void endInput() override {
    callUser([&] { writer_->flush(true); });
  }

  void close() override {
    if (writer_) callUser([&] { writer_->close(); });
  }

 protected:
  // The writer's own operator state (a CheckpointedFunction writer), and then the
  // operator state into `out`.
  void snapshotWriter(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) {
    if (checkpointed_)
      callUser([&] { checkpointed_->snapshotState(FunctionSnapshotContext(checkpointId, timestamp)); });
    StreamOperator::snapshotState(checkpointId, timestamp, out);
  }

  std::shared_ptr<const Sink<T>> sink_;
  std::unique_ptr<SinkWriter<T>> writer_;
  CheckpointListener* listener_ = nullptr;
  CheckpointedFunction* checkpointed_ = nullptr;
};

}  // namespace weir::detail
