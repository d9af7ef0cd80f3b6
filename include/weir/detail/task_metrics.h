// Counters of one subtask: written by its thread, read by anyone (relaxed atomics).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace weir::detail {

inline int64_t steadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct TaskMetrics {
  std::atomic<uint64_t> numRecordsIn{0};       // received from channels
  std::atomic<uint64_t> numRecordsOut{0};      // sent to channels or written by a sink
  std::atomic<uint64_t> numSourceRecords{0};   // produced by a source reader
  std::atomic<int64_t> idleTimeNanos{0};       // waiting for input
  std::atomic<int64_t> backPressuredTimeNanos{0};  // waiting for output credit, finished waits
  std::atomic<int64_t> backPressuredSinceNanos{0}; // start of the current wait for credit; 0: none

  // Back-pressured time including a wait still in progress.
  // The producer clears `since` before adding the finished wait to the total, so a
  // reader that sees the same `since` before and after reading the total has not
  // counted that wait twice.
  int64_t backPressuredTimeNow() const {
    while (true) {
      int64_t since = backPressuredSinceNanos.load();
      int64_t total = backPressuredTimeNanos.load();
      if (backPressuredSinceNanos.load() != since) continue;
      return since == 0 ? total : total + (steadyNanos() - since);
    }
  }
};

}  // namespace weir::detail
