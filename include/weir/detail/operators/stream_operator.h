// The operator model: one instance per subtask, driven by the subtask's thread only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "weir/detail/core/operator_failure.h"
#include "weir/detail/core/output.h"
#include "weir/detail/core/type_name.h"
#include "weir/detail/operators/task_metrics.h"
#include "weir/checkpoint_listener.h"
#include "weir/functions.h"
#include "weir/runtime_context.h"

namespace weir::detail {

// Records per buffer between subtasks: channel credits count these buffers.
inline constexpr size_t kBatchSize = 1024;
// Records per batch inside a chain (what a source polls, what an operator hands on):
// kBatchSize, or fewer for records over 32 bytes, so that a batch stays within about
// 32 KiB. Each operator of a chain passes over the whole batch in turn; a batch of
// 1,024 large records (a Nexmark event is 512 bytes) left the cache between passes.
inline constexpr size_t kChainBatchBytes = 32 * 1024;
template <class T>
inline constexpr size_t kBatchRecords = std::clamp<size_t>(kChainBatchBytes / sizeof(T), 16, kBatchSize);

// One parallel instance of an operator. The runtime calls setup(), wires the outputs,
// then open(); records arrive through input(); endInput() runs once, then close().
class StreamOperator {
 public:
  virtual ~StreamOperator() = default;

  void setup(RuntimeContext* context, TaskMetrics* metrics) {
    context_ = context;
    metrics_ = metrics;
    metricScope_ = metrics->registry.operatorScope(context->getTaskName());
    context->setMetricGroup(
        OperatorMetricGroup(MetricGroup(&metrics->registry, metricScope_),
                            OperatorIOMetricGroup(Counter(&metrics->numBytesIn), Counter(&metrics->numBytesOut)),
                            Counter(&metrics->numRecordsInErrors)));
  }
  virtual void open() {}
  virtual void close() {}

  // Where upstream hands this operator its records; null for sources.
  virtual OutputBase* input() = 0;
  // A two-input operator's second input (records only: watermarks, idleness and the end
  // of input, combined over both inputs, arrive at input()).
  virtual OutputBase* secondInput() { return nullptr; }
  // The main output; the runtime passes an Output<OUT> of the operator's type.
  virtual void setOutput(OutputBase* out) = 0;
  // A side output for tag `tagIndex`; only process operators have them.
  virtual void addSideOutput(int tagIndex, std::unique_ptr<SideOutputBase> out) {
    throw Error(ErrorCode::kInvalidJob,
                "operator '" + name() + "' has no side outputs; only process() can emit them");
  }

  const std::string& name() const { return context_->getTaskName(); }
  RuntimeContext& context() { return *context_; }
  // The name this operator's metrics go under in its subtask (see operatorScope).
  const std::string& metricScope() const { return metricScope_; }
  // A fused run (FusedOperator): the count of records that reached its stage `stage`
  // (1 or more), or null when that is what reached the stage before it (no filter
  // between them). Other operators have no stages.
  virtual const std::atomic<uint64_t>* fusedStageInput(size_t /*stage*/) const { return nullptr; }

  // Why this operator cannot run in RuntimeExecutionMode::BATCH, or empty when it can.
  virtual std::string batchUnsupportedReason() const { return ""; }
  // Checkpoints. Why this operator cannot take part in them yet, or empty when it can.
  virtual std::string checkpointUnsupportedReason() const { return ""; }
  // The synchronous part of checkpoint `checkpointId`, on the task thread between
  // batches: the state as it is now. The default writes the operator state
  // (CheckpointedFunction lists).
  virtual void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) {
    if (auto* registry = context_->operatorStateIfUsed()) out.operatorState = registry->snapshot();
  }
  virtual void notifyCheckpointComplete(int64_t checkpointId) {}
  virtual void notifyCheckpointAborted(int64_t checkpointId) {}

 protected:
  // Runs user code (a function, a source reader, a sink writer); whatever it throws
  // becomes an OperatorFailure naming this operator and subtask.
  template <class F>
  decltype(auto) callUser(F&& f) const {
    try {
      return f();
    } catch (...) {
      rethrowAsOperatorFailure();
    }
  }

