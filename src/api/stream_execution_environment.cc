#include "weir/stream_execution_environment.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "api/plan_only.h"
#include "rest/rest_server.h"
#include "runtime/job_execution.h"

namespace weir {

StreamExecutionEnvironment::StreamExecutionEnvironment() : graph_(std::make_shared<detail::GraphBuilder>()) {}

StreamExecutionEnvironment& StreamExecutionEnvironment::setParallelism(int parallelism) {
  if (parallelism < 1)
    throw Error(ErrorCode::kInvalidArgument, "parallelism must be at least 1, got " + std::to_string(parallelism));
  graph_->graph.defaultParallelism = parallelism;
  return *this;
}

int StreamExecutionEnvironment::getParallelism() const { return graph_->graph.defaultParallelism; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setMaxParallelism(int maxParallelism) {
  if (maxParallelism < 1 || maxParallelism > kUpperBoundMaxParallelism)
    throw Error(ErrorCode::kInvalidArgument, "maxParallelism must be between 1 and " +
                                                 std::to_string(kUpperBoundMaxParallelism) + ", got " +
                                                 std::to_string(maxParallelism));
  graph_->graph.maxParallelism = maxParallelism;
  return *this;
}

int StreamExecutionEnvironment::getMaxParallelism() const {
  return graph_->graph.maxParallelism > 0 ? graph_->graph.maxParallelism : -1;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setBuffersPerChannel(int buffers) {
  if (buffers < 1)
    throw Error(ErrorCode::kInvalidArgument, "buffers per channel must be at least 1, got " + std::to_string(buffers));
  graph_->graph.buffersPerChannel = buffers;
  return *this;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setRuntimeMode(RuntimeExecutionMode mode) {
  graph_->graph.runtimeMode = mode;
  return *this;
}
RuntimeExecutionMode StreamExecutionEnvironment::getRuntimeMode() const { return graph_->graph.runtimeMode; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setSortedInputsMemory(int64_t bytes) {
  if (bytes < (int64_t{64} << 10))
    throw Error(ErrorCode::kInvalidArgument,
                "sorted-inputs memory must be at least 64 KiB, got " + std::to_string(bytes) + " bytes");
  graph_->graph.sortedInputsMemoryBytes = bytes;
  return *this;
}
int64_t StreamExecutionEnvironment::getSortedInputsMemory() const { return graph_->graph.sortedInputsMemoryBytes; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setTmpDirectory(std::string directory) {
  graph_->graph.tmpDirectory = std::move(directory);
  return *this;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setBatchShuffleMode(BatchShuffleMode mode) {
  graph_->graph.batchShuffleMode = mode;
  return *this;
}
BatchShuffleMode StreamExecutionEnvironment::getBatchShuffleMode() const { return graph_->graph.batchShuffleMode; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setBatchShuffleMemory(int64_t bytes) {
  if (bytes < 0)
    throw Error(ErrorCode::kInvalidArgument, "batch shuffle memory must not be negative, got " + std::to_string(bytes));
  graph_->graph.batchShuffleMemoryBytes = bytes;
  return *this;
}
int64_t StreamExecutionEnvironment::getBatchShuffleMemory() const { return graph_->graph.batchShuffleMemoryBytes; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setNetworkMemory(int64_t bytes) {
  if (bytes < (int64_t{1} << 20))
    throw Error(ErrorCode::kInvalidArgument, "network memory must be at least 1 MiB, got " + std::to_string(bytes) +
                                                 " bytes");
  graph_->graph.networkMemoryBytes = bytes;
  return *this;
}

int64_t StreamExecutionEnvironment::getNetworkMemory() const { return graph_->graph.networkMemoryBytes; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setAutoWatermarkInterval(std::chrono::milliseconds interval) {
  if (interval.count() <= 0)
    throw Error(ErrorCode::kInvalidArgument,
                "autoWatermarkInterval must be positive, got " + std::to_string(interval.count()) + " ms");
  graph_->graph.autoWatermarkInterval = interval;
  return *this;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setBufferTimeout(std::chrono::milliseconds timeout) {
  if (timeout.count() < -1)
    throw Error(ErrorCode::kInvalidArgument,
                "bufferTimeout must be -1 (only full buffers), 0 or positive, got " + std::to_string(timeout.count()) +
                    " ms");
  graph_->graph.bufferTimeout = timeout;
  return *this;
}
std::chrono::milliseconds StreamExecutionEnvironment::getBufferTimeout() const { return graph_->graph.bufferTimeout; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setStateBackend(std::shared_ptr<const StateBackend> backend) {
  if (!backend) throw Error(ErrorCode::kInvalidArgument, "setStateBackend needs a backend, got null");
  graph_->graph.stateBackend = std::move(backend);
  return *this;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setClock(std::shared_ptr<const Clock> clock) {
  if (!clock) throw Error(ErrorCode::kInvalidArgument, "setClock needs a clock, got null");
  graph_->graph.clock = std::move(clock);
  return *this;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::enableCheckpointing(std::chrono::milliseconds interval,
                                                                        CheckpointingMode mode) {
  graph_->graph.checkpointConfig.setCheckpointInterval(interval);
  graph_->graph.checkpointConfig.setCheckpointingMode(mode);
  return *this;
}

CheckpointConfig& StreamExecutionEnvironment::getCheckpointConfig() { return graph_->graph.checkpointConfig; }
ExecutionConfig& StreamExecutionEnvironment::getConfig() { return graph_->graph.executionConfig; }

StreamExecutionEnvironment& StreamExecutionEnvironment::setRestartStrategy(RestartStrategy strategy) {
  graph_->graph.restartStrategy = std::move(strategy);
  return *this;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setRestorePath(std::string path) {
  return setSavepointRestoreSettings(SavepointRestoreSettings::forPath(std::move(path)));
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setSavepointRestoreSettings(SavepointRestoreSettings settings) {
  graph_->graph.restore = std::move(settings);
  return *this;
}

const StateBackend& StreamExecutionEnvironment::getStateBackend() const { return *graph_->graph.stateBackend; }

JobExecutionResult StreamExecutionEnvironment::execute(const std::string& jobName) {
  return executeAsync(jobName).wait();
}

StreamExecutionEnvironment StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(RestOptions options) {
  options.enabled = true;
  StreamExecutionEnvironment env;
  env.setRestOptions(std::move(options));
  return env;
}

StreamExecutionEnvironment& StreamExecutionEnvironment::setRestOptions(RestOptions options) {
  if (options.enabled && (options.port < 0 || options.port > 65535))
    throw Error(ErrorCode::kInvalidArgument, "REST port must be between 0 and 65535, got " + std::to_string(options.port));
  if (options.enabled && options.metricsInterval.count() <= 0)
    throw Error(ErrorCode::kInvalidArgument, "REST metrics interval must be positive");
  if (!options.enabled && !options.archiveDir.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "an archive folder (" + options.archiveDir + ") needs the REST API on: the archive is what it answers");
  rest_ = std::move(options);
  return *this;
}

std::string StreamExecutionEnvironment::getExecutionPlan() const {
  using Kind = detail::Transformation::Kind;
  const runtime::JobPlan plan = runtime::JobPlan::create(graph_->graph, {});
  const auto& nodes = plan.graph.nodes;
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& node = *nodes[i];
    if (plan.vertexOf[i] < 0 || node.kind == Kind::kUnion || node.kind == Kind::kPartition ||
        node.kind == Kind::kSideOutput)
      continue;
    const bool source = node.kind == Kind::kSource;
    const std::string type = source ? "Source: " + node.name : node.name;
    nlohmann::json entry = {{"id", node.id},
                            {"type", type},
                            {"pact", source ? "Data Source" : node.isSink ? "Data Sink" : "Operator"},
                            {"contents", type},
                            {"parallelism", plan.parallelism[i]}};
    if (plan.stages.size() > 1) entry["stage"] = plan.stageOf[static_cast<size_t>(plan.vertexOf[i])] + 1;
    nlohmann::json predecessors = nlohmann::json::array();
    for (size_t e : plan.inEdges[i]) {
      const auto& edge = plan.edges[e];
      predecessors.push_back({{"id", edge.producer},
                              {"ship_strategy", detail::partitionerName(edge.partitioner)},
                              {"side", edge.inputIndex == 0 ? "first" : "second"},
                              {"exchange", edge.blocking ? "blocking" : "pipelined_bounded"}});
    }
    if (!predecessors.empty()) entry["predecessors"] = std::move(predecessors);
    out.push_back(std::move(entry));
  }
  return nlohmann::json{{"nodes", std::move(out)}}.dump(2);
}

JobClient StreamExecutionEnvironment::executeAsync(const std::string& jobName) {
  if (auto print = api::planPrinter()) {  // weir info
    print(getExecutionPlan());
    throw api::PlanPrinted();
  }
  // Plan (bad graphs and inputs fail here), then listen (a taken port fails here), and
  // only then start the threads.
  auto job = runtime::JobExecution::plan(graph_->graph, jobName);
  if (rest_.enabled) {
    auto& server = rest::RestServer::forOptions(rest_);
    job->setWebInterfaceUrl(server.url());
    job->launch();
    server.addJob(job, rest_.archiveDir, graph_->graph.executionConfig.hasJobBanner());
  } else {
    job->launch();
  }
  JobClient client(std::move(job));
  if (graph_->graph.executionConfig.hasJobBanner()) {
    const std::string ui = client.getWebInterfaceURL();
    std::fprintf(stderr, "weir: job '%s' started with id %s; %s\n", jobName.c_str(), client.getJobID().c_str(),
                 ui.empty() ? "no REST API (it is off)" : ("REST API and Web UI at " + ui).c_str());
    std::fflush(stderr);
  }
  return client;
}

}  // namespace weir
