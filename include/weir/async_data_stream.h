// Puts async I/O in a job (Flink's AsyncDataStream): each record of `in` goes to an
// AsyncFunction<IN, OUT> (or a callable void(const IN&, ResultFuture<OUT>)), and its
// results come out once the outside system answered.
//
//   auto enriched = weir::AsyncDataStream::unorderedWait(clicks, Enrich{}, 1s, 100);
//
// * orderedWait emits the results in the order of the input records; unorderedWait emits
//   them as they come back, but never across a watermark: the results of the records
//   before a watermark go first, then the watermark, then the rest.
// * At most `capacity` records are asked about at once; at capacity the operator takes
//   no more input until answers come back (backpressure upstream).
// * A request that has no answer `timeout` after it was first sent goes to the function's
//   timeout() (by default the job fails with a TimeoutException). Flink lets a timeout of
//   0 mean none; weir needs one, so that a lost answer cannot stall the job for ever.
// * The ...WithRetry forms send a request again when the AsyncRetryStrategy says so
//   (async_retry_strategy.h); the timeout covers all the attempts.
// * Records still waiting for answers are part of every checkpoint and are asked about
//   again after a restore, at any parallelism.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

#include "weir/async_function.h"
#include "weir/async_retry_strategy.h"
#include "weir/data_stream.h"
#include "weir/detail/operators/async_wait_operator.h"
#include "weir/error.h"

namespace weir {

namespace detail {
template <class T>
struct ResultFutureType {};
template <class OUT>
struct ResultFutureType<ResultFuture<OUT>> {
  using type = OUT;
};
template <class M>
struct SecondArgument {};
template <class C, class R, class A, class B>
struct SecondArgument<R (C::*)(A, B) const> {
  using type = std::decay_t<B>;
};
template <class C, class R, class A, class B>
struct SecondArgument<R (C::*)(A, B)> {
  using type = std::decay_t<B>;
};

// OUT of an async function: an AsyncFunction's OutputType, or what the ResultFuture a
// callable takes carries.
template <class F>
auto asyncOutput() {
  if constexpr (requires { typename F::OutputType; }) {
    return std::type_identity<typename F::OutputType>{};
  } else if constexpr (requires { &F::operator(); }) {
    return std::type_identity<typename ResultFutureType<typename SecondArgument<decltype(&F::operator())>::type>::type>{};
  } else {
    return std::type_identity<InvalidFunction>{};
  }
}
template <class F>
using AsyncOutput = typename decltype(asyncOutput<F>())::type;
}  // namespace detail

class AsyncDataStream {
 public:
  enum class OutputMode { ORDERED, UNORDERED };
  // Flink's default capacity.
  static constexpr int DEFAULT_QUEUE_CAPACITY = 100;

  template <class IN, class F>
  static SingleOutputStreamOperator<detail::AsyncOutput<F>> unorderedWait(const DataStream<IN>& in, F fn,
                                                                          std::chrono::milliseconds timeout,
                                                                          int capacity = DEFAULT_QUEUE_CAPACITY) {
    return add(in, std::move(fn), timeout, capacity, OutputMode::UNORDERED, nullptr);
  }
  template <class IN, class F>
  static SingleOutputStreamOperator<detail::AsyncOutput<F>> orderedWait(const DataStream<IN>& in, F fn,
                                                                        std::chrono::milliseconds timeout,
                                                                        int capacity = DEFAULT_QUEUE_CAPACITY) {
    return add(in, std::move(fn), timeout, capacity, OutputMode::ORDERED, nullptr);
  }
  template <class IN, class F, class S>
  static SingleOutputStreamOperator<detail::AsyncOutput<F>> unorderedWaitWithRetry(const DataStream<IN>& in, F fn,
                                                                                   std::chrono::milliseconds timeout,
                                                                                   int capacity, S retryStrategy) {
    return add(in, std::move(fn), timeout, capacity, OutputMode::UNORDERED, strategy(std::move(retryStrategy)));
  }
  template <class IN, class F, class S>
  static SingleOutputStreamOperator<detail::AsyncOutput<F>> orderedWaitWithRetry(const DataStream<IN>& in, F fn,
                                                                                 std::chrono::milliseconds timeout,
                                                                                 int capacity, S retryStrategy) {
    return add(in, std::move(fn), timeout, capacity, OutputMode::ORDERED, strategy(std::move(retryStrategy)));
  }

 private:
  template <class S>
  static auto strategy(S s) {
    if constexpr (requires { s.get(); }) return std::shared_ptr<const typename S::element_type>(std::move(s));
    else return std::make_shared<const S>(std::move(s));
  }

  // `retry`: nullptr, or a shared_ptr to the retry strategy.
  template <class IN, class F, class Retry>
  static SingleOutputStreamOperator<detail::AsyncOutput<F>> add(const DataStream<IN>& in, F fn,
                                                                std::chrono::milliseconds timeout, int capacity,
                                                                OutputMode mode, Retry retry) {
    using OUT = detail::AsyncOutput<F>;
    static_assert(!std::is_same_v<OUT, detail::InvalidFunction>,
                  "AsyncDataStream: the function must derive from AsyncFunction<IN, OUT>, or be a callable "
                  "void(const IN&, ResultFuture<OUT>)");
    static_assert(detail::AsyncFunctionFor<F, IN, OUT>,
                  "AsyncDataStream: the function's asyncInvoke must take const IN& of this stream's record type and "
                  "a ResultFuture<OUT>");
    if (timeout.count() <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "AsyncDataStream: the timeout must be positive, got " + std::to_string(timeout.count()) +
                      " ms (weir needs one, so that a lost answer cannot stall the job)");
    if (capacity < 1)
      throw Error(ErrorCode::kInvalidArgument,
                  "AsyncDataStream: the capacity must be at least 1, got " + std::to_string(capacity));
    detail::AsyncSettings<OUT> settings;
    settings.ordered = mode == OutputMode::ORDERED;
    settings.timeoutMs = timeout.count();
    settings.capacity = static_cast<size_t>(capacity);
    if constexpr (!std::is_same_v<Retry, std::nullptr_t>) {
      static_assert(std::is_base_of_v<AsyncRetryStrategy<OUT>, std::remove_const_t<typename Retry::element_type>>,
                    "AsyncDataStream: the retry strategy must be an AsyncRetryStrategy<OUT> of the function's OUT");
      settings.retry = std::move(retry);
    }
    auto& node = in.graph()->add(detail::Transformation::Kind::kOperator, "Async Wait Operator", {in.id()},
                                 detail::TypedStream<OUT>::get());
    node.createOperator = [fn = std::move(fn), settings] {
      return std::make_unique<detail::AsyncWaitOperator<IN, OUT, F>>(fn, settings);
    };
    return SingleOutputStreamOperator<OUT>(in.graph(), node.id);
  }
};

}  // namespace weir
