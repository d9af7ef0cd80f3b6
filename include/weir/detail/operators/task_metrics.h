// Counters of one subtask: written by its thread, read by anyone (relaxed atomics).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>

#include "weir/detail/core/metric_registry.h"

namespace weir::detail {

inline int64_t steadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct TaskMetrics {
  std::atomic<uint64_t> numRecordsIn{0};       // received from channels and processed
  std::atomic<uint64_t> numRecordsOut{0};      // sent to channels or written by a sink
  std::atomic<uint64_t> numSourceRecords{0};   // produced by a source reader
  std::atomic<uint64_t> numBytesIn{0};         // read by a source from outside the job
  std::atomic<uint64_t> numBytesOut{0};        // written by a sink outside the job
  std::atomic<int64_t> idleTimeNanos{0};       // waiting for input, finished waits
  std::atomic<int64_t> idleSinceNanos{0};      // start of the current wait for input; 0: none
  std::atomic<int64_t> backPressuredTimeNanos{0};  // waiting for output credit, finished waits
  std::atomic<int64_t> backPressuredSinceNanos{0}; // start of the current wait for credit; 0: none
  // Event time: the watermark a subtask's head received (combined over its inputs) and
  // the one it emitted; INT64_MIN before the first.
  std::atomic<int64_t> currentInputWatermark{INT64_MIN};
  std::atomic<int64_t> currentOutputWatermark{INT64_MIN};
  std::atomic<uint64_t> numLateRecordsDropped{0};  // behind a window's allowed lateness
  std::atomic<uint64_t> numRecordsInErrors{0};     // a source could not read (bad records)
  MetricRegistry registry;                         // named metrics of the chain's operators
  std::atomic<bool> metricsUpdateWanted{false};    // the sampler asked for fresh gauge, meter, histogram values
  std::atomic<bool> metricsMailQueued{false};      // an update of them waits in the mailbox

  // On the subtask's thread: reads the gauges, meters and histograms if the sampler asked
  // since the last read.
  // From the mailbox, and from a wait for output credit in the middle of a batch.
  void updateMetricsIfWanted() {
    if (metricsUpdateWanted.exchange(false)) registry.update();
  }

  // Back-pressured time including a wait still in progress.
  int64_t backPressuredTimeNow() const { return timeNow(backPressuredTimeNanos, backPressuredSinceNanos); }
  int64_t idleTimeNow() const { return timeNow(idleTimeNanos, idleSinceNanos); }

  // Runs `wait` and counts its time as idle, visibly while it lasts.
  template <class F>
  void idle(F&& wait) {
    timed(idleTimeNanos, idleSinceNanos, std::forward<F>(wait));
  }
  // Runs `wait` and counts its time as back-pressured, visibly while it lasts.
  template <class F>
  void backPressured(F&& wait) {
    timed(backPressuredTimeNanos, backPressuredSinceNanos, std::forward<F>(wait));
  }

 private:
  template <class F>
  static void timed(std::atomic<int64_t>& total, std::atomic<int64_t>& since, F&& wait) {
    int64_t start = steadyNanos();
    since.store(start);
    wait();
    since.store(0);
    total.fetch_add(steadyNanos() - start);
  }

  // The writer clears `since` before adding the finished wait to the total, so a reader
  // that sees the same `since` before and after reading the total has not counted that
  // wait twice.
  static int64_t timeNow(const std::atomic<int64_t>& total, const std::atomic<int64_t>& since) {
    while (true) {
      int64_t s = since.load();
      int64_t t = total.load();
      if (since.load() != s) continue;
      return s == 0 ? t : t + (steadyNanos() - s);
    }
  }
};

}  // namespace weir::detail
