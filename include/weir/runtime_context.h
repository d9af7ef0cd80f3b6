// What a user function can ask about the subtask it runs in.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "weir/checkpointed_function.h"
#include "weir/clock.h"
#include "weir/detail/core/mailbox_executor.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/detail/state/state_factory.h"
#include "weir/metrics.h"
#include "weir/state.h"
#include "weir/state_backend.h"
#include "weir/state_descriptor.h"

namespace weir {

namespace core {
class FileSystem;
}

// Identity of one parallel instance of an operator, and its keyed state; given to rich
// functions before open().
class RuntimeContext {
 public:
  RuntimeContext(std::string taskName, int subtaskIndex, int parallelism, int maxParallelism)
      : taskName_(std::move(taskName)), subtaskIndex_(subtaskIndex), parallelism_(parallelism),
        maxParallelism_(maxParallelism) {}

  // 0-based index of this parallel instance.
  int getIndexOfThisSubtask() const { return subtaskIndex_; }
  int getNumberOfParallelSubtasks() const { return parallelism_; }
  int getMaxNumberOfParallelSubtasks() const { return maxParallelism_; }
  // The operator's name, as given by name() or its default.
  const std::string& getTaskName() const { return taskName_; }

  // Keyed state, scoped to the key of the record or timer being processed. Only
  // functions on a keyed stream (after keyBy) have it; call these in open().
  template <class T>
  ValueState<T>& getState(const ValueStateDescriptor<T>& d) {
    return detail::valueState<detail::VoidNamespace>(keyedStore(d), d);
  }
  template <class T>
  ListState<T>& getListState(const ListStateDescriptor<T>& d) {
    return detail::listState<detail::VoidNamespace>(keyedStore(d), d);
  }
  template <class UK, class UV>
  MapState<UK, UV>& getMapState(const MapStateDescriptor<UK, UV>& d) {
    static_assert(HashableKey<UK>, "MapState<UK, UV> needs a weir::KeyHash for UK: declare it with WEIR_STRUCT");
    return detail::mapState<detail::VoidNamespace>(keyedStore(d), d);
  }
  template <class T>
  ReducingState<T>& getReducingState(const ReducingStateDescriptor<T>& d) {
    return detail::reducingState<detail::VoidNamespace>(keyedStore(d), d);
  }
  template <class IN, class ACC, class OUT>
  AggregatingState<IN, OUT>& getAggregatingState(const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
    return detail::aggregatingState<detail::VoidNamespace>(keyedStore(d), d);
  }

  // Where keyed state lives; the job's choice (env.setStateBackend), heap by default.
  const StateBackend& stateBackend() const { return *stateBackend_; }
  void setStateBackend(std::shared_ptr<const StateBackend> backend) { stateBackend_ = std::move(backend); }
  // Processing time: the job's clock (env.setClock), the system clock by default.
  const std::shared_ptr<const Clock>& clock() const { return clock_; }
  void setClock(std::shared_ptr<const Clock> clock) { clock_ = std::move(clock); }
  // Whether the job takes checkpoints (Flink's isCheckpointingEnabled): without them a
  // bounded job gets no final completion notice, so a two-phase-commit sink commits at
  // the end of its input.
  bool isCheckpointingEnabled() const { return checkpointing_; }
  void setCheckpointingEnabled(bool enabled) { checkpointing_ = enabled; }
  // Whether the job runs in RuntimeExecutionMode::BATCH (docs/batch.md): no watermark
  // before the end of the input, and keyed reductions emit only their final values.
  bool isBatch() const { return batch_; }
  void setBatch(bool batch) { batch_ = batch; }
  // In a batch job, what a keyed operator subtask sorts its input in before it spills
  // (execution.sorted-inputs.memory), and the folder it spills to (io.tmp.dirs).
  size_t sortedInputsMemory() const { return sortedInputsMemory_; }
  const std::string& tmpDirectory() const { return tmpDirectory_; }
  void setSortedInputs(size_t memory, std::string tmpDirectory) {
    sortedInputsMemory_ = memory;
    tmpDirectory_ = std::move(tmpDirectory);
  }
  // What the job's files (checkpoints, a file sink's part files) are written through:
  // the local file system unless a test put a fault-injecting one in its place.
  const std::shared_ptr<core::FileSystem>& fileSystem() const { return fileSystem_; }
  void setFileSystem(std::shared_ptr<core::FileSystem> fileSystem) { fileSystem_ = std::move(fileSystem); }
  // The folder the job's checkpoints go under (<dir> in <dir>/<job-id>/chk-<n>); empty
  // without checkpointing. A connector keeps there what must outlive a crash of the
  // process (KafkaSink's transaction markers).
  const std::string& getCheckpointDirectory() const { return checkpointDirectory_; }
  void setCheckpointDirectory(std::string directory) { checkpointDirectory_ = std::move(directory); }
  // The subtask's processing-time timers (set by the runtime before open()).
  detail::ProcessingTimeService& processingTimeService() {
    if (processingTime_ == nullptr)
      throw Error(ErrorCode::kInvalidJob, "operator '" + taskName_ + "' has no processing-time timer service");
    return *processingTime_;
  }
  void setProcessingTimeService(detail::ProcessingTimeService* service) { processingTime_ = service; }
  // The subtask's mailbox (set by the runtime before open()): how results computed on
  // other threads (async I/O) come back to the subtask's thread.
  detail::MailboxExecutor& mailboxExecutor() {
    if (mailbox_ == nullptr)
      throw Error(ErrorCode::kInvalidJob, "operator '" + taskName_ + "' has no mailbox");
    return *mailbox_;
  }
  void setMailboxExecutor(detail::MailboxExecutor* mailbox) { mailbox_ = mailbox; }
  // This instance's metrics: a connector counts the bytes it reads or writes here.
  OperatorMetricGroup getMetricGroup() const { return metricGroup_; }
  void setMetricGroup(OperatorMetricGroup group) { metricGroup_ = group; }
  // How often periodic watermarks are emitted (env.setAutoWatermarkInterval).
  std::chrono::milliseconds getAutoWatermarkInterval() const { return autoWatermarkInterval_; }
  void setAutoWatermarkInterval(std::chrono::milliseconds interval) { autoWatermarkInterval_ = interval; }
  // The operator states of this instance (CheckpointedFunction), made on first use.
  detail::OperatorStateRegistry& operatorState() {
    if (!operatorState_) {
      operatorState_ = restored_ ? std::make_unique<detail::OperatorStateRegistry>(restored_->operatorState)
                                 : std::make_unique<detail::OperatorStateRegistry>();
    }
    return *operatorState_;
  }
  // Whether any operator state was registered (what a checkpoint must write).
  detail::OperatorStateRegistry* operatorStateIfUsed() { return operatorState_.get(); }
  // What this instance was restored from (set before open), or null when it starts fresh.
  detail::RestoredOperatorState* restored() { return restored_.get(); }
  void setRestored(std::unique_ptr<detail::RestoredOperatorState> restored) { restored_ = std::move(restored); }
  // Set by keyed operators before they open their function.
  void setKeyedStateBackend(detail::KeyedStateBackendBase* store) { keyedStore_ = store; }
  // "name (i/n)" with a 1-based index, as Flink prints it.
  std::string getTaskNameWithSubtasks() const {
    return taskName_ + " (" + std::to_string(subtaskIndex_ + 1) + "/" + std::to_string(parallelism_) + ")";
  }