  // Call inside a catch block: turns whatever a user function threw into an
  // OperatorFailure naming this operator and subtask.
  [[noreturn]] void rethrowAsOperatorFailure() const { rethrowAsOperatorFailure(context_->getTaskName()); }
  // The same for a function of another operator this one runs (a fused one).
  [[noreturn]] void rethrowAsOperatorFailure(const std::string& operatorName) const {
    try {
      throw;
    } catch (const TaskCancelled&) {
      throw;
    } catch (const OperatorFailure&) {
      throw;
    } catch (const std::exception& e) {
      throw OperatorFailure(operatorName, context_->getIndexOfThisSubtask(),
                            context_->getNumberOfParallelSubtasks(), e.what(), demangledTypeName(typeid(e)));
    } catch (...) {
      throw OperatorFailure(operatorName, context_->getIndexOfThisSubtask(),
                            context_->getNumberOfParallelSubtasks(), "unknown exception");
    }
  }

  RuntimeContext* context_ = nullptr;
  TaskMetrics* metrics_ = nullptr;
  std::string metricScope_;
};

// Opens and closes a user function that has a lifecycle (derives from RichFunction); a
// CheckpointedFunction gets initializeState() first.
template <class F>
void openFunction(F& fn, RuntimeContext* context) {
  if constexpr (std::is_base_of_v<RichFunction, F>) fn.setRuntimeContext(context);
  if constexpr (std::is_base_of_v<CheckpointedFunction, F>) {
    auto& registry = context->operatorState();
    FunctionInitializationContext init(registry.isRestored(), OperatorStateStore(&registry));
    fn.initializeState(init);
  }
  if constexpr (std::is_base_of_v<RichFunction, F>) fn.open();
}
template <class F>
void closeFunction(F& fn) {
  if constexpr (std::is_base_of_v<RichFunction, F>) fn.close();
}
// A CheckpointedFunction brings its operator state up to date for a checkpoint.
template <class F>
void snapshotFunction(F& fn, int64_t checkpointId, int64_t timestamp) {
  if constexpr (std::is_base_of_v<CheckpointedFunction, F>) fn.snapshotState(FunctionSnapshotContext(checkpointId, timestamp));
}
// A CheckpointListener learns how a checkpoint ended.
template <class F>
void notifyFunction(F& fn, int64_t checkpointId, bool completed) {
  if constexpr (std::is_base_of_v<CheckpointListener, F>) {
    if (completed) fn.notifyCheckpointComplete(checkpointId);
    else fn.notifyCheckpointAborted(checkpointId);
  }
}

// An operator with one typed input and one typed main output.
template <class IN, class OUT>
class OneInputOperator : public StreamOperator, public Output<IN> {
 public:
  OutputBase* input() override { return this; }
  void setOutput(OutputBase* out) override { out_ = &dynamic_cast<Output<OUT>&>(*out); }
  void endInput() override { out_->endInput(); }
  // Built-in operators hold no records between batches: watermarks pass straight on.
  void processWatermark(int64_t watermark) override { out_->processWatermark(watermark); }
  void processIdleness(bool idle) override { out_->processIdleness(idle); }

 protected:
  Output<OUT>* out_ = nullptr;
};

// An operator that runs a user function, calling its open() and close().
template <class IN, class OUT, class F>
class UdfOperator : public OneInputOperator<IN, OUT> {
 public:
  explicit UdfOperator(F fn) : fn_(std::move(fn)) {}
  void open() override {
    this->callUser([&] { openFunction(fn_, this->context_); });
  }
  void close() override {
    this->callUser([&] { closeFunction(fn_); });
  }
  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    this->callUser([&] { snapshotFunction(fn_, checkpointId, timestamp); });
    StreamOperator::snapshotState(checkpointId, timestamp, out);
  }
  void notifyCheckpointComplete(int64_t checkpointId) override {
    this->callUser([&] { notifyFunction(fn_, checkpointId, true); });
  }
  void notifyCheckpointAborted(int64_t checkpointId) override {
    this->callUser([&] { notifyFunction(fn_, checkpointId, false); });
  }

 protected:
  F fn_;
};

}  // namespace weir::detail
