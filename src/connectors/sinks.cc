#include <cstdio>
#include <mutex>

#include "weir/error.h"
#include "weir/print_sink.h"

namespace weir::detail {

std::mutex& linesMutex() {
  static std::mutex& mutex = *new std::mutex;  // never destroyed: jobs may print at exit
  return mutex;
}

void flushLines(bool toStderr) {
  std::lock_guard lock(linesMutex());
  std::fflush(toStderr ? stderr : stdout);
}

void writeLines(const std::string& lines, bool toStderr) {
  std::lock_guard lock(linesMutex());
  std::FILE* out = toStderr ? stderr : stdout;
  std::fwrite(lines.data(), 1, lines.size(), out);
}

}  // namespace weir::detail
