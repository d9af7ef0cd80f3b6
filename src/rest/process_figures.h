// This process's own figures from /proc: what /jobmanager/metrics shows as Flink's
// Status.* metrics and /metrics as Prometheus's process_* ones.
#pragma once

#include <optional>

namespace weir::rest {

struct ProcessFigures {
  double cpuSeconds = 0;        // user and system time
  double residentBytes = 0;     // RSS
  double virtualBytes = 0;
  double threads = 0;
  std::optional<double> startTimeSeconds;  // since the Unix epoch
  std::optional<double> openFds, maxFds;
};

// Empty when /proc/self/stat cannot be read or parsed.
std::optional<ProcessFigures> readProcessFigures();

}  // namespace weir::rest
