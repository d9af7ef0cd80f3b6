// The REST API and Web UI of the jobs running in this process, with Flink's paths and
// field names (docs/rest.md), and their metrics in Prometheus text format at /metrics.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "runtime/job_execution.h"
#include "weir/rest_options.h"

namespace weir::rest {

class RestServer {
 public:
  // The server for `options` in this process, started on first use: one per address and
  // port (port 0: one on a free port, shared by every later request for port 0). Throws
  // weir::Error (kIo) naming the address when it cannot listen, and (kInvalidArgument)
  // for an address beyond loopback without TLS and a token (unless `insecure`), a
  // certificate or key that cannot be used, or a server already made there with another
  // certificate or token.
  static RestServer& forOptions(const RestOptions& options);

  // Serves `job`; the server does not keep a job alive (dropping its last JobClient
  // still cancels it, and it is served as it is cancelled). When the job ends, what the API answers for it is kept, before
  // its wait() returns, and served once no JobClient holds the job, until the process
  // exits (the newest 100 ended jobs); with `announceEnd` stderr says so. With
  // `archiveFolder` it is also written there (job_archive.h), and stderr says so.
  void addJob(const std::shared_ptr<runtime::JobExecution>& job, const std::string& archiveFolder = {},
              bool announceEnd = false);
  // Also serves the jobs archived in `folder`, read again every `refresh` (Flink's
  // HistoryServer). Throws weir::Error (kIo) when it is not an existing folder.
  void serveArchives(const std::string& folder, std::chrono::milliseconds refresh);
  size_t archivedJobs() const;
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
