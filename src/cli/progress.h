// A live progress line for a running job: records/s, total and elapsed time. On a
// terminal it redraws one line; otherwise it prints a plain line every few seconds.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "weir/job_client.h"

namespace weir::cli {

class ProgressLine {
 public:
  // Starts reporting on `client`; `what` names the records ("events", "lines").
  ProgressLine(JobClient client, std::string what);
  // Stops reporting and clears the line.
  ~ProgressLine();
  void stop();

 private:
  void run();
  std::string line() const;

  JobClient client_;
  std::string what_;
  bool terminal_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mutex_
};

// 12345678 -> "12,345,678".
std::string withThousands(uint64_t n);
// 12345678.9 -> "12.3 M".
std::string humanRate(double perSecond);

}  // namespace weir::cli