 private:
  detail::KeyedStateBackendBase& keyedStore(const StateDescriptor& d) {
    if (keyedStore_ == nullptr) {
      throw Error(ErrorCode::kState, "state '" + d.getName() + "' is keyed state, but operator '" + taskName_ +
                                         "' is not on a keyed stream; call keyBy before it");
    }
    return *keyedStore_;
  }

  std::string taskName_;
  int subtaskIndex_;
  int parallelism_;
  int maxParallelism_;
  std::shared_ptr<const StateBackend> stateBackend_ = std::make_shared<HashMapStateBackend>();
  std::shared_ptr<const Clock> clock_ = std::make_shared<SystemClock>();
  std::shared_ptr<core::FileSystem> fileSystem_;
  bool checkpointing_ = false;
  bool batch_ = false;
  size_t sortedInputsMemory_ = size_t{128} << 20;
  std::string tmpDirectory_ = "/tmp";
  std::string checkpointDirectory_;
  std::chrono::milliseconds autoWatermarkInterval_{200};
  OperatorMetricGroup metricGroup_;
  detail::KeyedStateBackendBase* keyedStore_ = nullptr;
  detail::ProcessingTimeService* processingTime_ = nullptr;
  detail::MailboxExecutor* mailbox_ = nullptr;
  std::unique_ptr<detail::OperatorStateRegistry> operatorState_;
  std::unique_ptr<detail::RestoredOperatorState> restored_;
};

namespace detail {
// Whether keyed state is in RocksDB: operators that keep tables of their own on the heap
// (rolling aggregations, windows) keep their values in RocksDB state instead.
inline bool keyedStateInRocksDB(const RuntimeContext& context) {
  return context.stateBackend().getName() == "rocksdb";
}
// The keyed state of a keyed operator's subtask, on `backend`.
template <class K>
std::unique_ptr<KeyedStateBackend<K>> makeKeyedStateBackend(RuntimeContext& context, const StateBackend& backend) {
  return std::make_unique<KeyedStateBackend<K>>(
      backend, context.getMaxNumberOfParallelSubtasks(),
      context.getTaskName() + "-" + std::to_string(context.getIndexOfThisSubtask()), context.clock(),
      context.getMetricGroup());
}
// The keyed state of a keyed operator's subtask, on the job's state backend.
template <class K>
std::unique_ptr<KeyedStateBackend<K>> makeKeyedStateBackend(RuntimeContext& context) {
  return makeKeyedStateBackend<K>(context, context.stateBackend());
}
// A batch job's keyed state when the operator's input is grouped by key (Flink's batch
// state backend): on the heap whatever the job's backend, since it holds one key at a
// time (the operator drops each key's state once the key's input is done).
template <class K>
std::unique_ptr<KeyedStateBackend<K>> makeBatchKeyedStateBackend(RuntimeContext& context) {
  return makeKeyedStateBackend<K>(context, HashMapStateBackend());
}
}  // namespace detail

}  // namespace weir
