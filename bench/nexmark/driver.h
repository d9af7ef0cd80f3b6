// Runs Nexmark queries and reports their throughput: `weir_nexmark` and the `nexmark`
// entry of weir_bench share this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weir::nexmark {

struct DriverOptions {
  std::vector<std::string> queries{"q0", "q1", "q2",  "q3",  "q4",  "q5",  "q7",  "q8",  "q9",
                                   "q11", "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22"};
  int64_t events = 10'000'000;
  std::vector<int> parallelisms{1, 2};
  std::vector<std::string> backends{"heap"};
  // streaming, batch (RuntimeExecutionMode; batch takes no checkpoints).
  std::vector<std::string> modes{"streaming"};
  int64_t checkpointIntervalMs = 10'000;  // 0: none
  int64_t bufferTimeoutMs = 100;          // env.setBufferTimeout
  int runs = 1;                           // median of this many
};

// The queries the driver knows, in order.
const std::vector<std::string>& knownQueries();

// What is wrong with `options` (an unknown query or backend, events ≤ 0, a parallelism
// outside 1..128, a negative interval, runs < 1), or empty.
std::string validate(const DriverOptions& options);

// Runs every (query, backend, parallelism) of `options` in a child process each, prints
// a JSON line per run to stdout and a table to stderr. Returns false (having said why on
// stderr) for invalid options or a run that failed.
bool runNexmark(const DriverOptions& options);

}  // namespace weir::nexmark
