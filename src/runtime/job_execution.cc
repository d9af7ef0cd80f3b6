#include "runtime/job_execution.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "core/thread_name.h"
#include "runtime/barrier_handler.h"

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
  std::function<int(const void*, int)> keyGroupOf;  // kKeyGroup
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

// What plan() works out once and every attempt is built from.
struct JobExecution::Plan {
  struct Vertex {
    std::string name;
    int parallelism = 0;
    std::vector<int> nodes;  // chain members, in id order; nodes[0] is the head
    bool isSource = false;
    bool isSink = false;
  };
  StreamGraph graph;
  std::vector<Vertex> vertices;
  std::vector<PhysicalEdge> edges;
  std::vector<std::vector<size_t>> inEdges, outEdges;  // per node
  std::vector<int> vertexOf;                           // per node; -1 when it does not run
  std::vector<int> parallelism;                        // per node
  std::vector<std::string> operatorIds;                // per node: uid, or derived from the graph
  // Fusion (fused_operator.h): per node, the last node of the fused run it heads, or -1;
  // and whether it is a later member of one (its operator is made but gets no records).
  std::vector<int> fusedTail;
  std::vector<bool> fusedAway;
  bool checkpointing = false;
  std::string restorePath;  // the first attempt's checkpoint, verified
};

namespace {

using Vertex = JobExecution::Plan::Vertex;

// The operator of the fused run from `head` to `tail`, which may start after the first
// node of the run the API recorded (fusedFrom).
std::unique_ptr<StreamOperator> createFused(const JobExecution::Plan& plan, int head, int tail) {
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

// What a new attempt's operators start from: a checkpoint's files, read per subtask.
// Every operator instance gets the key groups it now owns and its share of the
// operator state, so the parallelism may differ from the checkpoint's.
class Restore {
 public:
  Restore(const JobExecution::Plan& plan, const std::string& path) : plan_(plan) {
    if (path.empty()) return;
    folder_ = checkpointFolder(path);
    metadata_ = readMetadata(folder_);
    verifyCheckpoint(folder_, metadata_);
    if (metadata_.maxParallelism != plan.graph.maxParallelism)
      throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "' was taken with maxParallelism " +
                                              std::to_string(metadata_.maxParallelism) + ", the job has " +
                                              std::to_string(plan.graph.maxParallelism) + "; they must be equal");
    for (const auto& f : metadata_.files) {
      bool known = std::find(plan.operatorIds.begin(), plan.operatorIds.end(), f.operatorId) != plan.operatorIds.end();
      if (!known)
        throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "' holds state of operator '" +
                                                f.operatorName + "' (id " + f.operatorId +
                                                ") that this job does not have; give operators stable uids");
      byOperator_[f.operatorId].push_back(&f);
    }
  }

  std::unique_ptr<RestoredOperatorState> stateOf(int node, int subtask, int parallelism) const {
    auto files = filesOf(node);
    if (files == nullptr) return nullptr;
    auto out = std::make_unique<RestoredOperatorState>();
    KeyGroupRange range = computeKeyGroupRangeForOperatorIndex(plan_.graph.maxParallelism, parallelism, subtask);
    out->keyGroups = range;
    std::vector<std::vector<OperatorStateSnapshot>> old(static_cast<size_t>(files->front()->parallelism));
    for (const auto* f : *files) {
      if (f->subtask < 0 || f->subtask >= static_cast<int>(old.size()))
        throw Error(ErrorCode::kCheckpoint, "checkpoint '" + folder_ + "': file '" + f->file + "' names subtask " +
                                                std::to_string(f->subtask) + " of " + std::to_string(old.size()));
      readStateFile(folder_, *f, range, *out, old[static_cast<size_t>(f->subtask)]);
    }
    takeChannelState(old, subtask, parallelism, *out);
    out->operatorState = redistributeOperatorState(old, parallelism).at(static_cast<size_t>(subtask));
    return out;
  }

  // The enumerator of source `node` for a new attempt at `parallelism`. Restored: the
  // splits of the checkpoint's enumeration (at its parallelism) that no reader had been
  // handed, for any reader that asks; what readers had goes back through their state.
  std::unique_ptr<TrackingSplitEnumerator> enumeratorFor(const Transformation& node, int parallelism) const {
    auto files = filesOf(node.id);
    if (files == nullptr)
      return std::make_unique<TrackingSplitEnumerator>(node.createEnumerator(parallelism),
                                                       std::vector<std::string>{}, parallelism);
    std::vector<std::string> assigned = assignedSplits(node.id);
    std::set<std::string> skip(assigned.begin(), assigned.end());
    int old = files->front()->parallelism;
    auto original = node.createEnumerator(old);
    std::deque<std::unique_ptr<SourceSplit>> remaining;
    for (int reader = 0; original != nullptr && reader < old; ++reader) {  // null: a source without splits
      while (auto split = original->nextSplit(reader)) {
        if (!skip.contains(split->splitId())) remaining.push_back(std::move(split));
      }
    }
    return std::make_unique<TrackingSplitEnumerator>(std::make_unique<SharedSplitEnumerator>(std::move(remaining)),
                                                     std::move(assigned), parallelism);
  }

