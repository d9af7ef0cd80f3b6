// Where a job is built and run: sources come from here, execute() runs the job.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "weir/batch_shuffle_mode.h"
#include "weir/checkpoint_config.h"
#include "weir/data_stream.h"
#include "weir/detail/api/collection_source.h"
#include "weir/execution_config.h"
#include "weir/job_client.h"
#include "weir/rest_options.h"
#include "weir/restart_strategy.h"
#include "weir/runtime_execution_mode.h"
#include "weir/savepoint_restore_settings.h"
#include "weir/source.h"
#include "weir/watermark_strategy.h"

namespace weir {

// Builds a job and runs it embedded in this process: one thread per subtask.
// Copies share the same job under construction.
class StreamExecutionEnvironment {
 public:
  StreamExecutionEnvironment();
  static StreamExecutionEnvironment getExecutionEnvironment() { return StreamExecutionEnvironment(); }
  // An environment set up from the command line of a job that is its own program, with
  // the options `weir run` gives: JobOptions::parse(argc, argv).applyTo(env) (see
  // weir/job_options.h; --help lists them). Prints --help and exits 0, or prints a bad
  // option in one line and exits 2.
  static StreamExecutionEnvironment fromArgs(int argc, const char* const* argv);
  // An environment whose jobs serve the REST API and Web UI (by default on
  // http://127.0.0.1:8081).
  static StreamExecutionEnvironment createLocalEnvironmentWithWebUI(RestOptions options = {});

  // Whether and where jobs serve the REST API and Web UI (default: not served).
  StreamExecutionEnvironment& setRestOptions(RestOptions options);
  const RestOptions& getRestOptions() const { return rest_; }

  // STREAMING (the default), BATCH or AUTOMATIC (Flink's execution.runtime-mode; see
  // docs/batch.md). A job that cannot run in BATCH (an unbounded source, checkpointing
  // enabled, a processing-time window) is refused at execute(), naming why.
  StreamExecutionEnvironment& setRuntimeMode(RuntimeExecutionMode mode);
  RuntimeExecutionMode getRuntimeMode() const;
  // In BATCH, the memory each keyed operator subtask sorts its input in before it
  // spills sorted runs to disk (Flink's execution.sorted-inputs.memory; default 128 MiB,
  // at least 64 KiB), and the local folder it spills to (Flink's io.tmp.dirs; default
  // $TMPDIR, else /tmp).
  StreamExecutionEnvironment& setSortedInputsMemory(int64_t bytes);
  int64_t getSortedInputsMemory() const;
  StreamExecutionEnvironment& setTmpDirectory(std::string directory);
  // In BATCH, whether a keyBy, rebalance or other redistribution is a blocking exchange
  // between stages that run one after another (ALL_EXCHANGES_BLOCKING, the default) or
  // pipelined as in STREAMING (Flink's execution.batch-shuffle-mode).
  StreamExecutionEnvironment& setBatchShuffleMode(BatchShuffleMode mode);
  BatchShuffleMode getBatchShuffleMode() const;
  // In BATCH, what the job's blocking exchanges may hold in memory together; beyond it
  // they spill to the temporary folder (weir.batch-shuffle.memory; default 64 MiB, 0:
  // always spill).
  StreamExecutionEnvironment& setBatchShuffleMemory(int64_t bytes);
  int64_t getBatchShuffleMemory() const;
  // Default parallelism of every operator (default 1); at least 1, at most maxParallelism.
  StreamExecutionEnvironment& setParallelism(int parallelism);
  int getParallelism() const;
  // Number of key groups, the upper bound of any keyed operator's parallelism (at most
  // 32768; see getMaxParallelism for the default). Fixed for the life of the job's state.
  StreamExecutionEnvironment& setMaxParallelism(int maxParallelism);
  // The max parallelism set, or -1 when none is (then, as in Flink, a job takes the
  // default of its highest parallelism, min(max(roundUpToPowerOfTwo(p + p/2), 128),
  // 32768), or on a restore the max parallelism of the checkpoint it restores).
  int getMaxParallelism() const;
  // Buffers (of up to 1024 records and about 32 KiB) each channel may hold before its
  // producer waits (Flink's buffers-per-channel; default 4).
  StreamExecutionEnvironment& setBuffersPerChannel(int buffers);
  // The memory all the buffers of a job's channels may take (Flink's network memory;
  // default 512 MiB). Each channel holds buffersPerChannel + 1 buffers of up to about
  // 32 KiB; with many channels (an all-to-all edge has parallelism² of them) buffers
  // are made smaller to fit, and a job whose channels cannot have buffers of at least
  // 256 bytes within it is refused at start, with the numbers.
  StreamExecutionEnvironment& setNetworkMemory(int64_t bytes);
  int64_t getNetworkMemory() const;
  // How often sources emit periodic watermarks (Flink's autoWatermarkInterval; default
  // 200 ms, must be positive).
  StreamExecutionEnvironment& setAutoWatermarkInterval(std::chrono::milliseconds interval);
  // How long a partly filled channel buffer may wait for more records before it is sent
  // (Flink's bufferTimeout; default 100 ms). A subtask that runs out of input sends its
  // partial buffers at once, so this bounds latency only while it stays busy. 0 sends
  // them after every batch; -1 sets no timeout: a busy subtask sends only full buffers.
  StreamExecutionEnvironment& setBufferTimeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds getBufferTimeout() const;
  // Where keyed state lives (default: HashMapStateBackend, on the heap).
  StreamExecutionEnvironment& setStateBackend(std::shared_ptr<const StateBackend> backend);
  const StateBackend& getStateBackend() const;
  // The job's processing-time clock, read by state TTL (default: the system clock).
  // Tests inject a ManualClock and advance it instead of sleeping.
  StreamExecutionEnvironment& setClock(std::shared_ptr<const Clock> clock);

