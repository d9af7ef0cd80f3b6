// `promtool check metrics` (Prometheus's own linter) over a /metrics page. promtool
// comes with scripts/setup; a missing one is a failed check, not a skipped one.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

namespace weir::test {

// promtool's exit code and what it said.
inline std::pair<int, std::string> promtoolCheck(const std::string& page) {
  const std::string file = "/tmp/weir-promtool-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(file) << page;
  FILE* out = ::popen(("promtool check metrics < " + file + " 2>&1").c_str(), "r");
  std::string said;
  char buffer[4096];
  for (size_t n; out && (n = std::fread(buffer, 1, sizeof buffer, out)) > 0;) said.append(buffer, n);
  const int status = out ? ::pclose(out) : -1;
  std::remove(file.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, said};
}

}  // namespace weir::test