  // Every split the checkpoint's readers of source `node` had been handed.
  std::vector<std::string> assignedSplits(int node) const {
    std::vector<std::string> ids;
    auto files = filesOf(node);
    if (files == nullptr) return ids;
    for (const auto* f : *files) {
      RestoredOperatorState unused;
      std::vector<OperatorStateSnapshot> lists;
      readStateFile(folder_, *f, KeyGroupRange{}, unused, lists);
      for (const auto& l : lists)
        if (l.name == kAssignedSplitsState) ids.insert(ids.end(), l.elements.begin(), l.elements.end());
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }

 private:
  // Takes the records in flight out of the old instances' operator state: subtask
  // `subtask`'s own, or at another parallelism every old subtask's, for the subtask to
  // pick its share when it replays them.
  static void takeChannelState(std::vector<std::vector<OperatorStateSnapshot>>& old, int subtask, int parallelism,
                               RestoredOperatorState& out) {
    out.channelStateRescaled = static_cast<int>(old.size()) != parallelism;
    for (size_t s = 0; s < old.size(); ++s) {
      auto& lists = old[s];
      for (auto it = lists.begin(); it != lists.end();) {
        if (it->name != kChannelState) {
          ++it;
          continue;
        }
        if (out.channelStateRescaled || static_cast<int>(s) == subtask)
          for (auto& element : it->elements) out.channelState.emplace_back(static_cast<int>(s), std::move(element));
        it = lists.erase(it);
      }
    }
  }

  const std::vector<const StateFileInfo*>* filesOf(int node) const {
    if (folder_.empty()) return nullptr;
    auto it = byOperator_.find(plan_.operatorIds[static_cast<size_t>(node)]);
    return it == byOperator_.end() ? nullptr : &it->second;
  }

  const JobExecution::Plan& plan_;
  std::string folder_;
  CheckpointMetadata metadata_;
  std::map<std::string, std::vector<const StateFileInfo*>> byOperator_;
};

// The id an operator's state has in checkpoints: its uid, or one derived from its place
// and name in the graph (stable while the program does not change).
std::string operatorIdOf(const Transformation& node) {
  if (!node.uid.empty()) return node.uid;
  std::string seed = std::to_string(node.id) + "\n" + node.name;
  return "op-" + hex128(0, XXH3_64bits(seed.data(), seed.size())).substr(16);
}

}  // namespace

std::shared_ptr<JobExecution> JobExecution::start(const StreamGraph& graph, std::string jobName) {
  auto job = plan(graph, std::move(jobName));
  job->launch();
  return job;
}

