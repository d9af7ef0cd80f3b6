#include "cli/history_command.h"

#include <cstdio>
#include <thread>

#include "cli/interrupt.h"
#include "rest/rest_server.h"
#include "weir/error.h"
#include "weir/rest_options.h"

namespace weir::cli {

int serveHistory(const std::string& folder, const std::string& address, int port, std::chrono::milliseconds refresh) {
  RestOptions options;
  options.enabled = true;
  options.address = address;
  options.port = port;
  // It serves archives only: no route of it changes a job, so no address needs a token.
  options.insecure = true;
  setInterruptAction("stopping the history server");
  try {
    auto& server = rest::RestServer::forOptions(options);
    server.serveArchives(folder, refresh);
    std::fprintf(stderr, "weir: %zu job archive(s) from %s, REST API and Web UI at %s (Ctrl-C stops)\n",
                 server.archivedJobs(), folder.c_str(), server.url().c_str());
    std::fflush(stderr);
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return 2;
  }
  while (!interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 0;
}

}  // namespace weir::cli
