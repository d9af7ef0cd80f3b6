// `weir list | status | cancel | stop | savepoint`: control running jobs through their
// REST API.
#pragma once

#include <string>

namespace weir::cli {

// Where a job's REST API is, and how to talk to it.
struct RestEndpoint {
  std::string address;  // host:port, http://host:port or https://host:port
  std::string token;    // sent as Authorization: Bearer; empty: none
  std::string caFile;   // PEM certificates to trust for https (default: the system's)
};

// Each prints what it found on stdout and returns the exit code; errors are one line on
// stderr (1: the server is unreachable or refused, e.g. an unknown job id).
// Which jobs `weir list` shows (Flink's flink list): by default those not ended yet;
// -r only the running ones; -a all of them.
enum class ListFilter { kNotEnded, kRunning, kAll };
int listJobs(const RestEndpoint& rest, ListFilter filter = ListFilter::kNotEnded);
// The job's state, each operator's throughput, back-pressure and watermark, its
// checkpoints and restarts.
int jobStatus(const RestEndpoint& rest, const std::string& jobId);
int cancelJob(const RestEndpoint& rest, const std::string& jobId);
// `weir stop`: with a savepoint folder (or the job's default one) stop-with-savepoint,
// which waits for the savepoint and prints its path; else a graceful stop that drains.
struct StopOptions {
  std::string savepointPath;  // --savepoint-path
  bool drain = false;         // --drain
  std::string type = "canonical";
};
int stopJob(const RestEndpoint& rest, const std::string& jobId, const StopOptions& stop);
// `weir savepoint <jobid> [dir]`: triggers one, waits for it and prints its path. A
// request the job refuses (one in progress, no folder, the job ended) exits 2.
int triggerSavepoint(const RestEndpoint& rest, const std::string& jobId, const std::string& directory,
                     const std::string& type);

}  // namespace weir::cli