std::shared_ptr<JobExecution> JobExecution::plan(const StreamGraph& graph, std::string jobName) {
  std::shared_ptr<JobExecution> job(new JobExecution(std::move(jobName)), &JobExecution::destroy);
  job->plan_ = std::make_unique<Plan>();
  Plan& plan = *job->plan_;
  plan.graph = graph;
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

  plan.edges = std::move(edges);
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
  job->jobId_ = randomJobId();
  int64_t firstId = 1;
  if (!graph.restorePath.empty()) {
    // The first attempt (below) verifies it and checks it against the job's operators.
    plan.restorePath = checkpointFolder(graph.restorePath);
    firstId = readMetadata(plan.restorePath).checkpointId + 1;
  }
  if (plan.checkpointing) {
    std::string root = config.getCheckpointStorage();
    if (root.empty()) {
      std::string pattern = (std::filesystem::temp_directory_path() / "weir-checkpoints-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr)
        throw Error(ErrorCode::kIo, "cannot create a temporary checkpoint folder: " + std::string(std::strerror(errno)));
      root = job->checkpointTempRoot_ = pattern;
    } else {
      std::error_code ec;
      if (!std::filesystem::is_directory(root, ec))
        throw Error(ErrorCode::kInvalidArgument, "checkpoint directory '" + root + "' does not exist");
      if (::access(root.c_str(), W_OK | X_OK) != 0)
        throw Error(ErrorCode::kInvalidArgument, "checkpoint directory '" + root + "' is not writable");
    }
    job->coordinator_ = std::make_unique<CheckpointCoordinator>(
        config, (std::filesystem::path(root) / job->jobId_).string(), job->jobId_, graph.maxParallelism, firstId);
  }
  job->attempt_ = job->buildAttempt(plan.restorePath);
  return job;
}


namespace {

// One element of a chain head's channel state (kChannelState), parsed.
struct InFlight {
  size_t input = 0;  // the subtask's input of the edge it came by
  PartitionerKind sentBy = PartitionerKind::kForward;  // that edge's partitioner when it was sent
  std::string_view records;
};

// Whether records in flight on an edge sent by `kind` could be shared out at another
// parallelism: not forward and broadcast records (each old subtask had its own, and on
// a forward edge the records that follow rely on their order). Only on such edges do
// unaligned barriers overtake records, so the others never hold records in flight.
bool sharedOutOnRescale(PartitionerKind kind) {
  return kind != PartitionerKind::kForward && kind != PartitionerKind::kBroadcast;
}

// Finds the input of the edge an element came by; throws weir::Error (kCheckpoint)
// when the job has no such edge, or when at another parallelism its records cannot be
// shared out (only checkpoints written before barriers stopped overtaking on those
// edges hold such records).
InFlight parseInFlight(const Subtask& task, const std::string& element, bool rescaled) {
  DataInput in(element);
  std::string key = in.readString();
  uint64_t kind = in.readVarint("partitioner");
  InFlight out;
  out.sentBy = static_cast<PartitionerKind>(kind);
  auto it = std::find_if(task.inputOrigins.begin(), task.inputOrigins.end(),
                         [&](const Subtask::InputOrigin& o) { return o.key == key; });
  const std::string& name = task.operators.front()->name();
  if (it == task.inputOrigins.end() || kind > static_cast<uint64_t>(PartitionerKind::kKeyGroup))
    throw Error(ErrorCode::kCheckpoint, "the checkpoint holds records in flight to '" + name + "' from operator '" +
                                            key.substr(0, key.rfind('/')) + "', which no longer feeds it");
  if (rescaled && !sharedOutOnRescale(out.sentBy))
    throw Error(ErrorCode::kCheckpoint,
                std::string("the checkpoint holds records in flight to '") + name + "' on a " +
                    partitionerName(out.sentBy) +
                    " edge, which cannot be shared out at another parallelism (each subtask had its own, in "
                    "order); restore it at the parallelism it was taken at");
  if (rescaled && out.sentBy == PartitionerKind::kKeyGroup && !it->keyGroupOf)
    throw Error(ErrorCode::kCheckpoint, "the checkpoint holds records in flight to '" + name +
                                            "' by key, but its input from '" + key.substr(0, key.rfind('/')) +
                                            "' is no longer keyed");
  out.input = static_cast<size_t>(it - task.inputOrigins.begin());
  out.records = std::string_view(element).substr(in.position());
  return out;
}

}  // namespace

std::shared_ptr<JobExecution::Attempt> JobExecution::buildAttempt(const std::string& restoreFrom) {
  Plan& plan = *plan_;
  const StreamGraph& graph = plan.graph;
  const auto& nodes = graph.nodes;
  auto& edges = plan.edges;
  const auto& inEdges = plan.inEdges;
  const auto& outEdges = plan.outEdges;
  const auto& vertexOf = plan.vertexOf;
  const auto& parallelism = plan.parallelism;
  auto attempt = std::make_shared<Attempt>();
  for (auto& e : edges) e.channels.clear();
  Restore restore(plan, restoreFrom);

  // Subtasks first: channels need their consumer's signal.
  std::vector<std::vector<Subtask*>> subtasksOf(plan.vertices.size());
  for (size_t v = 0; v < plan.vertices.size(); ++v) {
    for (int s = 0; s < plan.vertices[v].parallelism; ++s) {
      auto task = std::make_unique<Subtask>();
      task->vertex = static_cast<int>(v);
      task->index = s;
      task->bufferTimeout = graph.bufferTimeout;
      subtasksOf[v].push_back(task.get());
      attempt->subtasks.push_back(std::move(task));
    }
  }
  for (auto& e : edges) {
    if (e.chained) continue;
    int pp = parallelism[static_cast<size_t>(e.producer)];
    int cp = parallelism[static_cast<size_t>(e.consumer)];
    auto& consumers = subtasksOf[static_cast<size_t>(vertexOf[static_cast<size_t>(e.consumer)])];
    auto& producers = subtasksOf[static_cast<size_t>(vertexOf[static_cast<size_t>(e.producer)])];
    bool forward = e.partitioner == PartitionerKind::kForward;
    for (int p = 0; p < pp; ++p) {
      for (int c = 0; c < cp; ++c) {
        if (forward && c != p) continue;
        Subtask* consumer = consumers[static_cast<size_t>(c)];
        auto channel = e.type->createChannel(graph.buffersPerChannel, &consumer->signal);
        channel->setProducer(&producers[static_cast<size_t>(p)]->signal);
        e.channels.push_back(channel.get());
        consumer->inputChannels.push_back(channel.get());
        attempt->channels.push_back(std::move(channel));
      }
    }
  }

  // Split enumerators, one per source (they validate the source's configuration).
  std::map<int, TrackingSplitEnumerator*> enumeratorOf;
  for (auto& vertex : plan.vertices) {
    const auto& head = *nodes[static_cast<size_t>(vertex.nodes[0])];
    if (!vertex.isSource || !head.createEnumerator) continue;
    auto enumerator = restore.enumeratorFor(head, vertex.parallelism);
    enumeratorOf[head.id] = enumerator.get();
    attempt->enumerators.push_back(std::move(enumerator));
  }

  // Operators, outputs and inputs of every subtask.
  for (auto& taskPtr : attempt->subtasks) {
    Subtask& task = *taskPtr;
    const Vertex& vertex = plan.vertices[static_cast<size_t>(task.vertex)];
    std::map<int, StreamOperator*> operatorOf;
    for (int id : vertex.nodes) {
      const auto& node = *nodes[static_cast<size_t>(id)];
      int fusedTail = plan.fusedTail[static_cast<size_t>(id)];
      auto op = fusedTail < 0 ? node.createOperator() : createFused(plan, id, fusedTail);
      task.contexts.push_back(std::make_unique<RuntimeContext>(node.name, task.index, vertex.parallelism,
                                                               graph.maxParallelism));
      task.contexts.back()->setStateBackend(graph.stateBackend);
      task.contexts.back()->setClock(graph.clock);
      task.contexts.back()->setProcessingTimeService(&task.processingTime);
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
      }
      task.operators.push_back(std::move(op));
    }
    // Wire each member's outputs: chained consumers directly, the rest through writers. A
    // fused run's head gives its tail's output; the members after it get nothing.
    for (int id : vertex.nodes) {
      if (plan.fusedAway[static_cast<size_t>(id)]) continue;
      StreamOperator* op = operatorOf.at(id);
      if (int tail = plan.fusedTail[static_cast<size_t>(id)]; tail >= 0) id = tail;
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
        task.writers.push_back(dynamic_cast<ChannelWriterBase*>(writer.get()));
        task.outputs.push_back(std::move(writer));
      }
      auto combine = [&](int tag, const StreamType& type) -> OutputBase* {
        auto& targets = targetsByTag[tag];
        if (targets.size() == 1) return targets[0];
        auto out = targets.empty() ? type.createNullOutput() : type.createFanOut(targets);
        task.outputs.push_back(std::move(out));
        return task.outputs.back().get();
      };
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
            task.inputOrigins.push_back({plan.operatorIds[static_cast<size_t>(e.producer)] + "/" +
                                             std::to_string(e.inputIndex),
                                         e.partitioner, e.keyGroupOf});
          }
        }
      }
      if (auto* restored = task.contexts.front()->restored()) {
        task.restoredChannelState = std::move(restored->channelState);
        task.channelStateRescaled = restored->channelStateRescaled;
        // Refused here, not when replayed: a task failure would restart from it forever.
        for (const auto& [oldSubtask, element] : task.restoredChannelState)
          parseInFlight(task, element, task.channelStateRescaled);
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


JobExecution::JobExecution(std::string jobName) : jobName_(std::move(jobName)) {}

JobExecution::~JobExecution() {
  {
    std::lock_guard join(joinMutex_);
    if (supervisor_.joinable()) supervisor_.join();
  }
  attempt_.reset();
  coordinator_.reset();
  if (!checkpointTempRoot_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(checkpointTempRoot_, ec);
  }
}

// The last handle of a job is gone: cancel it and wait for its threads, on a thread of
// its own when the handle was dropped by one of the job's threads (which cannot wait
// for itself).
void JobExecution::destroy(JobExecution* job) {
  job->cancel();
  if (job->onJobThread()) {
    std::thread([job] { delete job; }).detach();
  } else {
    delete job;
  }
}

bool JobExecution::onJobThread() const {
  auto self = std::this_thread::get_id();
  std::lock_guard lock(mutex_);
  if (supervisorId_ == self) return true;
  if (!attempt_) return false;
  return std::find(attempt_->threadIds.begin(), attempt_->threadIds.end(), self) != attempt_->threadIds.end();
}

void JobExecution::launch() {
  startMillis_ = nowMillis();
  startTime_ = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);  // supervise() starts by taking it: the id is set first
  supervisor_ = std::thread([this] {
    nameThisThread("weir supervisor");
    supervise();
  });
  supervisorId_ = supervisor_.get_id();
}

