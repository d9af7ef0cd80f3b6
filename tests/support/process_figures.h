// What this process's kernel counters say: resident memory and bytes written. Tests of
// memory budgets and spilling read them (skip the memory ones under sanitizers).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "weir/stream_execution_environment.h"

namespace weir::test {

// This process's resident memory now ("VmRSS:"), or its peak since the last reset
// ("VmHWM:"), in bytes; -1 when /proc does not say.
inline int64_t residentBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field))) * 1024;
  return -1;
}

// How far the peak resident memory rises above what it is now while `env` runs its job.
inline int64_t peakRssAddedBy(StreamExecutionEnvironment& env) {
  const int64_t before = residentBytes("VmRSS:");
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM starts again from VmRSS
  env.execute();
  return residentBytes("VmHWM:") - before;
}

// Bytes this process has written (write calls of any kind), from /proc/self/io.
inline int64_t bytesWritten() {
  std::ifstream io("/proc/self/io");
  std::string name;
  int64_t value = 0;
  while (io >> name >> value)
    if (name == "wchar:") return value;
  return -1;
}

}  // namespace weir::test
