// weir_nexmark: runs Nexmark queries on the embedded runtime and prints their throughput
// (JSON lines on stdout, a table on stderr).
//   weir_nexmark --queries q0,q5 --events 10000000 --parallelism 1,2 --state-backend heap
//                --checkpoint-interval 10000
// Bad options are one line on stderr and exit code 2; a query that fails, exit code 1.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "nexmark/driver.h"

int main(int argc, char** argv) {
  weir::nexmark::DriverOptions options;
  CLI::App app("weir_nexmark: the Nexmark benchmark queries on weir", "weir_nexmark");
  app.add_option("--queries", options.queries, "queries to run, comma-separated")->delimiter(',');
  app.add_option("--events", options.events, "events per run (> 0)");
  app.add_option("--parallelism", options.parallelisms, "parallelisms to run at, comma-separated (1 to 128)")
      ->delimiter(',');
  app.add_option("--state-backend", options.backends, "heap, rocksdb, rocksdb_incremental (RocksDB with incremental checkpoints), comma-separated")->delimiter(',');
  app.add_option("--checkpoint-interval", options.checkpointIntervalMs, "ms between checkpoints; 0 for none");
  app.add_option("--execution-mode", options.modes, "streaming, batch (no checkpoints), comma-separated")->delimiter(',');
  app.add_option("--buffer-timeout", options.bufferTimeoutMs,
                 "ms a busy subtask may hold a partly filled channel buffer (default 100; 0: send after every "
                 "batch; -1: no timeout)");
  app.add_option("--runs", options.runs, "runs per figure (the median is reported)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "weir_nexmark: %s\n", e.what());
    return 2;
  }
  if (std::string error = weir::nexmark::validate(options); !error.empty()) {
    std::fprintf(stderr, "weir_nexmark: %s\n", error.c_str());
    return 2;
  }
  return weir::nexmark::runNexmark(options) ? 0 : 1;
}
