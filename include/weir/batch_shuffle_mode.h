// How a batch job's operators exchange records across a keyBy, rebalance or other
// redistribution (Flink's execution.batch-shuffle-mode). docs/batch.md, "Stages".
#pragma once

namespace weir {

enum class BatchShuffleMode {
  // The default: every such exchange is blocking. The job runs in stages, one after
  // another; a stage writes its output whole (in memory up to the shuffle memory, the
  // rest to io.tmp.dirs) before the next reads it, and a failure re-runs only the failed
  // stage, from its input.
  ALL_EXCHANGES_BLOCKING,
  // Every exchange is pipelined, as in STREAMING: all operators run at once, with
  // back-pressure, and a failure restarts the whole job.
  ALL_EXCHANGES_PIPELINED,
};

}  // namespace weir
