// What an operator that waits on other threads gets from its subtask (Flink's
// MailboxExecutor): a way to run work on the subtask's thread, to wait there, and to stop
// the subtask reading input while it cannot take more (async I/O at its capacity).
#pragma once

#include <chrono>
#include <functional>

namespace weir::detail {

class MailboxExecutor {
 public:
  virtual ~MailboxExecutor() = default;
  // Any thread: runs `action` on the subtask's thread, between batches. Whatever it
  // throws fails the subtask, as if a record had.
  virtual void execute(std::function<void()> action) = 0;
  // Subtask thread: runs the mail that is there, or waits for mail until `deadline`
  // (steady clock). Cancellation arrives as mail, so a loop around it ends when the job
  // is cancelled.
  virtual void yieldUntil(std::chrono::steady_clock::time_point deadline) = 0;
  // Subtask thread: while held (by any operator of the chain), the subtask reads no
  // input; mail, timers and checkpoints go on.
  virtual void holdInput(bool hold) = 0;
};

}  // namespace weir::detail
