#include "runtime/attempt.h"

#include <xxhash.h>

#include <filesystem>
#include <map>
#include <vector>

#include "runtime/checkpoint_restore.h"

namespace weir::runtime {

using namespace weir::detail;

namespace {

using Kind = Transformation::Kind;
using Vertex = JobPlan::Vertex;

// The operator of the fused run from `head` to `tail`, which may start after the first
// node of the run the API recorded (fusedFrom).
std::unique_ptr<StreamOperator> createFused(const JobPlan& plan, int head, int tail) {
  const auto& nodes = plan.graph.nodes;
  auto node = [&](int id) -> const Transformation& { return *nodes[static_cast<size_t>(id)]; };
  std::vector<std::string> names;  // head to tail
  int id = tail;
  for (;; id = node(id).inputs[0]) {
    names.insert(names.begin(), node(id).name);
    if (id == head) break;
  }
  size_t first = 0;  // head's place in the recorded run
  for (; id != node(tail).fusedFrom; id = node(id).inputs[0]) ++first;
  auto op = node(tail).createFused(std::move(names), first);
  if (!op)
    throw Error(ErrorCode::kInvalidJob,
                "internal: no fused operator for '" + node(head).name + "' to '" + node(tail).name + "'");
  return op;
}

// Flink's operator_id: 32 hex digits, here derived from the operator's id in checkpoints.
std::string operatorMetricId(const std::string& operatorId) {
  XXH128_hash_t h = XXH3_128bits(operatorId.data(), operatorId.size());
  return hex128(h.high64, h.low64);
}

// Each operator's numRecordsIn, numRecordsOut, currentInputWatermark and
// currentOutputWatermark (Flink's operator scope), read from what the chain counts
// already: the subtask's input for the head, what the operator before emitted for the
// others, the stage counts of a fused run (docs/rest.md, "Operator metrics").
void registerOperatorMetrics(const JobPlan& plan, const Vertex& vertex, StreamTask& task,
                             const std::map<int, StreamOperator*>& operatorOf) {
  using Counts = std::vector<const std::atomic<uint64_t>*>;
  using Watermarks = std::vector<const std::atomic<int64_t>*>;
  const auto& nodes = plan.graph.nodes;
  auto node = [&](int id) -> const Transformation& { return *nodes[static_cast<size_t>(id)]; };
  auto emittedRecords = [&](int id) {
    Counts counts;
    for (const auto& [output, emitted] : task.emittedBy)
      if (output.first == id) counts.push_back(&emitted->records);
    return counts;
  };
  auto emittedWatermark = [&](int id) { return Watermarks{&task.emittedBy.at({id, -1})->watermark}; };
  std::map<int, Counts> in, out;
  std::map<int, Watermarks> inWatermark, outWatermark;
  for (int id : vertex.nodes) {
    if (plan.fusedAway[static_cast<size_t>(id)]) continue;  // its run's head sets it
    if (id == vertex.nodes[0] && node(id).kind == Kind::kSource) {
      in[id] = {&task.metrics.numSourceRecords};  // what its reader produced (FLIP-33)
    } else if (id == vertex.nodes[0]) {
      in[id] = {&task.metrics.numRecordsIn};
      inWatermark[id] = {&task.metrics.currentInputWatermark};
    } else {
      for (size_t ei : plan.inEdges[static_cast<size_t>(id)]) {
        const auto& e = plan.edges[ei];
        if (!e.chained) continue;
        const EmittedCounts* emitted = task.emittedBy.at({e.producer, e.sideOutputTag});
        in[id].push_back(&emitted->records);
        inWatermark[id].push_back(&emitted->watermark);
      }
    }
    if (int tail = plan.fusedTail[static_cast<size_t>(id)]; tail >= 0) {
      std::vector<int> run;  // head to tail
      for (int n = tail;; n = node(n).inputs[0]) {
        run.insert(run.begin(), n);
        if (n == id) break;
      }
      // Watermarks pass through a run unchanged: every stage shows the one it passed on.
      for (size_t k = 1; k < run.size(); ++k) {
        const auto* reached = operatorOf.at(id)->fusedStageInput(k);
        in[run[k]] = reached ? Counts{reached} : in[run[k - 1]];
        inWatermark[run[k]] = emittedWatermark(tail);
        out[run[k - 1]] = in[run[k]];
        outWatermark[run[k - 1]] = emittedWatermark(tail);
      }
      out[tail] = emittedRecords(tail);
      outWatermark[tail] = emittedWatermark(tail);
    } else if (node(id).isSink) {  // it writes what it receives
      out[id] = in[id];
      outWatermark[id] = inWatermark[id];
    } else {
      out[id] = emittedRecords(id);
      outWatermark[id] = emittedWatermark(id);
    }
  }
  auto& registry = task.metrics.registry;
  for (int id : vertex.nodes) {
    const std::string& scope = operatorOf.at(id)->metricScope();
    registry.setOperatorId(scope, operatorMetricId(plan.operatorIds[static_cast<size_t>(id)]));
    registry.builtInCounter(scope, "numRecordsIn", in[id]);
    registry.builtInCounter(scope, "numRecordsOut", out[id]);
    if (inWatermark.count(id)) registry.builtInWatermark(scope, "currentInputWatermark", inWatermark[id]);
    registry.builtInWatermark(scope, "currentOutputWatermark", outWatermark[id]);
  }
}

}  // namespace

std::shared_ptr<Attempt> buildAttempt(const JobPlan& plan, const std::string& restoreFrom,
                                      checkpoint::CheckpointCoordinator* coordinator, int stage,
                                      const RetainedPartitions& inputs, BlockingShuffleMemory* shuffleMemory) {
  const StreamGraph& graph = plan.graph;
  const auto& nodes = graph.nodes;
  const auto& edges = plan.edges;
  const auto& inEdges = plan.inEdges;
  const auto& outEdges = plan.outEdges;
  const auto& vertexOf = plan.vertexOf;
  const auto& parallelism = plan.parallelism;
  auto attempt = std::make_shared<Attempt>();
  attempt->stage = stage;
  auto inStage = [&](int node) { return plan.stageOf[static_cast<size_t>(vertexOf[static_cast<size_t>(node)])] == stage; };
  CheckpointRestore restore(plan, restoreFrom, plan.graph.restore.allowNonRestoredState());
  // Per edge: channels[p * consumerParallelism + c], or channels[p] for forward edges.
  std::vector<std::vector<ChannelBase*>> channelsOf(edges.size());

  // Tasks first: channels need their consumer's signal.
  std::vector<std::vector<StreamTask*>> subtasksOf(plan.vertices.size());
  for (int vi : plan.stages[static_cast<size_t>(stage)].vertices) {
    const size_t v = static_cast<size_t>(vi);
    attempt->commitsAtDrain = attempt->commitsAtDrain || (plan.batch && plan.vertices[v].isSink);
    for (int s = 0; s < plan.vertices[v].parallelism; ++s) {
      auto task = std::make_unique<StreamTask>();
      task->vertex = static_cast<int>(v);
      task->index = s;
      task->parallelism = plan.vertices[v].parallelism;
      task->maxParallelism = plan.vertices[v].maxParallelism;
      task->bufferTimeout = graph.bufferTimeout;
      task->coordinator = coordinator;
      task->checkpointConfig = &graph.checkpointConfig;
      task->checkpointClock = coordinator ? &coordinator->clock() : nullptr;
      subtasksOf[v].push_back(task.get());
      attempt->tasks.push_back(std::move(task));
    }
  }
  for (size_t ei = 0; ei < edges.size(); ++ei) {
    const auto& e = edges[ei];
    if (e.chained || !inStage(e.producer)) continue;
    int pp = parallelism[static_cast<size_t>(e.producer)];
    int cp = parallelism[static_cast<size_t>(e.consumer)];
    if (e.blocking) {
      // One partition per producer subtask, a subpartition per consumer subtask; its
      // channels are the writers' as any other.
      if (shuffleMemory == nullptr) throw Error(ErrorCode::kInternal, "a stage with blocking output but no shuffle memory");
      const std::string to = nodes[static_cast<size_t>(e.consumer)]->name;
      for (int p = 0; p < pp; ++p) {
        auto partition = std::make_shared<BlockingResultPartition>(
            cp, *shuffleMemory, graph.tmpDirectory,
            "the output of '" + nodes[static_cast<size_t>(e.producer)]->name + "' " + std::to_string(p + 1) + "/" +
                std::to_string(pp) + " to '" + to + "'");
        for (int c = 0; c < cp; ++c) {
          auto channel = e.type->createBlockingChannel(partition.get(), c, plan.bufferRecords[ei]);
          channelsOf[ei].push_back(channel.get());
          attempt->channels.push_back(std::move(channel));
        }
        attempt->produced[{ei, p}] = std::move(partition);
      }
      continue;
    }
    auto& consumers = subtasksOf[static_cast<size_t>(vertexOf[static_cast<size_t>(e.consumer)])];
    auto& producers = subtasksOf[static_cast<size_t>(vertexOf[static_cast<size_t>(e.producer)])];
    bool forward = e.partitioner == PartitionerKind::kForward;
    for (int p = 0; p < pp; ++p) {
      for (int c = 0; c < cp; ++c) {
        if (forward && c != p) continue;
        StreamTask* consumer = consumers[static_cast<size_t>(c)];
        auto channel = e.type->createChannel(graph.buffersPerChannel, plan.bufferRecords[ei], &consumer->signal);
        channel->setProducer(&producers[static_cast<size_t>(p)]->signal);
        channelsOf[ei].push_back(channel.get());
        consumer->inputChannels.push_back(channel.get());
        attempt->channels.push_back(std::move(channel));
      }
    }
  }

  // Split enumerators, one per source (they validate the source's configuration).
  std::map<int, TrackingSplitEnumerator*> enumeratorOf;
  for (int v : plan.stages[static_cast<size_t>(stage)].vertices) {
    const auto& vertex = plan.vertices[static_cast<size_t>(v)];
    const auto& head = *nodes[static_cast<size_t>(vertex.nodes[0])];
    if (!vertex.isSource || !head.createEnumerator) continue;
    auto enumerator = restore.enumeratorFor(head, vertex.parallelism);
    enumeratorOf[head.id] = enumerator.get();
    attempt->enumerators.push_back(std::move(enumerator));
  }

  // Operators, outputs and inputs of every subtask.
  for (auto& taskPtr : attempt->tasks) {
    StreamTask& task = *taskPtr;
    const Vertex& vertex = plan.vertices[static_cast<size_t>(task.vertex)];
    std::map<int, StreamOperator*> operatorOf;
    for (int id : vertex.nodes) {
      const auto& node = *nodes[static_cast<size_t>(id)];
      int fusedTail = plan.fusedTail[static_cast<size_t>(id)];
      auto op = fusedTail < 0 ? node.createOperator() : createFused(plan, id, fusedTail);
      task.contexts.push_back(std::make_unique<RuntimeContext>(node.name, task.index, vertex.parallelism,
                                                               vertex.maxParallelism));
      task.contexts.back()->setStateBackend(graph.stateBackend);
      task.contexts.back()->setClock(graph.clock);
      task.contexts.back()->setFileSystem(plan.fileSystem());
      task.contexts.back()->setCheckpointingEnabled(plan.checkpointing);
      task.contexts.back()->setBatch(plan.batch);
      task.contexts.back()->setSortedInputs(static_cast<size_t>(graph.sortedInputsMemoryBytes), graph.tmpDirectory);
      if (coordinator != nullptr)
        task.contexts.back()->setCheckpointDirectory(
            std::filesystem::path(coordinator->jobFolder()).parent_path().string());
      task.contexts.back()->setProcessingTimeService(&task.processingTime);
      task.contexts.back()->setMailboxExecutor(&task);
      task.contexts.back()->setAutoWatermarkInterval(graph.autoWatermarkInterval);
      task.contexts.back()->setRestored(restore.stateOf(id, task.index, vertex.parallelism));
      task.operatorIds.push_back(plan.operatorIds[static_cast<size_t>(id)]);
      op->setup(task.contexts.back().get(), &task.metrics);
      operatorOf[id] = op.get();
      if (node.kind == Kind::kSource) {
        task.source = static_cast<SourceOperatorBase*>(op.get());
        task.source->setAutoWatermarkInterval(graph.autoWatermarkInterval);
        auto it = enumeratorOf.find(id);
        task.source->setEnumerator(it == enumeratorOf.end() ? nullptr : it->second);
        task.source->setWakeUp([signal = &task.signal] { signal->notify(); });
        task.source->joinWatermarkAlignment(attempt->watermarkAlignment);
      }
      task.operators.push_back(std::move(op));
    }
    // Wire each member's outputs: chained consumers directly, the rest through writers,
    // each output counted. A fused run's head gives its tail's output; the members after
    // it get nothing.
    for (int id : vertex.nodes) {
      if (plan.fusedAway[static_cast<size_t>(id)]) continue;
      StreamOperator* op = operatorOf.at(id);
      if (int tail = plan.fusedTail[static_cast<size_t>(id)]; tail >= 0) id = tail;
      const auto& node = *nodes[static_cast<size_t>(id)];
      std::map<int, std::vector<OutputBase*>> targetsByTag;
      std::map<int, std::shared_ptr<const StreamType>> typeByTag;
      for (size_t ei : outEdges[static_cast<size_t>(id)]) {
        const auto& e = edges[ei];
        typeByTag[e.sideOutputTag] = e.type;
        if (e.chained) {
          targetsByTag[e.sideOutputTag].push_back(operatorOf.at(e.consumer)->input());
          continue;
        }
        int cp = parallelism[static_cast<size_t>(e.consumer)];
        std::vector<ChannelBase*> channels;
        if (e.partitioner == PartitionerKind::kForward) {
          channels.push_back(channelsOf[ei][static_cast<size_t>(task.index)]);
        } else {
          for (int c = 0; c < cp; ++c) channels.push_back(channelsOf[ei][static_cast<size_t>(task.index * cp + c)]);
        }
        // A keyBy edge partitions by the consumer's key groups.
        auto writer = e.keyedWriter ? e.keyedWriter(channels, plan.maxParallelism[static_cast<size_t>(e.consumer)],
                                                    &task.metrics)
                                    : e.type->createWriter(e.partitioner, channels, &task.metrics, task.index,
                                                           parallelism[static_cast<size_t>(id)]);
        targetsByTag[e.sideOutputTag].push_back(writer.get());
        task.writers.push_back(dynamic_cast<ChannelWriterBase*>(writer.get()));
        task.outputs.push_back(std::move(writer));
      }
      auto combine = [&](int tag, const StreamType& type) -> OutputBase* {
        auto& targets = targetsByTag[tag];
        OutputBase* out = targets.size() == 1 ? targets[0] : nullptr;
        if (out == nullptr) {
          task.outputs.push_back(targets.empty() ? type.createNullOutput() : type.createFanOut(targets));
          out = task.outputs.back().get();
        }
        EmittedCounts& counts = task.emitted.emplace_back();
        task.emittedBy[{id, tag}] = &counts;
        task.outputs.push_back(type.createCountingOutput(out, &counts));
        return task.outputs.back().get();
      };
      if (!node.isSink) op->setOutput(combine(-1, *node.outputType));
      for (auto& [tag, type] : typeByTag) {
        if (tag >= 0) op->addSideOutput(tag, type->createSideOutput(combine(tag, *type)));
      }
    }
    registerOperatorMetrics(plan, vertex, task, operatorOf);
    if (!task.source) {
      int head = vertex.nodes[0];
      task.headInput = operatorOf.at(head)->input();
      int channelCount = 0;
      for (size_t ei : inEdges[static_cast<size_t>(head)]) {
        const auto& e = edges[ei];
        int pp = parallelism[static_cast<size_t>(e.producer)];
        channelCount += e.partitioner == PartitionerKind::kForward ? 1 : pp;
      }
      task.valve = std::make_unique<time::WatermarkValve>(channelCount, task.headInput,
                                                          &task.metrics.currentInputWatermark);
      for (size_t ei : inEdges[static_cast<size_t>(head)]) {
        const auto& e = edges[ei];
        int cp = parallelism[static_cast<size_t>(head)];
        int pp = parallelism[static_cast<size_t>(e.producer)];
        OutputBase* target = e.inputIndex == 0 ? task.headInput : operatorOf.at(head)->secondInput();
        for (int p = 0; p < pp; ++p) {
          const InputOrigin origin{plan.operatorIds[static_cast<size_t>(e.producer)] + "/" + std::to_string(e.inputIndex),
                                   e.partitioner, e.keyGroupOf};
          if (e.blocking) {
            const auto& partition = attempt->consumed[{ei, p}] = inputs.at({ei, p});
            auto reader = partition->reader(task.index);
            task.inputs.push_back(e.type->createBlockingInput(
                std::make_unique<BlockingResultPartition::Reader>(std::move(reader)), target, &task.metrics));
            task.inputOrigins.push_back(origin);
            continue;
          }
          ChannelBase* channel = nullptr;
          if (e.partitioner == PartitionerKind::kForward) {
            if (p == task.index) channel = channelsOf[ei][static_cast<size_t>(p)];
          } else {
            channel = channelsOf[ei][static_cast<size_t>(p * cp + task.index)];
          }
          if (channel) {
            task.inputs.push_back(e.type->createInput(channel, target, &task.metrics));
            task.inputOrigins.push_back(origin);
          }
        }
      }
      if (auto* restored = task.contexts.front()->restored()) {
        task.restoredChannelState = std::move(restored->channelState);
        task.channelStateRescaled = restored->channelStateRescaled;
        // Refused here, not when replayed: a task failure would restart from it forever.
        for (const auto& [oldSubtask, element] : task.restoredChannelState)
          parseInFlight(task.inputOrigins, task.operators.front()->name(), element, task.channelStateRescaled);
      }
    }
    // Records in flight to an operator that no longer heads a chain (its input became a
    // chained forward edge) have no channel to arrive through.
    for (size_t i = task.source ? 0 : 1; i < task.contexts.size(); ++i) {
      auto* restored = task.contexts[i]->restored();
      if (restored != nullptr && !restored->channelState.empty())
        throw Error(ErrorCode::kCheckpoint,
                    "the checkpoint holds records in flight to '" + task.contexts[i]->getTaskName() +
                        "', whose input is chained now; restore it with the parallelisms it was taken at");
    }
  }

  return attempt;
}


}  // namespace weir::runtime
