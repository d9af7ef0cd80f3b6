// `weir history --archive-dir DIR`: serves the archives of ended jobs with the same REST
// API and Web UI as a running job (Flink's HistoryServer).
#pragma once

#include <chrono>
#include <string>

namespace weir::cli {

// Serves until Ctrl-C or SIGTERM. A folder that does not exist or a port that cannot be
// listened on is one line on stderr and exit code 2; an archive that cannot be read is
// named on stderr and the others are served.
int serveHistory(const std::string& folder, const std::string& address, int port, std::chrono::milliseconds refresh);

}  // namespace weir::cli
