// How the answer to one async request travels from whatever thread gives it back to the
// subtask that asked: a slot per attempt, which the ResultFuture fills once, and the
// operator's inbox, where filled slots wait until a mail hands them to the subtask.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "weir/detail/core/mailbox_executor.h"

namespace weir::detail {

template <class OUT>
class AsyncInbox;

// One attempt of one request: the first completion fills it, later ones are ignored.
template <class OUT>
struct AsyncResultSlot {
  AsyncResultSlot(std::shared_ptr<AsyncInbox<OUT>> inbox, uint64_t entry) : inbox(std::move(inbox)), entry(entry) {}

  std::shared_ptr<AsyncInbox<OUT>> inbox;
  const uint64_t entry;  // which request of the operator's queue it answers
  std::atomic<bool> completed{false};
  std::vector<OUT> results;  // written before the slot reaches the inbox, read after
  std::exception_ptr error;
};

// Filled slots of one operator instance, taken by the subtask's thread. A mail is sent
// when the first slot arrives after the subtask took the last ones, so a burst of
// answers costs one wake-up. Once closed (the operator closed), answers are dropped.
template <class OUT>
class AsyncInbox : public std::enable_shared_from_this<AsyncInbox<OUT>> {
 public:
  AsyncInbox(MailboxExecutor* mailbox, std::function<void()> onArrival)
      : mailbox_(mailbox), onArrival_(std::move(onArrival)) {}

  // Any thread.
  void deliver(std::shared_ptr<AsyncResultSlot<OUT>> slot) {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    arrived_.push_back(std::move(slot));
    if (arrived_.size() == 1) {
      mailbox_->execute([inbox = this->shared_from_this()] { inbox->arrive(); });
    }
  }
  // Subtask thread.
  std::vector<std::shared_ptr<AsyncResultSlot<OUT>>> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(arrived_, {});
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    arrived_.clear();
  }

 private:
  void arrive() {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
    }
    onArrival_();
  }

  MailboxExecutor* mailbox_;
  std::function<void()> onArrival_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<AsyncResultSlot<OUT>>> arrived_;  // guarded by mutex_
  bool closed_ = false;                                         // guarded by mutex_
};

}  // namespace weir::detail
