// The REST API and Web UI of the jobs running in this process, with Flink's paths and
// field names (docs/rest.md), and their metrics in Prometheus text format at /metrics.
#pragma once

#include <memory>
#include <string>

#include "runtime/job_execution.h"
#include "weir/rest_options.h"

namespace weir::rest {

class RestServer {
 public:
  // The server for `options` in this process, started on first use: one per address and
  // port, a new one for every request of port 0 (a free port). Throws weir::Error (kIo)
  // naming the address when it cannot listen.
  static RestServer& forOptions(const RestOptions& options);

  // Serves `job` (running or ended) until the process exits.
  void addJob(std::shared_ptr<detail::JobExecution> job);
  // http://address:port
  std::string url() const;
  int port() const;

  ~RestServer();
  class Impl;

 private:
  explicit RestServer(const RestOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::rest
