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
  // How /metrics names what it exports, after Flink's PrometheusReporter (its scopes and
  // labels): "weir" (default) in Prometheus's conventions (snake_case, counters ending in
  // _total, seconds and bytes), or "flink" for Flink's own names, so that a dashboard
  // made for Flink works unchanged. Jobs that share a server must ask for the same one.
  std::string prometheusPrefix = "weir";

  // TLS (weir.rest.ssl.certificate and .private-key; Flink's security.ssl.rest.* reads
  // Java keystores): serve https only, with this PEM certificate chain and PEM private
  // key. Both empty (default): plain http.
  std::string sslCertificate;
  std::string sslPrivateKey;
  // What every request that changes a job (cancel, stop, savepoints) must carry as
  // `Authorization: Bearer <token>` (weir.rest.authentication.token-file, or
  // $WEIR_REST_TOKEN). Empty (default): none is asked for.
  std::string authenticationToken;
  // Listen on an address other than loopback without TLS and a token, where anyone who
  // reaches it may cancel the jobs. Off (default): such an address is refused.
  bool insecure = false;
};

}  // namespace weir
