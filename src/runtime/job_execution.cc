#include "runtime/job_execution.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <tuple>


namespace weir::detail {

namespace {

using Kind = Transformation::Kind;

// A stream between two operators after union, partition and side-output nodes are
// resolved away.
struct PhysicalEdge {
  int producer = 0;
  int consumer = 0;
  int sideOutputTag = -1;  // -1: the main output
  int inputIndex = 0;      // which input of a two-input consumer
  std::shared_ptr<const StreamType> type;
  bool explicitPartitioner = false;
  PartitionerKind partitioner = PartitionerKind::kForward;
  KeyedWriterFactory keyedWriter;
  bool chained = false;
  // channels[p * consumerParallelism + c], or channels[p] for forward edges.
  std::vector<ChannelBase*> channels;
};

Error invalidJob(const std::string& message) { return Error(ErrorCode::kInvalidJob, message); }

void resolveInput(const StreamGraph& graph, int nodeId, int consumer, PhysicalEdge edge,
                  std::vector<PhysicalEdge>& out) {
  const Transformation& node = *graph.nodes.at(static_cast<size_t>(nodeId));
  switch (node.kind) {
    case Kind::kSource:
    case Kind::kOperator:
      edge.producer = nodeId;
      edge.consumer = consumer;
      if (!edge.type) edge.type = node.outputType;
      out.push_back(std::move(edge));
      return;
    case Kind::kUnion:
      for (int in : node.inputs) resolveInput(graph, in, consumer, edge, out);
      return;
    case Kind::kPartition:
      // The partitioning nearest to the consumer wins.
      if (!edge.explicitPartitioner) {
        edge.explicitPartitioner = true;
        edge.partitioner = node.partitioner;
        edge.keyedWriter = node.keyedWriter;
      }
      resolveInput(graph, node.inputs.at(0), consumer, std::move(edge), out);
      return;
    case Kind::kSideOutput:
      edge.sideOutputTag = node.sideOutputTag;
      edge.type = node.outputType;
      resolveInput(graph, node.inputs.at(0), consumer, std::move(edge), out);
      return;
  }
}

std::string hex128(uint64_t hi, uint64_t lo) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

// Stable for the same vertex of the same graph, so the Web UI can follow it.
std::string vertexId(int index, const std::string& name) {
  std::string seed = std::to_string(index) + "\n" + name;
  XXH128_hash_t h = XXH3_128bits(seed.data(), seed.size());
  return hex128(h.high64, h.low64);
}

std::string randomJobId() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  return hex128(rng(), rng());
}

int64_t nowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string describeError(std::exception_ptr error, ErrorCode* code) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    *code = e.code();
    return e.what();
  } catch (const std::exception& e) {
    *code = ErrorCode::kInternal;
    return e.what();
  } catch (...) {
    *code = ErrorCode::kInternal;
    return "unknown exception";
  }
}

}  // namespace

std::shared_ptr<JobExecution> JobExecution::start(const StreamGraph& graph, std::string jobName) {
  auto job = plan(graph, std::move(jobName));
  job->launch();
  return job;
}