void JobExecution::supervise() {
  RestartBackoff backoff(plan_->graph.restartStrategy.resolve(plan_->checkpointing));
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    attempt = attempt_;
  }
  JobStatus status = JobStatus::FINISHED;
  while (true) {
    runAttempt(attempt);
    std::unique_lock lock(mutex_);
    if (userCancelled_) {
      status = JobStatus::CANCELED;
      break;
    }
    if (!attempt->failure) {
      status = JobStatus::FINISHED;
      break;
    }
    // Once every input had ended, operators were told the job's output is final (sinks
    // committed it): a restart would replay it, so a failure now ends the job.
    auto delay = attempt->drained.load() ? std::nullopt : backoff.onFailure(nowMillis());
    if (!delay) {
      failure_ = attempt->failure;
      failureMessage_ = describeError(failure_, &failureCode_);
      status = JobStatus::FAILED;
      break;
    }
    restarting_ = true;
    ++restarts_;
    cv_.wait_for(lock, *delay, [&] { return userCancelled_; });
    if (userCancelled_) {
      status = JobStatus::CANCELED;
      break;
    }
    lock.unlock();
    // From the newest completed checkpoint, else from where the job started.
    std::string from = coordinator_ ? coordinator_->latestCompleted() : std::string();
    if (from.empty()) from = plan_->restorePath;
    std::shared_ptr<Attempt> next;
    std::exception_ptr error;
    try {
      next = buildAttempt(from);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    restarting_ = false;
    if (error) {
      failure_ = error;
      failureMessage_ = describeError(error, &failureCode_);
      status = JobStatus::FAILED;
      break;
    }
    attempt_ = next;
    attempt = next;
    if (userCancelled_) {
      status = JobStatus::CANCELED;
      break;
    }
  }
  if (coordinator_) {
    bool discard = status == JobStatus::FINISHED ||
                   (status == JobStatus::CANCELED &&
                    plan_->graph.checkpointConfig.getExternalizedCheckpointCleanup() ==
                        ExternalizedCheckpointCleanup::DELETE_ON_CANCELLATION);
    coordinator_->shutdown(discard);
  }
  std::lock_guard lock(mutex_);
  runtime_ = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - startTime_);
  finalStatus_ = status;
  endMillis_ = nowMillis();
  ended_ = true;
}

