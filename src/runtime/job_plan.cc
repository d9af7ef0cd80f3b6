#include "runtime/job_plan.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace weir::runtime {

using namespace weir::detail;

namespace {

using Kind = Transformation::Kind;
using Vertex = JobPlan::Vertex;

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
        edge.keyGroupOf = node.keyGroupOf;
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

// Stable for the same vertex of the same graph, so the Web UI can follow it.
std::string vertexId(int index, const std::string& name) {
  std::string seed = std::to_string(index) + "\n" + name;
  XXH128_hash_t h = XXH3_128bits(seed.data(), seed.size());
  return hex128(h.high64, h.low64);
}

// The id an operator's state has in checkpoints: its uid, or one derived from its place
// and name in the graph (stable while the program does not change).
std::string operatorIdOf(const Transformation& node) {
  if (!node.uid.empty()) return node.uid;
  std::string seed = std::to_string(node.id) + "\n" + node.name;
  return "op-" + hex128(0, XXH3_64bits(seed.data(), seed.size())).substr(16);
}

// Flink's advice, as a warning when the job starts: a stateful operator without a uid
// has an id derived from the graph, which changes when operators are added or removed
// before it, and its state then no longer restores into it from a savepoint. Sources,
// sinks and keyed operators are the stateful ones weir can tell from the graph.
void warnOfStatefulOperatorsWithoutUid(const JobPlan& plan) {
  const auto& nodes = plan.graph.nodes;
  std::set<int> keyed;
  for (const auto& e : plan.edges)
    if (e.partitioner == PartitionerKind::kKeyGroup) keyed.insert(e.consumer);
  std::string names;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Transformation& node = *nodes[i];
    if (plan.vertexOf[i] < 0 || !node.uid.empty()) continue;
    if (node.kind != Transformation::Kind::kSource && !node.isSink && !keyed.contains(static_cast<int>(i))) continue;
    names += (names.empty() ? "'" : ", '") + node.name + "'";
  }
  if (names.empty()) return;
  std::fprintf(stderr,
               "weir: stateful operators without a uid: %s; their ids derive from the job's graph, so their state "
               "restores from a savepoint only into the same graph; set uid(...) on them to change the job around "
               "them\n",
               names.c_str());
}

}  // namespace

std::string hex128(uint64_t hi, uint64_t lo) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

namespace {

// What a channel costs besides its buffers: its queue, lock and counters, and the
// writer's and reader's share of it (measured: about 1.2 KiB).
constexpr int64_t kChannelOverheadBytes = 1536;
// The smallest buffer a channel is given; a job that cannot give every channel its
// buffers of this size within its network memory is refused.
constexpr int64_t kMinBufferBytes = 256;

std::string mebibytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// Every channel holds up to buffersPerChannel + 1 buffers (its credits, and the one its
// producer fills). One buffer size in bytes for all: the budget's share, at most what a
// batch holds (about 32 KiB); each edge's in records of its type.
std::vector<size_t> bufferRecordsWithin(const StreamGraph& graph, const std::vector<PhysicalEdge>& edges,
                                        const std::vector<int>& parallelism) {
  int64_t channels = 0;
  for (const auto& e : edges) {
    if (e.chained) continue;
    const int64_t pp = parallelism[static_cast<size_t>(e.producer)], cp = parallelism[static_cast<size_t>(e.consumer)];
    channels += e.partitioner == PartitionerKind::kForward ? pp : pp * cp;
  }
  const int64_t buffers = graph.buffersPerChannel + 1;
  const int64_t budget = graph.networkMemoryBytes;
  if (channels > 0 && budget < channels * (kChannelOverheadBytes + buffers * kMinBufferBytes))
    throw Error(ErrorCode::kInvalidArgument,
                "the job's " + std::to_string(channels) + " channels need at least " +
                    mebibytes(channels * (kChannelOverheadBytes + buffers * kMinBufferBytes)) +
                    " of network memory (" + std::to_string(buffers) + " buffers of at least " +
                    std::to_string(kMinBufferBytes) + " bytes each, and about " +
                    std::to_string(kChannelOverheadBytes) + " bytes more), more than its " + mebibytes(budget) +
                    ": raise it (setNetworkMemory, --network-memory MB), or lower the parallelism or the " +
                    "buffers per channel");
  const int64_t share = channels > 0 ? (budget - channels * kChannelOverheadBytes) / (channels * buffers) : 0;
  std::vector<size_t> records;
  for (const auto& e : edges) {
    const size_t fit = static_cast<size_t>(share) / e.type->recordBytes();
    records.push_back(std::clamp<size_t>(fit, 1, e.type->maxBufferRecords()));
  }
  return records;
}

}  // namespace

