// The job plan: what the runtime works out once from a StreamGraph and builds every
// attempt from — which operators run, their parallelism, the physical edges between
// them with their partitioners, the chains (vertices) and fused runs, and the ids their
// state has in checkpoints. Flink's JobGraph, with its chaining.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/file_system.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/runtime/stream_graph.h"

namespace weir::runtime {

// A stream between two operators after union, partition and side-output nodes are
// resolved away.
struct PhysicalEdge {
  int producer = 0;
  int consumer = 0;
  int sideOutputTag = -1;  // -1: the main output
  int inputIndex = 0;      // which input of a two-input consumer
  std::shared_ptr<const detail::StreamType> type;
  bool explicitPartitioner = false;
  detail::PartitionerKind partitioner = detail::PartitionerKind::kForward;
  detail::KeyedWriterFactory keyedWriter;
  std::function<int(const void*, int)> keyGroupOf;  // kKeyGroup
  bool chained = false;
  // Crosses from one stage to a later one (a batch job's blocking exchange): written
  // whole to BlockingResultPartitions before its consumer runs, not through channels.
  bool blocking = false;
};

// A vertex as the REST API and the Web UI show it.
struct VertexInfo {
  struct Input {
    int vertex = 0;            // index of the upstream vertex
    std::string shipStrategy;  // FORWARD, REBALANCE, HASH, ...
    // The outputs whose records cross: (upstream node, side-output tag; -1 the main
    // output), one per edge it merges (a stream read twice is there twice).
    std::vector<std::pair<int, int>> outputs;
    bool blocking = false;  // a batch job's exchange between stages
  };
  std::string id;  // 32 hex digits, stable for the same graph
  std::string name;
  std::vector<std::string> uids;  // of the chained operators that have one
  int parallelism = 0;
  int maxParallelism = 0;  // its key groups: the chain head's
  bool isSource = false;
  bool isSink = false;
  int stage = 0;  // JobPlan::stages; every vertex of a STREAMING job is in stage 0
  std::vector<Input> inputs;
};

// The max parallelism of the checkpoint a job restores: the job's, and each operator's.
struct RestoredMaxParallelism {
  int job = 0;                            // 0: it restores none
  std::map<std::string, int> ofOperator;  // by operator id
};

struct JobPlan {
  // An operator chain: the operators one subtask runs, head first.
  struct Vertex {
    std::string name;
    int parallelism = 0;
    int maxParallelism = 0;  // the head's: every member runs with it
    std::vector<int> nodes;  // chain members, in id order; nodes[0] is the head
    bool isSource = false;
    bool isSink = false;
  };

  // Vertices that run together, pipelined (Flink's pipelined region). A batch job's
  // blocking exchanges cut it into stages that run one after another; a STREAMING job
  // is one stage.
  struct Stage {
    std::vector<int> vertices;        // ascending
    std::vector<size_t> inputEdges;   // the blocking edges it reads (indices into edges)
    std::vector<size_t> outputEdges;  // the blocking edges it writes
  };

  using RestoredMaxParallelism = runtime::RestoredMaxParallelism;
  // Plans `graph`. An operator's max parallelism is its own (setMaxParallelism), else the
  // job's if set, else that of its state in the checkpoint it restores, else the job's
  // default (the restored job's, or Flink's for the highest parallelism). Throws
  // weir::Error (kInvalidJob, kInvalidArgument) for a graph that cannot run.
  static JobPlan create(const detail::StreamGraph& graph, const RestoredMaxParallelism& restored = {});
  // What the job's checkpoints go through: the graph's file system, else the POSIX one.
  const std::shared_ptr<core::FileSystem>& fileSystem() const { return fileSystemOf(graph); }
  static const std::shared_ptr<core::FileSystem>& fileSystemOf(const detail::StreamGraph& graph) {
    return graph.fileSystem ? graph.fileSystem : core::FileSystem::local();
  }

  detail::StreamGraph graph;
  std::vector<Vertex> vertices;
  std::vector<VertexInfo> vertexInfo;  // per vertex
  std::vector<PhysicalEdge> edges;
  // Per edge: the most records a buffer of its channels holds, so that the buffers of
  // every channel fit the job's network memory (networkMemoryBytes).
  std::vector<size_t> bufferRecords;
  std::vector<std::vector<size_t>> inEdges, outEdges;  // per node
  std::vector<int> vertexOf;                           // per node; -1 when it does not run
  std::vector<int> parallelism;                        // per node
  std::vector<int> maxParallelism;                     // per node: its vertex's; 0 when it does not run
  std::vector<std::string> operatorIds;                // per node: uid, or derived from the graph
  // Fusion (fused_operator.h): per node, the last node of the fused run it heads, or -1;
  // and whether it is a later member of one (its operator is made but gets no records).
  std::vector<int> fusedTail;
  std::vector<bool> fusedAway;
  bool checkpointing = false;
  bool batch = false;  // RuntimeExecutionMode::BATCH, as set or as AUTOMATIC resolved it
  // In an order where every stage comes after those it reads; and per vertex, its stage.
  std::vector<Stage> stages;
  std::vector<int> stageOf;
};

// 32 hex digits of a 128-bit value (job and vertex ids).
std::string hex128(uint64_t hi, uint64_t lo);

}  // namespace weir::runtime
