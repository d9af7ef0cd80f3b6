#include "rest/process_figures.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace weir::rest {

namespace {

// The system's boot time (seconds since the epoch), from /proc/stat's btime line: read
// once, since it does not change and the file is long on a machine with many cores.
std::optional<double> bootTime() {
  static const std::optional<double> boot = [] () -> std::optional<double> {
    std::ifstream stat("/proc/stat");
    std::string key;
    double value = 0;
    while (stat >> key) {
      if (key == "btime" && stat >> value) return value;
      stat.ignore(1 << 20, '\n');
    }
    return std::nullopt;
  }();
  return boot;
}

}  // namespace

std::optional<ProcessFigures> readProcessFigures() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command (in parentheses, which may hold spaces): state is field 3.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(fields)), std::istream_iterator<std::string>());
  // proc(5) numbers them from 1: utime 14, stime 15, num_threads 20, starttime 22,
  // vsize 23, rss 24; f[0] is field 3.
  if (f.size() < 22) return std::nullopt;
  ProcessFigures out;
  try {
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    out.cpuSeconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    out.threads = std::stod(f[17]);
    if (auto boot = bootTime()) out.startTimeSeconds = *boot + std::stod(f[19]) / ticks;
    out.virtualBytes = std::stod(f[20]);
    out.residentBytes = std::stod(f[21]) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::error_code error;
  double open = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end; it.increment(error))
    ++open;
  if (!error) out.openFds = open;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    out.maxFds = static_cast<double>(limit.rlim_cur);
  return out;
}

}  // namespace weir::rest