void JobExecution::runAttempt(const std::shared_ptr<Attempt>& attempt) {
  attempt->running.store(static_cast<int>(attempt->subtasks.size()));
  {
    std::lock_guard lock(mutex_);
    for (auto& task : attempt->subtasks) {
      Subtask* t = task.get();
      t->thread = std::thread([this, a = attempt.get(), t] { run(*a, *t); });
      attempt->threadIds.push_back(t->thread.get_id());
    }
  }
  if (coordinator_) {
    CheckpointCoordinator::Hooks hooks;
    hooks.triggerSources = [this, attempt](int64_t id, int64_t timestamp) {
      // Sources, and subtasks past their input (no barrier reaches them any more).
      for (auto& t : attempt->subtasks) {
        if (!t->source && !t->inputEnded.load()) continue;
        Subtask* task = t.get();
        task->mailbox.put([this, task, id, timestamp] { performCheckpoint(*task, id, timestamp, 0); });
      }
    };
    hooks.notifySubtasks = [attempt](int64_t id, bool completed) {
      for (auto& t : attempt->subtasks) {
        Subtask* task = t.get();
        task->mailbox.put([task, id, completed] {
          for (auto& op : task->operators) {
            if (completed) op->notifyCheckpointComplete(id);
            else op->notifyCheckpointAborted(id);
          }
        });
      }
    };
    hooks.failJob = [this, attempt](const std::string& reason) {
      // Once drained, nothing is left that a checkpoint could cover: fail() ignores it.
      fail(*attempt, std::make_exception_ptr(Error(ErrorCode::kCheckpoint, reason)), /*unlessDrained=*/true);
    };
    coordinator_->startAttempt(static_cast<int>(attempt->subtasks.size()), std::move(hooks));
  }
  auto far = std::chrono::steady_clock::now() + std::chrono::hours(24);
  while (attempt->running.load() > 0) {
    auto next = far;
    if (coordinator_) {
      bool canTrigger = !attempt->drained.load();
      next = coordinator_->tick(canTrigger);
    }
    std::unique_lock lock(mutex_);
    cv_.wait_until(lock, next, [&] { return attempt->running.load() == 0; });
  }
  for (auto& t : attempt->subtasks)
    if (t->thread.joinable()) t->thread.join();
  if (coordinator_) coordinator_->endAttempt();
}

void JobExecution::run(Attempt& attempt, Subtask& task) {
  const RuntimeContext& context = *task.contexts.front();
  nameThisThread(context.getTaskName(), " " + std::to_string(task.index + 1) + "/" +
                                            std::to_string(context.getNumberOfParallelSubtasks()));
  // Operators whose open() was called and whose close() was not, in chain order.
  std::vector<bool> needsClose(task.operators.size(), false);
  try {
    // Tail first, so every operator's downstream is ready before it emits.
    for (size_t i = task.operators.size(); i-- > 0;) {
      needsClose[i] = true;
      task.operators[i]->open();
    }
    if (attempt.opened.fetch_add(1) + 1 == static_cast<int>(attempt.subtasks.size())) {
      std::lock_guard lock(mutex_);
      if (restarts_ > 0)
        lastRecoveryMillis_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - lastFailure_).count();
    }
    if (task.source) runSource(task);
    else runInputs(task);
    if (coordinator_) awaitDrained(attempt, task);
    awaitUploads(task);
    for (size_t i = 0; i < task.operators.size(); ++i) {
      needsClose[i] = false;
      task.operators[i]->close();
    }
  } catch (const TaskCancelled&) {
  } catch (...) {
    fail(attempt, std::current_exception());
  }
  // After a failure or cancellation, close what is still open; the first error stands.
  awaitUploads(task);
  for (size_t i = 0; i < task.operators.size(); ++i) {
    if (!needsClose[i]) continue;
    try {
      task.operators[i]->close();
    } catch (...) {
    }
  }
  // Notify under the lock: the supervisor may otherwise miss the wake-up.
  std::lock_guard lock(mutex_);
  attempt.running.fetch_sub(1);
  cv_.notify_all();
}

void JobExecution::awaitUploads(Subtask& task) {
  std::unique_lock lock(task.uploadMutex);
  task.uploadCv.wait(lock, [&] { return task.pendingUploads == 0; });
}

// With checkpointing, a subtask whose input ended waits until every subtask's has: only
// then is nothing left to replay, and operators are told that a final checkpoint
// completed (exactly-once sinks commit the rest). Meanwhile checkpoints go on: it takes
// them when the coordinator asks (its state is final), and at once for those in progress
// whose barriers cannot reach it any more — every input ended before delivering it, so
// every upstream subtask took that checkpoint after its own end as well.
void JobExecution::awaitDrained(Attempt& attempt, Subtask& task) {
  task.inputEnded.store(true);
  for (int64_t pending : coordinator_->pendingIds())
    if (pending > task.lastSnapshotId.load()) performCheckpoint(task, pending, nowMillis(), 0);
  bool last = attempt.inputsEnded.fetch_add(1) + 1 == static_cast<int>(attempt.subtasks.size());
  if (last) {
    // Decided under the lock fail() takes: an attempt that already failed is never
    // drained (its output is not final, the restart replays it), and one that is drained
    // is never stopped by a later failure.
    std::lock_guard lock(mutex_);
    last = !attempt.failure && !userCancelled_;
    if (last) attempt.drained.store(true);
  }
  if (last) {
    int64_t finalId = coordinator_->lastTriggeredId() + 1;
    for (auto& t : attempt.subtasks) {
      Subtask* other = t.get();
      other->mailbox.put([other, finalId] {
        other->drained = true;
        for (auto& op : other->operators) op->notifyCheckpointComplete(finalId);
      });
    }
  }
  while (true) {
    task.mailbox.runPending();
    if (task.drained) return;
    task.metrics.idle([&] { task.signal.wait(); });
  }
}

