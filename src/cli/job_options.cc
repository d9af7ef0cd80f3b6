#include "cli/job_options.h"

#include <charconv>
#include <cstdint>

#include "weir/stream_execution_environment.h"

namespace weir::cli {

void configure(StreamExecutionEnvironment& env, const JobOptions& options, int parallelism) {
  if (options.maxParallelism > 0) env.setMaxParallelism(options.maxParallelism);
  env.setParallelism(options.parallelism > 0 ? options.parallelism : parallelism);
  env.setNetworkMemory(options.networkMemoryMiB << 20);
  env.setRestOptions(options.rest);
  env.setStateBackend(options.stateBackend);
  if (options.checkpoint.isCheckpointingEnabled()) env.getCheckpointConfig() = options.checkpoint;
  // Flink's default restart strategy, but a failure that recurs on every attempt ends the
  // job after 5 in a row instead of restarting it forever; --restart-strategy lifts that.
  env.setRestartStrategy(options.restartStrategy ? *options.restartStrategy
                                                 : RestartStrategy::fallback().stopAfterIdenticalFailures(5));
  if (options.restore.restoreSavepoint()) env.setSavepointRestoreSettings(options.restore);
}

void requireWholeNumbers(CLI::App& app) {
  static const CLI::Validator wholeNumber(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' is out of range";
        if (ec != std::errc() || end != text.data() + text.size()) return "'" + text + "' is not a whole number";
        return {};
      },
      "", "whole number");
  for (CLI::Option* option : app.get_options([](const CLI::Option* o) { return o->get_type_name() == "INT"; }))
    option->check(wholeNumber);
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) requireWholeNumbers(*sub);
}

}  // namespace weir::cli
