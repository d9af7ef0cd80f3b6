// How a job runs (Flink's RuntimeExecutionMode): record by record as its input comes
// (STREAMING), or as a batch job over bounded input that gives only final results
// (BATCH). docs/batch.md says what BATCH changes.
#pragma once

namespace weir {

enum class RuntimeExecutionMode {
  STREAMING,  // the default: any sources, checkpoints, results as they change
  BATCH,      // bounded sources only, no checkpoints, final results
  AUTOMATIC,  // BATCH when every source the job reads is bounded, else STREAMING
};

}  // namespace weir
