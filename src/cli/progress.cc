#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace weir::cli {

using namespace std::chrono_literals;

std::string withThousands(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string humanRate(double perSecond) {
  char buf[32];
  if (perSecond >= 1e6) std::snprintf(buf, sizeof buf, "%.1f M", perSecond / 1e6);
  else if (perSecond >= 1e3) std::snprintf(buf, sizeof buf, "%.1f K", perSecond / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", perSecond);
  return buf;
}

ProgressLine::ProgressLine(JobClient client, std::string what)
    : client_(std::move(client)), what_(std::move(what)), terminal_(::isatty(STDOUT_FILENO) == 1) {
  thread_ = std::thread([this] { run(); });
}

ProgressLine::~ProgressLine() { stop(); }

void ProgressLine::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (terminal_) std::printf("\r\033[K");
  std::fflush(stdout);
}

std::string ProgressLine::line() const {
  auto m = client_.getMetrics();
  uint64_t total = 0;
  for (auto& v : m.vertices) total += v.numSourceRecords;
  double seconds = std::chrono::duration<double>(m.elapsed).count();
  double rate = seconds > 0 ? static_cast<double>(total) / seconds : 0;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %s, %s %s/s, %.1f s elapsed", withThousands(total).c_str(), what_.c_str(),
                humanRate(rate).c_str(), what_.c_str(), seconds);
  if (m.numStages <= 1) return buf;
  return "stage " + std::to_string(m.currentStage) + "/" + std::to_string(m.numStages) + ": " + buf;
}

void ProgressLine::run() {
  const auto period = terminal_ ? 200ms : 2000ms;
  std::unique_lock lock(mutex_);
  while (!cv_.wait_for(lock, period, [&] { return stopped_; })) {
    std::string text = line();
    if (terminal_) std::printf("\r\033[K%s", text.c_str());
    else std::printf("progress: %s\n", text.c_str());
    std::fflush(stdout);
  }
}

}  // namespace weir::cli