std::shared_ptr<JobExecution> JobExecution::plan(const StreamGraph& graph, std::string jobName) {
  std::shared_ptr<JobExecution> job(new JobExecution(std::move(jobName)));
  const auto& nodes = graph.nodes;
  const size_t n = nodes.size();
  if (graph.maxParallelism < 1 || graph.maxParallelism > kUpperBoundMaxParallelism)
    throw Error(ErrorCode::kInvalidArgument,
                "maxParallelism is " + std::to_string(graph.maxParallelism) + "; it must be between 1 and " +
                    std::to_string(kUpperBoundMaxParallelism));

  // Only what feeds a sink runs, as in Flink.
  std::vector<bool> live(n, false);
  for (size_t i = n; i-- > 0;) {
    if (nodes[i]->isSink) live[i] = true;
    if (live[i])
      for (int in : nodes[i]->inputs) live[static_cast<size_t>(in)] = true;
  }
  if (std::none_of(live.begin(), live.end(), [](bool b) { return b; }))
    throw invalidJob("the job has no sink; add one with sinkTo() or print() before execute()");

  // Parallelism of every operator.
  std::vector<int> parallelism(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& node = *nodes[i];
    if (!live[i] || (node.kind != Kind::kSource && node.kind != Kind::kOperator)) continue;
    int p = node.parallelism > 0 ? node.parallelism : graph.defaultParallelism;
    if (node.kind == Kind::kSource && node.maxSourceParallelism > 0 && p > node.maxSourceParallelism) {
      if (node.parallelism > 0)
        throw invalidJob("source '" + node.name + "' can run at parallelism " +
                         std::to_string(node.maxSourceParallelism) + " at most, not " + std::to_string(p));
      p = node.maxSourceParallelism;
    }
    if (p < 1 || p > graph.maxParallelism)
      throw Error(ErrorCode::kInvalidArgument,
                  "parallelism of '" + node.name + "' is " + std::to_string(p) +
                      "; it must be between 1 and maxParallelism (" + std::to_string(graph.maxParallelism) + ")");
    parallelism[i] = p;
  }

  // Physical edges, partitioners and chaining.
  std::vector<PhysicalEdge> edges;
  std::vector<std::vector<size_t>> inEdges(n), outEdges(n);
  for (size_t i = 0; i < n; ++i) {
    if (!live[i] || nodes[i]->kind != Kind::kOperator) continue;
    std::vector<PhysicalEdge> found;
    for (size_t k = 0; k < nodes[i]->inputs.size(); ++k) {
      PhysicalEdge edge;
      edge.inputIndex = nodes[i]->twoInput ? static_cast<int>(k) : 0;
      resolveInput(graph, nodes[i]->inputs[k], static_cast<int>(i), std::move(edge), found);
    }
    for (auto& e : found) {
      int pp = parallelism[static_cast<size_t>(e.producer)];
      int cp = parallelism[i];
      if (!e.explicitPartitioner) e.partitioner = pp == cp ? PartitionerKind::kForward : PartitionerKind::kRebalance;
      if (e.partitioner == PartitionerKind::kForward && pp != cp)
        throw invalidJob("forward partitioning from '" + nodes[static_cast<size_t>(e.producer)]->name +
                         "' (parallelism " + std::to_string(pp) + ") to '" + nodes[i]->name + "' (parallelism " +
                         std::to_string(cp) + ") would change the parallelism; use rebalance() instead");
      inEdges[i].push_back(edges.size());
      outEdges[static_cast<size_t>(e.producer)].push_back(edges.size());
      edges.push_back(std::move(e));
    }
  }
  std::vector<int> vertexOf(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (!live[i] || (nodes[i]->kind != Kind::kSource && nodes[i]->kind != Kind::kOperator)) continue;
    const auto& node = *nodes[i];
    if (inEdges[i].size() == 1 && !node.twoInput) {
      auto& e = edges[inEdges[i][0]];
      const auto& producer = *nodes[static_cast<size_t>(e.producer)];
      e.chained = e.partitioner == PartitionerKind::kForward && !node.startsNewChain && !node.chainingDisabled &&
                  !producer.chainingDisabled;
      if (e.chained) {
        int v = vertexOf[static_cast<size_t>(e.producer)];
        vertexOf[i] = v;
        auto& vertex = job->vertices_[static_cast<size_t>(v)];
        vertex.nodes.push_back(static_cast<int>(i));
        vertex.name += " -> " + node.name;
        vertex.isSink = vertex.isSink || node.isSink;
        continue;
      }
    }
    vertexOf[i] = static_cast<int>(job->vertices_.size());
    Vertex vertex;
    vertex.name = node.kind == Kind::kSource ? "Source: " + node.name : node.name;
    vertex.parallelism = parallelism[i];
    vertex.nodes = {static_cast<int>(i)};
    vertex.isSource = node.kind == Kind::kSource;
    vertex.isSink = node.isSink;
    job->vertices_.push_back(std::move(vertex));
  }

  // Subtasks first: channels need their consumer's signal.
  std::vector<std::vector<Subtask*>> subtasksOf(job->vertices_.size());
  for (size_t v = 0; v < job->vertices_.size(); ++v) {
    for (int s = 0; s < job->vertices_[v].parallelism; ++s) {
      auto task = std::make_unique<Subtask>();
      task->vertex = static_cast<int>(v);
      task->index = s;
      subtasksOf[v].push_back(task.get());
      job->subtasks_.push_back(std::move(task));
    }
  }
  for (auto& e : edges) {
    if (e.chained) continue;
    int pp = parallelism[static_cast<size_t>(e.producer)];
    int cp = parallelism[static_cast<size_t>(e.consumer)];
    auto& consumers = subtasksOf[static_cast<size_t>(vertexOf[static_cast<size_t>(e.consumer)])];
    bool forward = e.partitioner == PartitionerKind::kForward;
    for (int p = 0; p < pp; ++p) {
      for (int c = 0; c < cp; ++c) {
        if (forward && c != p) continue;
        Subtask* consumer = consumers[static_cast<size_t>(c)];
        auto channel = e.type->createChannel(graph.buffersPerChannel, &consumer->signal);
        e.channels.push_back(channel.get());
        consumer->inputChannels.push_back(channel.get());
        job->channels_.push_back(std::move(channel));
      }
    }
  }

  // Split enumerators, one per source (they validate the source's configuration).
  std::map<int, SplitEnumerator*> enumeratorOf;
  for (auto& vertex : job->vertices_) {
    const auto& head = *nodes[static_cast<size_t>(vertex.nodes[0])];
    if (!vertex.isSource || !head.createEnumerator) continue;
    auto enumerator = head.createEnumerator(vertex.parallelism);
    enumeratorOf[head.id] = enumerator.get();
    job->enumerators_.push_back(std::move(enumerator));
  }

  // Operators, outputs and inputs of every subtask.
  for (auto& taskPtr : job->subtasks_) {
    Subtask& task = *taskPtr;
    const Vertex& vertex = job->vertices_[static_cast<size_t>(task.vertex)];
    std::map<int, StreamOperator*> operatorOf;
    for (int id : vertex.nodes) {
      const auto& node = *nodes[static_cast<size_t>(id)];
      auto op = node.createOperator();
      task.contexts.push_back(std::make_unique<RuntimeContext>(node.name, task.index, vertex.parallelism,
                                                               graph.maxParallelism));
      task.contexts.back()->setStateBackend(graph.stateBackend);
      task.contexts.back()->setClock(graph.clock);
      op->setup(task.contexts.back().get(), &task.metrics);
      operatorOf[id] = op.get();
      if (node.kind == Kind::kSource) {
        task.source = static_cast<SourceOperatorBase*>(op.get());
        task.source->setAutoWatermarkInterval(graph.autoWatermarkInterval);
        auto it = enumeratorOf.find(id);
        task.source->setEnumerator(it == enumeratorOf.end() ? nullptr : it->second);
      }
      task.operators.push_back(std::move(op));
    }
    // Wire each member's outputs: chained consumers directly, the rest through writers.
    for (int id : vertex.nodes) {
      const auto& node = *nodes[static_cast<size_t>(id)];
      std::map<int, std::vector<OutputBase*>> targetsByTag;
      std::map<int, std::shared_ptr<const StreamType>> typeByTag;
      for (size_t ei : outEdges[static_cast<size_t>(id)]) {
        auto& e = edges[ei];
        typeByTag[e.sideOutputTag] = e.type;
        if (e.chained) {
          targetsByTag[e.sideOutputTag].push_back(operatorOf.at(e.consumer)->input());
          continue;
        }
        int cp = parallelism[static_cast<size_t>(e.consumer)];
        std::vector<ChannelBase*> channels;
        if (e.partitioner == PartitionerKind::kForward) {
          channels.push_back(e.channels[static_cast<size_t>(task.index)]);
        } else {
          for (int c = 0; c < cp; ++c) channels.push_back(e.channels[static_cast<size_t>(task.index * cp + c)]);
        }
        auto writer = e.partitioner == PartitionerKind::kKeyGroup
                          ? e.keyedWriter(channels, graph.maxParallelism, &task.metrics)
                          : e.type->createWriter(e.partitioner, channels, &task.metrics);
        targetsByTag[e.sideOutputTag].push_back(writer.get());
        task.outputs.push_back(std::move(writer));
      }
      auto combine = [&](int tag, const StreamType& type) -> OutputBase* {
        auto& targets = targetsByTag[tag];
        if (targets.size() == 1) return targets[0];
        auto out = targets.empty() ? type.createNullOutput() : type.createFanOut(targets);
        task.outputs.push_back(std::move(out));
        return task.outputs.back().get();
      };
      StreamOperator* op = operatorOf.at(id);
      if (!node.isSink) op->setOutput(combine(-1, *node.outputType));
      for (auto& [tag, type] : typeByTag) {
        if (tag >= 0) op->addSideOutput(tag, type->createSideOutput(combine(tag, *type)));
      }
    }
    if (!task.source) {
      int head = vertex.nodes[0];
      task.headInput = operatorOf.at(head)->input();
      int channelCount = 0;
      for (size_t ei : inEdges[static_cast<size_t>(head)]) {
        const auto& e = edges[ei];
        int pp = parallelism[static_cast<size_t>(e.producer)];
        channelCount += e.partitioner == PartitionerKind::kForward ? 1 : pp;
      }
      task.valve = std::make_unique<WatermarkValve>(channelCount, task.headInput, &task.metrics.currentInputWatermark);
      for (size_t ei : inEdges[static_cast<size_t>(head)]) {
        auto& e = edges[ei];
        int cp = parallelism[static_cast<size_t>(head)];
        int pp = parallelism[static_cast<size_t>(e.producer)];
        for (int p = 0; p < pp; ++p) {
          ChannelBase* channel = nullptr;
          if (e.partitioner == PartitionerKind::kForward) {
            if (p == task.index) channel = e.channels[static_cast<size_t>(p)];
          } else {
            channel = e.channels[static_cast<size_t>(p * cp + task.index)];
          }
          if (channel) {
            int index = static_cast<int>(task.inputs.size());
            OutputBase* target = e.inputIndex == 0 ? task.headInput : operatorOf.at(head)->secondInput();
            task.inputs.push_back(e.type->createInput(channel, target, &task.metrics, task.valve.get(), index));
          }
        }
      }
    }
  }

  // What the REST API shows of the vertices.
  job->jobId_ = randomJobId();
  for (size_t v = 0; v < job->vertices_.size(); ++v) {
    const auto& vertex = job->vertices_[v];
    VertexInfo info;
    info.id = vertexId(static_cast<int>(v), vertex.name);
    info.name = vertex.name;
    info.parallelism = vertex.parallelism;
    info.isSource = vertex.isSource;
    info.isSink = vertex.isSink;
    for (int id : vertex.nodes)
      if (!nodes[static_cast<size_t>(id)]->uid.empty()) info.uids.push_back(nodes[static_cast<size_t>(id)]->uid);
    job->vertexInfo_.push_back(std::move(info));
  }
  std::set<std::tuple<int, int, std::string>> seen;
  for (auto& e : edges) {
    if (e.chained) continue;
    int from = vertexOf[static_cast<size_t>(e.producer)], to = vertexOf[static_cast<size_t>(e.consumer)];
    std::string strategy = partitionerName(e.partitioner);
    if (seen.insert({from, to, strategy}).second)
      job->vertexInfo_[static_cast<size_t>(to)].inputs.push_back({from, strategy});
  }

  return job;
}

