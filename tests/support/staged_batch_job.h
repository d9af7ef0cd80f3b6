// A batch job of three stages whose second waits at a gate: what the REST and Web UI
// tests look at while it runs (docs/batch.md, "Stages").
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "support/gated_map.h"
#include "weir/weir.h"

namespace weir::testing {

// numbers (10,000 of them, parallelism 1) -> rebalance -> "gated" (parallelism 2, held
// until `gate` opens) -> rebalance -> a discarding sink (parallelism 1), in BATCH: one
// stage each.
inline JobClient startStagedBatchJob(StreamExecutionEnvironment& env, std::shared_ptr<std::atomic<bool>> gate,
                                     const std::string& name = "staged") {
  env.setRuntimeMode(RuntimeExecutionMode::BATCH);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 10000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "numbers")
      .rebalance()
      .map(test::GatedMap<int64_t>(std::move(gate)))
      .name("gated")
      .setParallelism(2)
      .rebalance()
      .sinkTo(DiscardingSink<int64_t>())
      .setParallelism(1);
  return env.executeAsync(name);
}

}  // namespace weir::testing