void JobExecution::runSource(Subtask& task) {
  while (true) {
    task.mailbox.runPending();
    if (task.stopRequested) break;
    if (!task.outputAvailable()) {  // checkpoint triggers and mail go on meanwhile
      task.flushOutputs();
      task.metrics.backPressured([&] { task.signal.wait(); });
      continue;
    }
    InputStatus status = task.source->emitNext();
    const auto now = std::chrono::steady_clock::now();
    auto nextWatermark = task.source->onTime(now);
    if (status == InputStatus::END_OF_INPUT) break;
    if (status == InputStatus::NOTHING_AVAILABLE) {
      task.flushOutputs();
      auto wake = std::min(task.source->nextPollTime(), nextWatermark);
      task.metrics.idle([&] { task.signal.waitUntil(wake); });
    } else {
      task.flushIfDue(now);
    }
  }
  task.source->endInput();
}

// Reads the inputs in turn; the barrier handler decides when the subtask takes each
// checkpoint and which inputs wait meanwhile. Records in flight of a restored unaligned
// checkpoint are processed first.
void JobExecution::runInputs(Subtask& task) {
  const size_t n = task.inputs.size();
  replayChannelState(task);
  std::vector<ChannelInputBase*> inputs;
  std::vector<bool> overtakes;  // forward and broadcast edges stay aligned, as in Flink
  for (size_t i = 0; i < n; ++i) {
    inputs.push_back(task.inputs[i].get());
    overtakes.push_back(sharedOutOnRescale(task.inputOrigins[i].partitioner));
  }
  BarrierHandler::Hooks hooks;
  hooks.snapshot = [&](int64_t id) { return takeSnapshot(task, id, nowMillis()); };
  hooks.acknowledge = [&](std::shared_ptr<TakenSnapshot> snapshot, int64_t alignmentNanos, bool unaligned,
                          std::vector<std::string> channelState) {
    acknowledgeSnapshot(task, std::move(snapshot), alignmentNanos, unaligned, std::move(channelState));
  };
  hooks.triggeredAt = [&](int64_t id) { return coordinator_->triggeredAt(id); };
  hooks.lastTaken = [&] { return task.lastSnapshotId.load(); };
  BarrierHandler barriers(std::move(inputs), std::move(overtakes), plan_->graph.checkpointConfig, std::move(hooks));
  ProcessingTimeService& timers = task.processingTime;
  const Clock& clock = *task.contexts.front()->clock();
  while (!barriers.allEnded()) {
    task.mailbox.runPending();
    if (!timers.empty()) timers.fireDue(clock.currentTimeMillis());
    barriers.poll();
    bool progress = false;
    const bool writable = task.outputAvailable();
    for (size_t i = 0; writable && i < n; ++i) {
      if (barriers.ended(i) || barriers.blocked(i)) continue;
      switch (task.inputs[i]->pollOnce()) {
        case ChannelInputBase::Poll::kEmpty:
          break;
        case ChannelInputBase::Poll::kProcessed:
          progress = true;
          break;
        case ChannelInputBase::Poll::kEnded:
          progress = true;
          barriers.onEnded(i);
          break;
        case ChannelInputBase::Poll::kBarrier:
          progress = true;
          barriers.onBarrier(i, task.inputs[i]->barrierId());
          break;
      }
    }
    if (progress) {
      task.flushIfDue();
    } else {
      task.flushOutputs();
      auto wake = barriers.deadline();
      if (!timers.empty()) {
        auto due = std::chrono::steady_clock::now() + clock.sleepUntil(timers.nextDue());
        wake = wake ? std::min(*wake, due) : due;
      }
      auto wait = [&] {
        if (wake) task.signal.waitUntil(*wake);
        else task.signal.wait();
      };
      if (writable) task.metrics.idle(wait);
      else task.metrics.backPressured(wait);
    }
  }
  timers.quiesce();  // timers still pending do not fire after the end of input
  task.headInput->endInput();
}


// The records in flight of a restored unaligned checkpoint, before anything new, each
// through an input of the edge it came by (checked when the attempt was built). At
// another parallelism the subtask takes its share of every old subtask's: on a keyBy
// edge the records of the key groups it now owns, on rebalance and shuffle edges (any
// subtask may take them) those of old subtask i when i % parallelism is its index.
void JobExecution::replayChannelState(Subtask& task) {
  const int parallelism = task.contexts.front()->getNumberOfParallelSubtasks();
  const int maxParallelism = plan_->graph.maxParallelism;
  const KeyGroupRange owned = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, task.index);
  for (const auto& [oldSubtask, element] : task.restoredChannelState) {
    InFlight f = parseInFlight(task, element, task.channelStateRescaled);
    auto& input = *task.inputs[f.input];
    if (!task.channelStateRescaled) {
      input.replay(f.records, {});
    } else if (f.sentBy == PartitionerKind::kKeyGroup) {
      const auto& keyGroupOf = task.inputOrigins[f.input].keyGroupOf;
      input.replay(f.records, [&](const void* r) { return owned.contains(keyGroupOf(r, maxParallelism)); });
    } else if (oldSubtask % parallelism == task.index) {
      input.replay(f.records, {});
    }
  }
  task.restoredChannelState.clear();
}

void JobExecution::performCheckpoint(Subtask& task, int64_t id, int64_t timestamp, int64_t alignmentNanos) {
  if (auto snapshot = takeSnapshot(task, id, timestamp))
    acknowledgeSnapshot(task, std::move(snapshot), alignmentNanos, false, {});
}