void JobExecution::launch() {
  startMillis_ = nowMillis();
  startTime_ = std::chrono::steady_clock::now();
  running_.store(static_cast<int>(subtasks_.size()));
  for (auto& task : subtasks_) {
    Subtask* t = task.get();
    t->thread = std::thread([this, t] { run(*t); });
  }
}

JobExecution::~JobExecution() {
  cancel();
  std::lock_guard join(joinMutex_);
  for (auto& t : subtasks_) {
    if (!t->thread.joinable()) continue;
    // The last handle dropped by a user function on a subtask thread: that thread
    // cannot join itself; it is on its way out already.
    if (t->thread.get_id() == std::this_thread::get_id()) t->thread.detach();
    else t->thread.join();
  }
}

void JobExecution::run(Subtask& task) {
  // Operators whose open() was called and whose close() was not, in chain order.
  std::vector<bool> needsClose(task.operators.size(), false);
  bool cancelled = false;
  try {
    // Tail first, so every operator's downstream is ready before it emits.
    for (size_t i = task.operators.size(); i-- > 0;) {
      needsClose[i] = true;
      task.operators[i]->open();
    }
    if (task.source) runSource(task);
    else runInputs(task);
    for (size_t i = 0; i < task.operators.size(); ++i) {
      needsClose[i] = false;
      task.operators[i]->close();
    }
  } catch (const TaskCancelled&) {
    cancelled = true;
  } catch (...) {
    fail(std::current_exception());
  }
  // After a failure or cancellation, close what is still open; the first error stands.
  for (size_t i = 0; i < task.operators.size(); ++i) {
    if (!needsClose[i]) continue;
    try {
      task.operators[i]->close();
    } catch (...) {
    }
  }
  std::lock_guard lock(mutex_);
  if (cancelled) ++cancelledSubtasks_;
  if (running_.fetch_sub(1) == 1) {
    runtime_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - startTime_);
    finalStatus_ = failure_ ? JobStatus::FAILED : cancelledSubtasks_ > 0 ? JobStatus::CANCELED : JobStatus::FINISHED;
    endMillis_ = nowMillis();
  }
}

