// The jobs the weir program runs by name: `weir run <example> [options]`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "weir/job_options.h"

namespace weir::cli {

struct Example {
  std::string name;
  std::string description;
  // Adds the example's own options to `weir run <name>`'s and returns the function that
  // runs it; that function returns the process exit code.
  std::function<std::function<int(const JobOptions&)>(JobOptions&)> setup;
};

Example wordCountExample();
Example clickCountExample();
Example kafkaWordCountExample();
Example kafkaWindowCountExample();
Example redisClickCountExample();
Example redisEnrichExample();

}  // namespace weir::cli