// The synchronous part of a checkpoint on the task thread: every operator's state as it
// is now, then the barrier goes on downstream. Null when the subtask took this
// checkpoint already, or declined it.
std::shared_ptr<TakenSnapshot> JobExecution::takeSnapshot(Subtask& task, int64_t id, int64_t timestamp) {
  if (id <= task.lastSnapshotId.load()) return nullptr;  // asked twice (mail and end of input)
  auto syncStart = std::chrono::steady_clock::now();
  auto taken = std::make_shared<TakenSnapshot>();
  taken->id = id;
  taken->operators = std::make_shared<std::vector<OperatorSnapshot>>(task.operators.size());
  std::string error;
  try {
    for (size_t i = 0; i < task.operators.size(); ++i)
      task.operators[i]->snapshotState(id, timestamp, (*taken->operators)[i]);
  } catch (const TaskCancelled&) {
    throw;
  } catch (const std::exception& e) {
    error = e.what();
  }
  task.lastSnapshotId.store(id);
  for (auto* writer : task.writers) writer->broadcastBarrier(id);
  taken->syncNanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - syncStart).count();
  if (!error.empty()) {
    coordinator_->decline(id, error);
    return nullptr;
  }
  return taken;
}

// Hands a snapshot (with the records in flight per input channel, when taken unaligned)
// to the coordinator, whose I/O thread writes the files while the task goes on.
void JobExecution::acknowledgeSnapshot(Subtask& task, std::shared_ptr<TakenSnapshot> taken, int64_t alignmentNanos,
                                       bool unaligned, std::vector<std::string> channelState) {
  auto snapshots = taken->operators;
  CheckpointCoordinator::Ack ack{taken->syncNanos, alignmentNanos, unaligned, 0};
  OperatorStateSnapshot inFlight{kChannelState, OperatorStateMode::kSplitDistribute, {}};
  for (size_t i = 0; i < channelState.size(); ++i) {
    if (channelState[i].empty()) continue;
    ack.persistedBytes += static_cast<int64_t>(channelState[i].size());
    DataOutput element;
    element.writeString(task.inputOrigins[i].key);
    element.writeVarint(static_cast<uint64_t>(task.inputOrigins[i].partitioner));
    element.writeRaw(channelState[i].data(), channelState[i].size());
    inFlight.elements.push_back(element.release());
  }
  if (!inFlight.elements.empty()) snapshots->front().operatorState.push_back(std::move(inFlight));
  struct Part {
    std::string operatorId;
    std::string name;
  };
  std::vector<Part> parts;
  for (size_t i = 0; i < task.operators.size(); ++i) parts.push_back({task.operatorIds[i], task.operators[i]->name()});
  const int subtask = task.index;
  const int parallelism = task.contexts.front()->getNumberOfParallelSubtasks();
  const int maxParallelism = plan_->graph.maxParallelism;
  {
    std::lock_guard lock(task.uploadMutex);
    ++task.pendingUploads;
  }
  auto upload = [snapshots, parts, subtask, parallelism, maxParallelism](const CheckpointTarget& target) {
    std::vector<StateFileInfo> files;
    for (size_t i = 0; i < snapshots->size(); ++i) {
      OperatorSnapshot& s = (*snapshots)[i];
      if (s.keyed.empty() && s.operatorState.empty() && !s.rocksdb) continue;
      StateFileInfo info;
      info.operatorId = parts[i].operatorId;
      info.operatorName = parts[i].name;
      info.subtask = subtask;
      info.parallelism = parallelism;
      info.keyGroups = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtask);
      info.file = parts[i].operatorId + "-" + std::to_string(subtask) + "-state";
      writeStateFile(target, s, info);
      files.push_back(std::move(info));
    }
    return files;
  };
  auto done = [snapshots, &task] {
    snapshots->clear();  // state snapshots must be gone before the task closes its state
    std::lock_guard lock(task.uploadMutex);
    --task.pendingUploads;
    task.uploadCv.notify_all();
  };
  coordinator_->acknowledge(taken->id, ack, std::move(upload), std::move(done));
}

void JobExecution::fail(Attempt& attempt, std::exception_ptr error, bool unlessDrained) {
  bool drained = false;
  {
    std::lock_guard lock(mutex_);
    // An attempt's first failure counts; once the user cancelled, failures while
    // stopping do not turn the cancellation into a failure.
    if (attempt.failure || userCancelled_) return;
    drained = attempt.drained.load();
    if (drained && unlessDrained) return;
    attempt.failure = error;
    lastFailure_ = std::chrono::steady_clock::now();
    FailureInfo info;
    info.message = describeError(error, &failureCode_);
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
    failureHistory_.push_front(std::move(info));
    if (failureHistory_.size() > kFailureHistory) failureHistory_.pop_back();
  }
  // Once drained, the other subtasks only wait to be told the output is final and to
  // close: let them, so every sink commits what it has.
  if (!drained) stopAttempt(attempt);
}

void JobExecution::stop() {
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    if (ended_ || !attempt_) return;
    attempt = attempt_;
  }
  for (auto& t : attempt->subtasks) {
    if (!t->source) continue;
    Subtask* task = t.get();
    task->mailbox.put([task] { task->stopRequested = true; });
  }
}

std::vector<std::vector<SubtaskSample>> JobExecution::sample() const {
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    attempt = attempt_;
  }
  std::vector<std::vector<SubtaskSample>> out(plan_->vertices.size());
  if (!attempt) return out;
  for (const auto& t : attempt->subtasks) {
    SubtaskSample s;
    s.numRecordsIn = t->metrics.numRecordsIn.load(std::memory_order_acquire);
    s.numRecordsOut = t->metrics.numRecordsOut.load(std::memory_order_relaxed);
    s.numSourceRecords = t->metrics.numSourceRecords.load(std::memory_order_relaxed);
    s.numBytesIn = t->metrics.numBytesIn.load(std::memory_order_relaxed);
    s.numBytesOut = t->metrics.numBytesOut.load(std::memory_order_relaxed);
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
  if (failureHistory_.empty()) return std::nullopt;
  return failureHistory_.front();
}

