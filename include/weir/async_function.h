// Async I/O (Flink's AsyncFunction): a function that asks an outside system about each
// record without waiting for the answer, so that many requests are in flight at once.
// AsyncDataStream (async_data_stream.h) puts one in a job.
//
//   class Enrich : public weir::AsyncFunction<Click, EnrichedClick> {
//    public:
//     void asyncInvoke(const Click& c, weir::ResultFuture<EnrichedClick> result) override {
//       pool_->get(c.user, [c, result](std::optional<std::string> name) {   // another thread
//         result.complete({EnrichedClick{c, name.value_or("?")}});
//       });
//     }
//   };
#pragma once

#include <concepts>
#include <exception>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/detail/operators/async_result.h"
#include "weir/functions.h"

namespace weir {

// What the default AsyncFunction::timeout() fails a request with (Flink's
// java.util.concurrent.TimeoutException).
class TimeoutException : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The answer to one request (Flink's ResultFuture). Copies refer to the same request;
// any thread may complete it, and only the first completion counts.
template <class OUT>
class ResultFuture {
 public:
  explicit ResultFuture(std::shared_ptr<detail::AsyncResultSlot<OUT>> slot) : slot_(std::move(slot)) {}

  // The request's results: none, one or several records, each stamped with the timestamp
  // of the record that asked.
  void complete(std::vector<OUT> results) const {
    if (slot_->completed.exchange(true)) return;
    slot_->results = std::move(results);
    slot_->inbox->deliver(slot_);
  }
  // The request failed: it is retried if the retry strategy says so; otherwise the job
  // fails with this error, naming the operator.
  void completeExceptionally(std::exception_ptr error) const {
    if (slot_->completed.exchange(true)) return;
    slot_->error = error ? std::move(error) : std::make_exception_ptr(std::runtime_error("unknown error"));
    slot_->inbox->deliver(slot_);
  }
  template <class E>
    requires std::derived_from<std::decay_t<E>, std::exception>
  void completeExceptionally(E&& error) const {
    completeExceptionally(std::make_exception_ptr(std::forward<E>(error)));
  }

 private:
  std::shared_ptr<detail::AsyncResultSlot<OUT>> slot_;
};

// Flink's AsyncFunction and RichAsyncFunction in one: open() and close() as any rich
// function. asyncInvoke() runs on the subtask's thread and must not block: it starts the
// request and returns; the answer completes `resultFuture` later, from any thread.
// close() runs when the subtask ends or fails: it must stop the requests still running
// (their answers are dropped by then) before it releases what they use.
// What a request that timed out gets when the function says nothing else: a
// TimeoutException, which fails the job.
template <class OUT>
void completeWithTimeout(const ResultFuture<OUT>& resultFuture) {
  resultFuture.completeExceptionally(TimeoutException("Async function call has timed out."));
}

template <class IN, class OUT>
class AsyncFunction : public RichFunction {
 public:
  using InputType = IN;
  using OutputType = OUT;

  virtual void asyncInvoke(const IN& input, ResultFuture<OUT> resultFuture) = 0;
  // The request for `input` took longer than the operator's timeout (across all its
  // attempts). The default fails the job with a TimeoutException; override it to complete
  // with a fallback, or with no result to drop the record.
  virtual void timeout(const IN& input, ResultFuture<OUT> resultFuture) {
    (void)input;
    completeWithTimeout(resultFuture);
  }
};

template <class IN, class OUT>
using RichAsyncFunction = AsyncFunction<IN, OUT>;

}  // namespace weir