JobPlan JobPlan::create(const StreamGraph& original, int restoredMaxParallelism) {
  JobPlan plan;
  plan.graph = original;
  StreamGraph& graph = plan.graph;
  const auto& nodes = graph.nodes;
  const size_t n = nodes.size();
  if (graph.maxParallelism == 0) {
    // Not set: as Flink, the restored state's, or the default of the highest parallelism.
    int highest = graph.defaultParallelism;
    for (const auto& node : nodes) highest = std::max(highest, node->parallelism);
    graph.maxParallelism = restoredMaxParallelism > 0 ? restoredMaxParallelism : defaultMaxParallelism(highest);
  }
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
  for (size_t i = 0; i < n; ++i) {
    if (!live[i] || nodes[i]->requiredSideOutputTag < 0) continue;
    bool consumed = std::any_of(outEdges[i].begin(), outEdges[i].end(), [&](size_t e) {
      return edges[e].sideOutputTag == nodes[i]->requiredSideOutputTag;
    });
    if (!consumed)
      throw invalidJob("'" + nodes[i]->name + "' has a side output nothing consumes: " +
                       nodes[i]->requiredSideOutputReason);
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
        auto& vertex = plan.vertices[static_cast<size_t>(v)];
        vertex.nodes.push_back(static_cast<int>(i));
        vertex.name += " -> " + node.name;
        vertex.isSink = vertex.isSink || node.isSink;
        continue;
      }
    }
    vertexOf[i] = static_cast<int>(plan.vertices.size());
    Vertex vertex;
    vertex.name = node.kind == Kind::kSource ? "Source: " + node.name : node.name;
    vertex.parallelism = parallelism[i];
    vertex.nodes = {static_cast<int>(i)};
    vertex.isSource = node.kind == Kind::kSource;
    vertex.isSink = node.isSink;
    plan.vertices.push_back(std::move(vertex));
  }

  // Fused runs. Going back from a run's last node, the run takes each node's input while
  // it is chained, consumed by that node alone, and not yet in a run; a run cut on the way
  // fuses from the cut (when two nodes at least are left), and the nodes before the cut
  // form runs of their own when the loop reaches them.
  plan.fusedTail.assign(n, -1);
  plan.fusedAway.assign(n, false);
  auto inRun = [&](size_t i) { return plan.fusedAway[i] || plan.fusedTail[i] >= 0; };
  for (size_t z = n; z-- > 0;) {
    const auto& tail = *nodes[z];
    if (vertexOf[z] < 0 || tail.fusedFrom < 0 || inRun(z)) continue;
    size_t head = z;
    while (head != static_cast<size_t>(tail.fusedFrom) && inEdges[head].size() == 1) {
      const auto& e = edges[inEdges[head][0]];
      size_t producer = static_cast<size_t>(e.producer);
      if (!e.chained || nodes[producer]->kind != Kind::kOperator ||
          producer != static_cast<size_t>(nodes[head]->inputs[0]) ||
          producer < static_cast<size_t>(tail.fusedFrom) || outEdges[producer].size() != 1 || inRun(producer))
        break;
      head = producer;
    }
    if (head == z) continue;
    plan.fusedTail[head] = static_cast<int>(z);
    for (size_t i = z; i != head; i = static_cast<size_t>(nodes[i]->inputs[0])) plan.fusedAway[i] = true;
  }

  // What the REST API shows of the vertices.
  for (size_t v = 0; v < plan.vertices.size(); ++v) {
    const auto& vertex = plan.vertices[v];
    VertexInfo info;
    info.id = vertexId(static_cast<int>(v), vertex.name);
    info.name = vertex.name;
    info.parallelism = vertex.parallelism;
    info.isSource = vertex.isSource;
    info.isSink = vertex.isSink;
    for (int id : vertex.nodes)
      if (!nodes[static_cast<size_t>(id)]->uid.empty()) info.uids.push_back(nodes[static_cast<size_t>(id)]->uid);
    plan.vertexInfo.push_back(std::move(info));
  }
  std::set<std::tuple<int, int, std::string>> seen;
  for (auto& e : edges) {
    if (e.chained) continue;
    int from = vertexOf[static_cast<size_t>(e.producer)], to = vertexOf[static_cast<size_t>(e.consumer)];
    std::string strategy = partitionerName(e.partitioner);
    if (seen.insert({from, to, strategy}).second)
      plan.vertexInfo[static_cast<size_t>(to)].inputs.push_back({from, strategy});
  }

  plan.edges = std::move(edges);
  plan.bufferRecords = bufferRecordsWithin(graph, plan.edges, parallelism);
  plan.inEdges = std::move(inEdges);
  plan.outEdges = std::move(outEdges);
  plan.vertexOf = std::move(vertexOf);
  plan.parallelism = std::move(parallelism);

  // Checkpoints: every operator must take part, and their ids must be unique.
  std::map<std::string, std::string> nameOfId;
  for (size_t i = 0; i < n; ++i) {
    plan.operatorIds.push_back(operatorIdOf(*nodes[i]));
    if (plan.vertexOf[i] < 0) continue;
    auto [it, inserted] = nameOfId.emplace(plan.operatorIds[i], nodes[i]->name);
    if (!inserted)
      throw invalidJob("operators '" + it->second + "' and '" + nodes[i]->name + "' have the same uid '" +
                       plan.operatorIds[i] + "'; uids must be unique");
  }
  const CheckpointConfig& config = graph.checkpointConfig;
  plan.checkpointing = config.isCheckpointingEnabled();
  if (plan.checkpointing) warnOfStatefulOperatorsWithoutUid(plan);
  if (plan.checkpointing && config.isUnalignedCheckpointsEnabled()) {
    if (config.getCheckpointingMode() != CheckpointingMode::EXACTLY_ONCE)
      throw Error(ErrorCode::kInvalidArgument,
                  "unaligned checkpoints need the EXACTLY_ONCE checkpointing mode (at least once never aligns)");
    for (const auto& e : plan.edges) {
      if (e.chained || e.type->serializable()) continue;
      throw invalidJob("unaligned checkpoints persist records in flight, but those from '" +
                       nodes[static_cast<size_t>(e.producer)]->name + "' to '" +
                       nodes[static_cast<size_t>(e.consumer)]->name +
                       "' have no weir::Serializer; give their type one (WEIR_STRUCT) or use aligned checkpoints");
    }
  }
  if (plan.checkpointing) {
    for (size_t i = 0; i < n; ++i) {
      if (plan.vertexOf[i] < 0) continue;
      auto probe = nodes[i]->createOperator();
      std::string reason = probe->checkpointUnsupportedReason();
      if (!reason.empty())
        throw invalidJob("checkpointing is enabled, but operator '" + nodes[i]->name +
                         "' cannot take part in checkpoints: " + reason);
    }
  }
  return plan;
}

}  // namespace weir::runtime
