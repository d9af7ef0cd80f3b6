// The jobs the weir program runs by name: `weir run <example> [options]`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weir/checkpoint_config.h"
#include "weir/rest_options.h"
#include "weir/restart_strategy.h"
#include "weir/savepoint_restore_settings.h"
#include "weir/state_backend.h"

namespace weir {
class StreamExecutionEnvironment;
}

namespace weir::cli {

// Options every example takes.
struct JobOptions {
  int parallelism = 0;                 // 0: the example's default
  int maxParallelism = 0;              // 0: not set (Flink's default from the parallelism)
  int64_t networkMemoryMiB = 512;      // --network-memory
  RestOptions rest;                    // served by default: see --rest-port
  std::shared_ptr<StateBackend> stateBackend = std::make_shared<HashMapStateBackend>();
  // Checkpoints: on when checkpoint.getCheckpointInterval() is positive.
  CheckpointConfig checkpoint;
  std::optional<RestartStrategy> restartStrategy;  // unset: Flink's default
  SavepointRestoreSettings restore;                  // a savepoint or checkpoint to start from
};

// Applies the options every example shares to `env`; `parallelism` is the example's
// default when -p is not given.
void configure(StreamExecutionEnvironment& env, const JobOptions& options, int parallelism);

struct Example {
  std::string name;
  std::string description;
  // Adds the example's own options to its subcommand and returns the function that
  // runs it; that function returns the process exit code.
  std::function<std::function<int(const JobOptions&)>(CLI::App&)> setup;
};

// Makes every integer option of `app` and its subcommands refuse what is not a whole
// number in range ("1e20", "12abc", 2^63) with an error naming the option, where the
// command-line parser would round or cap it.
void requireWholeNumbers(CLI::App& app);

Example wordCountExample();
Example clickCountExample();
Example kafkaWordCountExample();
Example kafkaWindowCountExample();
Example redisClickCountExample();

}  // namespace weir::cli
