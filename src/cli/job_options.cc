#include "cli/job_options.h"
#include "weir/stream_execution_environment.h"

namespace weir::cli {

void configure(StreamExecutionEnvironment& env, const JobOptions& options, int parallelism) {
  env.setMaxParallelism(options.maxParallelism);
  env.setParallelism(options.parallelism > 0 ? options.parallelism : parallelism);
  env.setRestOptions(options.rest);
  env.setStateBackend(options.stateBackend);
  if (options.checkpoint.isCheckpointingEnabled()) env.getCheckpointConfig() = options.checkpoint;
  if (options.restartStrategy) env.setRestartStrategy(*options.restartStrategy);
  if (!options.restorePath.empty()) env.setRestorePath(options.restorePath);
}

}  // namespace weir::cli