void JobExecution::runSource(Subtask& task) {
  while (true) {
    task.mailbox.runPending();
    if (task.stopRequested) break;
    InputStatus status = task.source->emitNext();
    auto nextWatermark = task.source->onTime(std::chrono::steady_clock::now());
    if (status == InputStatus::END_OF_INPUT) break;
    if (status == InputStatus::NOTHING_AVAILABLE) {
      auto wake = std::min(task.source->nextPollTime(), nextWatermark);
      task.metrics.idle([&] { task.signal.waitUntil(wake); });
    }
  }
  task.source->endInput();
}

void JobExecution::runInputs(Subtask& task) {
  const size_t n = task.inputs.size();
  std::vector<bool> ended(n, false);
  size_t endedCount = 0;
  while (endedCount < n) {
    task.mailbox.runPending();
    bool progress = false;
    for (size_t i = 0; i < n; ++i) {
      if (ended[i]) continue;
      switch (task.inputs[i]->pollOnce()) {
        case ChannelInputBase::Poll::kEmpty:
          break;
        case ChannelInputBase::Poll::kProcessed:
          progress = true;
          break;
        case ChannelInputBase::Poll::kEnded:
          ended[i] = true;
          ++endedCount;
          progress = true;
          break;
      }
    }
    if (!progress) {
      task.metrics.idle([&] { task.signal.wait(); });
    }
  }
  task.headInput->endInput();
}

