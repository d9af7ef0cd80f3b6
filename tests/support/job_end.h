// Waiting for a job that a test cancels or crashes on purpose.
#pragma once

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

}  // namespace weir::test
