// `weir list | status | cancel | stop`: control running jobs through their REST API.
#pragma once

#include <string>

namespace weir::cli {

// Each prints what it found on stdout and returns the exit code; errors are one line on
// stderr (1: the server is unreachable or refused, e.g. an unknown job id).
int listJobs(const std::string& address);
int jobStatus(const std::string& address, const std::string& jobId);
int cancelJob(const std::string& address, const std::string& jobId);
int stopJob(const std::string& address, const std::string& jobId);

}  // namespace weir::cli
