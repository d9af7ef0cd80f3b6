// Waiting for a job: until it gets somewhere, or until it ends after a test cancelled or
// crashed it on purpose.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "weir/weir.h"

namespace weir::test {

// Ends when `job` ends (or is cancelled), and says so.
class JobEnd {
 public:
  JobEnd(JobClient& job, std::function<void()> ended)
      : thread_([&job, ended = std::move(ended)] {
          try {
            job.wait();
          } catch (const JobExecutionError&) {
          }
          ended();
        }) {}
  ~JobEnd() { thread_.join(); }

 private:
  std::thread thread_;
};

// Polls the job's metrics until `reached` holds; false when the job stopped first (its
// bounded input can run out before a slow machine, e.g. under TSan, got that far) or
// two minutes passed.
template <class Reached>
bool waitWhileRunning(JobClient& client, Reached reached) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!reached(client.getMetrics())) {
    if (client.getJobStatus() != JobStatus::RUNNING || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace weir::test
