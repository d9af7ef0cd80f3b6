// Where a job serves its REST API and Web UI (Flink's rest.address / rest.port).
#pragma once

#include <chrono>
#include <string>

namespace weir {

struct RestOptions {
  // Serve the REST API and Web UI while the job runs (default: off in the library,
  // on in `weir run`).
  bool enabled = false;
  // Address to listen on (default 127.0.0.1: loopback only).
  std::string address = "127.0.0.1";
  // TCP port (default 8081); 0 picks a free port, see JobClient::getWebInterfaceURL().
  int port = 8081;
  // How often per-second rates (records/s, busy / idle / back-pressured ms per second)
  // are recomputed (default 1 s).
  std::chrono::milliseconds metricsInterval{1000};
  // Folder where what the REST API answers for a job is archived when the job ends
  // (finished, cancelled or failed), for `weir history` (Flink's
  // jobmanager.archive.fs.dir). Empty (default): not archived. Needs `enabled`.
  std::string archiveDir;
};

}  // namespace weir