void JobExecution::fail(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    // The first failure is the job's; once the user cancelled, failures while
    // stopping do not turn the cancellation into a failure.
    if (failure_ || userCancelled_) return;
    failure_ = error;
    failureMessage_ = describeError(error, &failureCode_);
    FailureInfo info;
    info.message = failureMessage_;
    info.timestampMillis = nowMillis();
    try {
      std::rethrow_exception(error);
    } catch (const OperatorFailure& e) {
      info.exceptionName = e.causeType().empty() ? "weir::OperatorFailure" : e.causeType();
      info.taskName = e.operatorName();
      info.location = "subtask " + std::to_string(e.subtask() + 1) + "/" + std::to_string(e.parallelism());
    } catch (const std::exception& e) {
      info.exceptionName = demangledTypeName(typeid(e));
    } catch (...) {
      info.exceptionName = "unknown";
    }
    failureInfo_ = std::move(info);
  }
  stopAll();
}

void JobExecution::stop() {
  if (running_.load() == 0) return;
  for (auto& t : subtasks_) {
    if (!t->source) continue;
    Subtask* task = t.get();
    task->mailbox.put([task] { task->stopRequested = true; });
  }
}

std::vector<std::vector<SubtaskSample>> JobExecution::sample() const {
  std::vector<std::vector<SubtaskSample>> out(vertices_.size());
  for (const auto& t : subtasks_) {
    SubtaskSample s;
    s.numRecordsIn = t->metrics.numRecordsIn.load(std::memory_order_relaxed);
    s.numRecordsOut = t->metrics.numRecordsOut.load(std::memory_order_relaxed);
    s.numSourceRecords = t->metrics.numSourceRecords.load(std::memory_order_relaxed);
    s.idleTimeNanos = t->metrics.idleTimeNow();
    s.backPressuredTimeNanos = t->metrics.backPressuredTimeNow();
    s.currentInputWatermark = t->metrics.currentInputWatermark.load(std::memory_order_relaxed);
    s.currentOutputWatermark = t->metrics.currentOutputWatermark.load(std::memory_order_relaxed);
    s.numLateRecordsDropped = t->metrics.numLateRecordsDropped.load(std::memory_order_relaxed);
    out[static_cast<size_t>(t->vertex)].push_back(s);
  }
  return out;
}