  // Takes a checkpoint every `interval` (must be positive); see CheckpointConfig for the
  // rest. Sources and operators of the job must support checkpoints (a clear error at
  // execute() names the one that does not).
  StreamExecutionEnvironment& enableCheckpointing(std::chrono::milliseconds interval,
                                                  CheckpointingMode mode = CheckpointingMode::EXACTLY_ONCE);
  CheckpointConfig& getCheckpointConfig();
  // How the program becomes a job (Flink's env.getConfig()): e.g.
  // getConfig().disableAutoGeneratedUIDs() refuses operators without a uid.
  ExecutionConfig& getConfig();
  // Whether and when a failed job restarts from its latest checkpoint (default: none
  // without checkpointing, fixed delay without limit with it).
  StreamExecutionEnvironment& setRestartStrategy(RestartStrategy strategy);
  // Starts the job from the savepoint or checkpoint in `path` (its folder or its
  // _metadata file) instead of from scratch: setSavepointRestoreSettings(forPath(path)).
  StreamExecutionEnvironment& setRestorePath(std::string path);
  // Starts the job from a savepoint or checkpoint, with what may be left behind and who
  // owns it afterwards (weir/savepoint_restore_settings.h).
  StreamExecutionEnvironment& setSavepointRestoreSettings(SavepointRestoreSettings settings);

  // A stream read from `source`, a Source<T> subclass taken by value.
  // Event timestamps and watermarks come from `watermarks`: a strategy with watermarks
  // needs withTimestampAssigner (a clear error otherwise), unless the source's records
  // carry timestamps of their own (Source::carriesTimestamps, a Kafka record's).
  template <class S>
  SingleOutputStreamOperator<typename S::OutputType> fromSource(
      S source, const WatermarkStrategy<typename S::OutputType>& watermarks, std::string name) {
    using T = typename S::OutputType;
    static_assert(std::is_base_of_v<Source<T>, S>, "fromSource(s, ...): s must derive from Source<T>");
    if (watermarks.generator() && !watermarks.assigner() && !source.carriesTimestamps())
      throw Error(ErrorCode::kInvalidArgument, "source '" + name +
                                                   "': its watermark strategy needs withTimestampAssigner(...), "
                                                   "the source gives records no timestamps");
    std::shared_ptr<const Source<T>> shared = std::make_shared<S>(std::move(source));
    auto& node = graph_->add(detail::Transformation::Kind::kSource, std::move(name), {}, detail::TypedStream<T>::get());
    node.createOperator = [shared, watermarks] { return std::make_unique<detail::SourceOperator<T>>(shared, watermarks); };
    node.createEnumerator = [shared](int parallelism) { return shared->createEnumerator(parallelism); };
    node.maxSourceParallelism = shared->maxParallelism();
    node.boundedness = shared->getBoundedness();
    if (shared->badRecordPolicy() == BadRecordPolicy::DEAD_LETTER) {
      node.requiredSideOutputTag = deadLetterOutput().index();
      node.requiredSideOutputReason = "its bad-record policy is DEAD_LETTER: consume getSideOutput(deadLetterOutput())";
    }
    return SingleOutputStreamOperator<T>(graph_, node.id);
  }

  // A bounded stream of the given elements, in order (parallelism 1).
  template <class T>
  SingleOutputStreamOperator<T> fromCollection(std::vector<T> elements) {
    return fromSource(detail::CollectionSource<T>(std::move(elements)), WatermarkStrategy<T>::noWatermarks(),
                      "Collection Source");
  }
  template <class T>
  SingleOutputStreamOperator<T> fromElements(std::initializer_list<T> elements) {
    return fromCollection(std::vector<T>(elements));
  }
  template <class T, class... Ts>
  SingleOutputStreamOperator<T> fromElements(T first, Ts... rest) {
    return fromCollection(std::vector<T>{std::move(first), T(std::move(rest))...});
  }

  // Runs the job and blocks until it ends. Throws weir::Error for a job that cannot
  // start and JobExecutionError when it fails.
  JobExecutionResult execute(const std::string& jobName = "weir job");
  // Starts the job and returns at once.
  JobClient executeAsync(const std::string& jobName = "weir job");
  // The job as it would run, without running it, in the JSON of Flink's
  // getExecutionPlan(): `nodes` (each operator that feeds a sink, with `id`, `type`,
  // `pact`, `contents`, `parallelism` and its `predecessors` with their
  // `ship_strategy`). Throws weir::Error for a graph that cannot be planned (no sink, a
  // bad parallelism); what execute() checks when the job starts (sources' and sinks'
  // settings) is not checked here.
  std::string getExecutionPlan() const;

 private:
  std::shared_ptr<detail::GraphBuilder> graph_;
  RestOptions rest_;
};

}  // namespace weir
