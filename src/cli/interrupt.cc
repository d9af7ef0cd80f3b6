#include "cli/interrupt.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

namespace weir::cli {

namespace {

std::mutex& jobMutex() {
  static std::mutex& m = *new std::mutex;  // never destroyed: the watcher outlives main()
  return m;
}
std::optional<JobClient>& currentJob() {
  static auto& job = *new std::optional<JobClient>;
  return job;
}
std::atomic<bool> gInterrupted{false};
std::atomic<const char*> gAction{"cancelling the job"};
// How long a cancellation may take before the process quits anyway.
constexpr std::chrono::seconds kCancelGrace{5};

}  // namespace

void installInterruptHandler() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (gInterrupted.exchange(true)) {
        // A second signal: the user insists.
        std::_Exit(130);
      }
      std::fprintf(stderr, "\nweir: %s received, %s (again to quit at once)\n",
                   sig == SIGINT ? "interrupt" : "termination signal", gAction.load());
      // Cancelling ends within a bounded time: what still runs after the grace period
      // (a write to a disk that hangs, say) does not keep the process.
      std::thread([] {
        std::this_thread::sleep_for(kCancelGrace);
        std::fprintf(stderr, "weir: the job did not finish cancelling within %lld s; quitting\n",
                     static_cast<long long>(kCancelGrace.count()));
        std::_Exit(130);
      }).detach();
      std::lock_guard lock(jobMutex());
      if (currentJob()) currentJob()->cancel();  // else the job is cancelled as it registers
    }
  }).detach();
}

void setInterruptAction(const char* action) { gAction.store(action); }

void cancelOnInterrupt(const JobClient& client) {
  std::lock_guard lock(jobMutex());
  currentJob() = client;
  if (gInterrupted) currentJob()->cancel();
}

bool interrupted() { return gInterrupted; }

}  // namespace weir::cli
