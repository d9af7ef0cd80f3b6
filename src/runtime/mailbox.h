// A subtask's mailbox: actions other threads want run on the subtask's own thread
// (cancellation, checkpoint triggers, checkpoint completion and abort notices).
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>

#include "weir/detail/runtime/channel.h"

namespace weir::runtime {

class Mailbox {
 public:
  explicit Mailbox(detail::TaskSignal* signal) : signal_(signal) {}

  // Any thread: queues `action` and wakes the subtask.
  void put(std::function<void()> action) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(action));
      hasMail_.store(true);
    }
    signal_->notify();
  }

  bool hasMail() const { return hasMail_.load(); }

  // Subtask thread: runs every queued action in order. Cheap when empty.
  void runPending() {
    if (!hasMail_.load()) return;
    std::deque<std::function<void()>> actions;
    {
      std::lock_guard lock(mutex_);
      actions.swap(queue_);
      hasMail_.store(false);
    }
    for (auto& a : actions) a();
  }

 private:
  detail::TaskSignal* signal_;
  std::mutex mutex_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  std::atomic<bool> hasMail_{false};
};

}  // namespace weir::runtime
