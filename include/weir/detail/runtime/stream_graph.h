// The logical job graph the API builds (Flink's transformations) and hands to the
// runtime: its nodes, and the settings of the job.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weir/batch_shuffle_mode.h"
#include "weir/checkpoint_config.h"
#include "weir/execution_config.h"
#include "weir/clock.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/runtime/record_writer.h"
#include "weir/detail/runtime/stream_type.h"
#include "weir/restart_strategy.h"
#include "weir/runtime_execution_mode.h"
#include "weir/savepoint_restore_settings.h"
#include "weir/source.h"
#include "weir/state_backend.h"

namespace weir::core {
class FileSystem;  // src/core/file_system.h: not installed, so only weir and its tests name one
}  // namespace weir::core

namespace weir::detail {

// One node of the logical graph. Sources and operators become operator instances; union,
// partition and side-output nodes only shape the edges between them.
struct Transformation {
  enum class Kind { kSource, kOperator, kUnion, kPartition, kSideOutput };

  int id = 0;
  Kind kind = Kind::kOperator;
  std::string name;
  std::string uid;
  int parallelism = 0;  // 0: the environment's default
  bool nonParallel = false;  // forceNonParallel(): parallelism stays 1
  int maxParallelism = 0;    // setMaxParallelism(): its key groups; 0: the job's
  std::vector<int> inputs;
  std::shared_ptr<const StreamType> outputType;
  bool isSink = false;
  // A sink's checks of the job's settings (Sink::checkSettings); null: none.
  std::function<void(const CheckpointConfig&, const RestartStrategy&, RuntimeExecutionMode)> checkSettings;
  bool chainingDisabled = false;  // disableChaining(): never chained either side
  bool startsNewChain = false;    // startNewChain(): not chained to its input
  bool twoInput = false;          // inputs[0] and inputs[1] feed the operator's two inputs

  // kSource and kOperator: a fresh instance for one subtask.
  std::function<std::unique_ptr<StreamOperator>()> createOperator;
  // kOperator made by map or filter of a plain function right after others (fusion, see
  // fused_operator.h): nodes fusedFrom, ..., this one are a run, each the single input of
  // the next. createFused(names, k) makes one operator that runs the functions of the
  // run's nodes from the k-th (0: fusedFrom) to this one, taking their names in that
  // order, on the k-th node's input, and gives this node's output. The runtime uses it
  // for the part of the run that is chained one to one; fusedFrom -1: none.
  int fusedFrom = -1;
  std::function<std::unique_ptr<StreamOperator>(std::vector<std::string>, size_t)> createFused;
  // kSource: splits for the given parallelism (may throw weir::Error); null: none needed.
  std::function<std::unique_ptr<SplitEnumerator>(int)> createEnumerator;
  int maxSourceParallelism = 0;  // 0: any
  Boundedness boundedness = Boundedness::BOUNDED;  // kSource: whether its input ends
  // A side output the job must consume (a source's dead letters), with why; -1: none.
  int requiredSideOutputTag = -1;
  std::string requiredSideOutputReason;

  // kPartition.
  PartitionerKind partitioner = PartitionerKind::kForward;
  KeyedWriterFactory keyedWriter;  // kKeyGroup and kCustom: makes the edge's writer
  // kKeyGroup: the key group of a record (a const T*) for a maxParallelism.
  std::function<int(const void*, int)> keyGroupOf;

  // kSideOutput: the tag whose records this stream carries (inputs[0] is the operator).
  int sideOutputTag = -1;
};

// Everything execute() hands to the runtime.
struct StreamGraph {
  std::vector<std::shared_ptr<Transformation>> nodes;  // nodes[i]->id == i
  int defaultParallelism = 1;
  RuntimeExecutionMode runtimeMode = RuntimeExecutionMode::STREAMING;  // as set; JobPlan resolves AUTOMATIC
  // Batch: what each keyed operator subtask sorts its input in, and where it spills
  // (empty: the system's temporary folder).
  int64_t sortedInputsMemoryBytes = int64_t{128} << 20;
  std::string tmpDirectory;
  // Batch: whether exchanges are blocking (stages), and what the blocking exchanges of
  // the job may hold in memory together before they spill to tmpDirectory.
  BatchShuffleMode batchShuffleMode = BatchShuffleMode::ALL_EXCHANGES_BLOCKING;
  int64_t batchShuffleMemoryBytes = int64_t{64} << 20;
  int maxParallelism = 0;  // the job's, every operator's default; 0: not set (JobPlan::create derives it)
  int buffersPerChannel = 4;  // credits per channel (exclusive buffers)
  // What the buffers of all the job's channels may take (Flink's network memory):
  // JobPlan::create sizes each edge's buffers from it.
  int64_t networkMemoryBytes = int64_t{512} << 20;
  std::chrono::milliseconds autoWatermarkInterval{200};  // periodic watermarks of sources
  std::chrono::milliseconds bufferTimeout{100};  // partial channel buffers; 0: every batch, -1: never
  std::shared_ptr<const StateBackend> stateBackend = std::make_shared<HashMapStateBackend>();
  std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>();  // processing time
  CheckpointConfig checkpointConfig;
  ExecutionConfig executionConfig;
  RestartStrategy restartStrategy = RestartStrategy::fallback();
  SavepointRestoreSettings restore;  // the savepoint or checkpoint to start from; none: from scratch
  // What the job's checkpoints are written to and read from; null: the POSIX file
  // system (core::FileSystem::local()). Tests alone set another (a fault-injecting one,
  // tests/support/fault_injecting_file_system.h): not an option of the API.
  std::shared_ptr<core::FileSystem> fileSystem;
};

}  // namespace weir::detail
