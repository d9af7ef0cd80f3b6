// A small benchmark harness: runs a body several times, takes the median, and prints
// one JSON object per figure (CONVENTIONS.md, "Benchmarks").
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

namespace weir::bench {

// Median wall-clock seconds of `runs` calls of `body`.
template <class F>
double medianSeconds(int runs, F&& body) {
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// Runs `body` in a child process and returns {seconds, peak RSS in bytes} of it (the
// child starts with this process's resident pages, so a small parent keeps it honest).
// A child that fails or cannot start ends the benchmark, naming why.
template <class F>
std::pair<double, double> secondsAndPeakRssInChild(F&& body) {
  int pipeFd[2];
  if (::pipe(pipeFd) != 0) throw std::runtime_error("bench: no pipe for a child process");
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("bench: cannot fork a child process");
  if (child == 0) {
    ::close(pipeFd[0]);
    try {
      const auto start = std::chrono::steady_clock::now();
      body();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      [[maybe_unused]] auto n = ::write(pipeFd[1], &seconds, sizeof seconds);
      ::_exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench: the child's job failed: %s\n", e.what());
    }
    ::_exit(1);
  }
  ::close(pipeFd[1]);
  double seconds = 0;
  [[maybe_unused]] auto n = ::read(pipeFd[0], &seconds, sizeof seconds);
  ::close(pipeFd[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(child, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("bench: a child process failed");
  return {seconds, static_cast<double>(usage.ru_maxrss) * 1024.0};
}

// Median seconds of `engine` and of `baseline`, run alternately so that a machine that
// slows down or speeds up during the benchmark affects both alike.
template <class E, class B>
std::pair<double, double> medianSecondsInterleaved(int runs, E&& engine, B&& baseline) {
  std::vector<double> e, b;
  for (int i = 0; i < runs; ++i) {
    e.push_back(medianSeconds(1, engine));
    b.push_back(medianSeconds(1, baseline));
  }
  std::sort(e.begin(), e.end());
  std::sort(b.begin(), b.end());
  return {e[e.size() / 2], b[b.size() / 2]};
}

// The malloc this process runs on, linked in (WEIR_MALLOC) or preloaded: figures of
// jobs that allocate records depend on it. Named after the file whose malloc the
// process calls (a sanitizer's is in the program itself: its file name). Looked up once.
inline const std::string& mallocName() {
  static const std::string name = []() -> std::string {
    Dl_info info{};
    void* symbol = dlsym(RTLD_DEFAULT, "malloc");
    if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return "unknown";
    const std::string file = info.dli_fname;
    for (const char* known : {"mimalloc", "jemalloc", "tcmalloc"})
      if (file.find(known) != std::string::npos) return known;
    if (file.find("libc.so") != std::string::npos) return "glibc";
    return file.substr(file.rfind('/') + 1);
  }();
  return name;
}

// One JSON line: {"bench":name, label: "text", ..., key: number, ..., "malloc": name}.
inline void printFigure(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
                        const std::vector<std::pair<std::string, double>>& fields) {
  std::string line = "{\"bench\":\"" + name + "\"";
  for (auto& [key, text] : labels) line += ",\"" + key + "\":\"" + text + "\"";
  for (auto& [key, value] : fields) {
    char buf[64];
    if (value == static_cast<double>(static_cast<long long>(value))) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value));
    else std::snprintf(buf, sizeof buf, "%.3f", value);
    line += ",\"" + key + "\":" + buf;
  }
  line += ",\"malloc\":\"" + mallocName() + "\"}";
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}
inline void printFigure(const std::string& name, const std::vector<std::pair<std::string, double>>& fields) {
  printFigure(name, {}, fields);
}

// splitmix64's finalizer: spreads sequence numbers into random-looking keys (the order
// in which user ids arrive).
inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Record i of keyed_sum and checkpoint_overhead: (a key of `keys`, a small value).
using KeyedRecord = std::pair<int64_t, int64_t>;
inline KeyedRecord keyedRecord(int64_t i, int64_t keys) {
  return {static_cast<int64_t>(mix(static_cast<uint64_t>(i)) % static_cast<uint64_t>(keys)), i & 7};
}

// Keeps a value alive so the optimizer cannot drop the loop that computed it.
template <class T>
void doNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

}  // namespace weir::bench