std::optional<FailureInfo> JobExecution::failure() const {
  std::lock_guard lock(mutex_);
  return failureInfo_;
}

int64_t JobExecution::endTimeMillis() const {
  std::lock_guard lock(mutex_);
  return endMillis_;
}

void JobExecution::cancel() {
  {
    std::lock_guard lock(mutex_);
    if (running_.load() == 0 || failure_ || userCancelled_) return;
    userCancelled_ = true;
  }
  stopAll();
}

void JobExecution::stopAll() {
  if (stopping_.exchange(true)) return;
  for (auto& c : channels_) c->cancel();
  for (auto& t : subtasks_) t->mailbox.put([] { throw TaskCancelled{}; });
}

JobStatus JobExecution::status() const {
  std::lock_guard lock(mutex_);
  if (running_.load() == 0) return finalStatus_;
  if (failure_) return JobStatus::FAILING;
  if (userCancelled_) return JobStatus::CANCELLING;
  return JobStatus::RUNNING;
}

JobExecutionResult JobExecution::wait() {
  {
    std::lock_guard join(joinMutex_);
    for (auto& t : subtasks_) {
      if (t->thread.get_id() == std::this_thread::get_id())
        throw Error(ErrorCode::kInvalidJob, "JobClient::wait() called from a subtask of the job it waits for");
    }
    for (auto& t : subtasks_)
      if (t->thread.joinable()) t->thread.join();
  }
  std::lock_guard lock(mutex_);
  if (failure_) throw JobExecutionError(failureCode_, "job '" + jobName_ + "' failed: " + failureMessage_);
  JobExecutionResult result;
  result.jobName = jobName_;
  result.status = finalStatus_;
  result.netRuntime = runtime_;
  return result;
}

JobMetrics JobExecution::metrics() const {
  JobMetrics m;
  m.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - startTime_);
  for (const auto& v : vertices_) {
    JobMetrics::Vertex out;
    out.name = v.name;
    out.parallelism = v.parallelism;
    out.isSource = v.isSource;
    out.isSink = v.isSink;
    m.vertices.push_back(out);
  }
  for (const auto& t : subtasks_) {
    auto& out = m.vertices[static_cast<size_t>(t->vertex)];
    out.numRecordsIn += t->metrics.numRecordsIn.load(std::memory_order_relaxed);
    out.numRecordsOut += t->metrics.numRecordsOut.load(std::memory_order_relaxed);
    out.numSourceRecords += t->metrics.numSourceRecords.load(std::memory_order_relaxed);
    out.numLateRecordsDropped += t->metrics.numLateRecordsDropped.load(std::memory_order_relaxed);
    out.idleTimeNanos += t->metrics.idleTimeNow();
    out.backPressuredTimeNanos += t->metrics.backPressuredTimeNow();
    for (auto* c : t->inputChannels) {
      out.inputCreditsPerChannel = c->credits();
      out.maxBuffersInFlight = std::max(out.maxBuffersInFlight, c->maxBuffersInFlight());
    }
  }
  return m;
}

}  // namespace weir::detail
