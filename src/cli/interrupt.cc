#include "cli/interrupt.h"

#include <signal.h>

#include <atomic>
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
      std::fprintf(stderr, "\nweir: %s received, cancelling the job (again to quit at once)\n",
                   sig == SIGINT ? "interrupt" : "termination signal");
      std::lock_guard lock(jobMutex());
      if (currentJob()) currentJob()->cancel();  // else the job is cancelled as it registers
    }
  }).detach();
}

void cancelOnInterrupt(const JobClient& client) {
  std::lock_guard lock(jobMutex());
  currentJob() = client;
  if (gInterrupted) currentJob()->cancel();
}

bool interrupted() { return gInterrupted; }

}  // namespace weir::cli
