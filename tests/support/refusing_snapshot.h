// A map whose snapshot throws for one checkpoint: that checkpoint fails (declined), and
// with tolerable failures the job goes on. Tests of how a failed checkpoint is shown.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "weir/weir.h"

namespace weir::test {

struct RefusesCheckpoint2 : RichMapFunction<int64_t, int64_t>, CheckpointedFunction {
  int64_t map(const int64_t& v) override { return v; }
  void initializeState(FunctionInitializationContext&) override {}
  void snapshotState(const FunctionSnapshotContext& ctx) override {
    if (ctx.getCheckpointId() == 2) throw std::runtime_error("snapshot refused");
  }
};

}  // namespace weir::test