std::vector<FailureInfo> JobExecution::failures() const {
  std::lock_guard lock(mutex_);
  return {failureHistory_.begin(), failureHistory_.end()};
}

int64_t JobExecution::endTimeMillis() const {
  std::lock_guard lock(mutex_);
  return endMillis_;
}

void JobExecution::cancel() {
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    // Once drained, the job's output is final (sinks were told to commit it): it
    // finishes. Cancelled now, it would keep a checkpoint older than what its sinks
    // committed (a resume would commit that again), or stop a subtask before its commit.
    if (ended_ || userCancelled_ || (attempt_ && attempt_->drained.load())) return;
    userCancelled_ = true;
    attempt = attempt_;
    cv_.notify_all();
  }
  if (attempt) stopAttempt(*attempt);
}

void JobExecution::stopAttempt(Attempt& attempt) {
  if (attempt.cancelled.exchange(true)) return;
  for (auto& c : attempt.channels) c->cancel();
  for (auto& t : attempt.subtasks) t->mailbox.put([] { throw TaskCancelled{}; });
}

JobStatus JobExecution::status() const {
  std::lock_guard lock(mutex_);
  if (ended_) return finalStatus_;
  if (userCancelled_) return JobStatus::CANCELLING;
  if (restarting_) return JobStatus::RESTARTING;
  if (attempt_ && attempt_->failure) return JobStatus::FAILING;
  return JobStatus::RUNNING;
}

JobExecutionResult JobExecution::wait() {
  {
    std::lock_guard join(joinMutex_);
    if (onJobThread())
      throw Error(ErrorCode::kInvalidJob, "JobClient::wait() called from a subtask of the job it waits for");
    if (supervisor_.joinable()) supervisor_.join();
  }
  std::lock_guard lock(mutex_);
  if (failure_) throw JobExecutionError(failureCode_, "job '" + jobName_ + "' failed: " + failureMessage_);
  JobExecutionResult result;
  result.jobName = jobName_;
  result.status = finalStatus_;
  result.netRuntime = runtime_;
  return result;
}

std::optional<CheckpointCoordinator::Stats> JobExecution::checkpointStats() const {
  if (!coordinator_) return std::nullopt;
  return coordinator_->stats();
}

const CheckpointConfig* JobExecution::checkpointConfig() const {
  return coordinator_ ? &coordinator_->config() : nullptr;
}

JobMetrics JobExecution::metrics() const {
  JobMetrics m;
  m.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - startTime_);
  for (const auto& v : plan_->vertices) {
    JobMetrics::Vertex out;
    out.name = v.name;
    out.parallelism = v.parallelism;
    out.isSource = v.isSource;
    out.isSink = v.isSink;
    m.vertices.push_back(out);
  }
  std::shared_ptr<Attempt> attempt;
  {
    std::lock_guard lock(mutex_);
    attempt = attempt_;
    m.numRestarts = restarts_;
    m.lastRecoveryDuration = lastRecoveryMillis_;
  }
  if (attempt) {
    for (const auto& t : attempt->subtasks) {
      auto& out = m.vertices[static_cast<size_t>(t->vertex)];
      out.numRecordsIn += t->metrics.numRecordsIn.load(std::memory_order_acquire);
      out.numRecordsOut += t->metrics.numRecordsOut.load(std::memory_order_relaxed);
      out.numSourceRecords += t->metrics.numSourceRecords.load(std::memory_order_relaxed);
      out.numBytesIn += t->metrics.numBytesIn.load(std::memory_order_relaxed);
      out.numBytesOut += t->metrics.numBytesOut.load(std::memory_order_relaxed);
      out.numLateRecordsDropped += t->metrics.numLateRecordsDropped.load(std::memory_order_relaxed);
      out.idleTimeNanos += t->metrics.idleTimeNow();
      out.backPressuredTimeNanos += t->metrics.backPressuredTimeNow();
      for (auto* c : t->inputChannels) {
        out.inputCreditsPerChannel = c->credits();
        out.maxBuffersInFlight = std::max(out.maxBuffersInFlight, c->maxBuffersInFlight());
      }
    }
  }
  if (coordinator_) {
    auto stats = coordinator_->stats();
    m.numberOfCompletedCheckpoints = stats.completed;
    m.numberOfFailedCheckpoints = stats.failed;
    m.numberOfInProgressCheckpoints = stats.inProgress;
    m.lastCheckpointDuration = stats.lastDurationMillis;
    m.lastCheckpointSize = stats.lastSizeBytes;
    m.lastCheckpointFullSize = stats.lastFullSizeBytes;
    m.lastCheckpointSyncDuration = stats.lastSyncMillis;
    m.lastCheckpointAsyncDuration = stats.lastAsyncMillis;
    m.lastCheckpointAlignmentTime = stats.lastAlignmentMillis;
    m.lastCheckpointPersistedData = stats.lastPersistedDataBytes;
    m.totalCheckpointPersistedData = stats.totalPersistedDataBytes;
    m.latestCompletedCheckpointId = stats.latestId;
    m.latestCompletedCheckpointPath = stats.latestPath;
  }
  return m;
}

}  // namespace weir::detail
