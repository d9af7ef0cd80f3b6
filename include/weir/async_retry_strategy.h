// When async I/O sends a request again (Flink's AsyncRetryStrategy and the builders of
// AsyncRetryStrategies): which results and which errors call for another attempt, how
// many attempts there may be, and how long to wait before each.
//
//   auto retry = weir::AsyncRetryStrategies::FixedDelayRetryStrategyBuilder<Out>(3, 100)
//                    .ifResult(weir::RetryPredicates::EMPTY_RESULT_PREDICATE<Out>)
//                    .ifException(weir::RetryPredicates::HAS_EXCEPTION_PREDICATE)
//                    .build();
//   weir::AsyncDataStream::unorderedWaitWithRetry(stream, Lookup{}, 1s, 100, retry);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "weir/error.h"

namespace weir {

// Which answers call for another attempt. An empty predicate never does.
template <class OUT>
struct AsyncRetryPredicate {
  std::function<bool(const std::vector<OUT>&)> resultPredicate;
  std::function<bool(const std::exception&)> exceptionPredicate;
};

template <class OUT>
class AsyncRetryStrategy {
 public:
  virtual ~AsyncRetryStrategy() = default;
  // Whether another attempt may follow `currentAttempts` attempts (1 after the first).
  virtual bool canRetry(int currentAttempts) const = 0;
  // How long to wait before the attempt after `currentAttempts`, in ms.
  virtual int64_t getBackoffTimeMillis(int currentAttempts) const = 0;
  virtual AsyncRetryPredicate<OUT> getRetryPredicate() const = 0;
};

namespace RetryPredicates {
// A request that completed with no result is retried.
template <class OUT>
inline const std::function<bool(const std::vector<OUT>&)> EMPTY_RESULT_PREDICATE =
    [](const std::vector<OUT>& results) { return results.empty(); };
// A request that failed, with any error, is retried.
inline const std::function<bool(const std::exception&)> HAS_EXCEPTION_PREDICATE = [](const std::exception&) {
  return true;
};
}  // namespace RetryPredicates

namespace AsyncRetryStrategies {

// As in Flink, `maxAttempts` counts the attempts after the first: canRetry(n) holds
// while n <= maxAttempts, so a request is sent at most maxAttempts + 1 times.
template <class OUT>
class FixedDelayRetryStrategy final : public AsyncRetryStrategy<OUT> {
 public:
  FixedDelayRetryStrategy(int maxAttempts, int64_t backoffTimeMillis, AsyncRetryPredicate<OUT> predicate)
      : maxAttempts_(maxAttempts), backoff_(backoffTimeMillis), predicate_(std::move(predicate)) {}
  bool canRetry(int currentAttempts) const override { return currentAttempts <= maxAttempts_; }
  int64_t getBackoffTimeMillis(int) const override { return backoff_; }
  AsyncRetryPredicate<OUT> getRetryPredicate() const override { return predicate_; }

 private:
  int maxAttempts_;
  int64_t backoff_;
  AsyncRetryPredicate<OUT> predicate_;
};

// The wait before the attempt after the n-th is min(initialDelay × multiplier^(n−1),
// maxRetryDelay): each request's own sequence. (Flink's strategy keeps one sequence for
// all the requests of an operator, so a request's wait depends on how the others went.)
template <class OUT>
class ExponentialBackoffDelayRetryStrategy final : public AsyncRetryStrategy<OUT> {
 public:
  ExponentialBackoffDelayRetryStrategy(int maxAttempts, int64_t initialDelay, int64_t maxRetryDelay, double multiplier,
                                       AsyncRetryPredicate<OUT> predicate)
      : maxAttempts_(maxAttempts), initialDelay_(initialDelay), maxRetryDelay_(maxRetryDelay),
        multiplier_(multiplier), predicate_(std::move(predicate)) {}
  bool canRetry(int currentAttempts) const override { return currentAttempts <= maxAttempts_; }
  int64_t getBackoffTimeMillis(int currentAttempts) const override {
    double delay = static_cast<double>(initialDelay_) * std::pow(multiplier_, std::max(0, currentAttempts - 1));
    return delay >= static_cast<double>(maxRetryDelay_) ? maxRetryDelay_ : static_cast<int64_t>(delay);
  }
  AsyncRetryPredicate<OUT> getRetryPredicate() const override { return predicate_; }

 private:
  int maxAttempts_;
  int64_t initialDelay_;
  int64_t maxRetryDelay_;
  double multiplier_;
  AsyncRetryPredicate<OUT> predicate_;
};

namespace detail {
inline void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, what);
}
}  // namespace detail

// What both builders share: which answers call for a retry.
template <class Builder, class OUT>
class RetryPredicateBuilder {
 public:
  Builder& ifResult(std::function<bool(const std::vector<OUT>&)> predicate) {
    predicate_.resultPredicate = std::move(predicate);
    return static_cast<Builder&>(*this);
  }
  Builder& ifException(std::function<bool(const std::exception&)> predicate) {
    predicate_.exceptionPredicate = std::move(predicate);
    return static_cast<Builder&>(*this);
  }

 protected:
  AsyncRetryPredicate<OUT> predicate_;
};

template <class OUT>
class FixedDelayRetryStrategyBuilder : public RetryPredicateBuilder<FixedDelayRetryStrategyBuilder<OUT>, OUT> {
 public:
  FixedDelayRetryStrategyBuilder(int maxAttempts, int64_t backoffTimeMillis)
      : maxAttempts_(maxAttempts), backoff_(backoffTimeMillis) {
    detail::require(maxAttempts > 0, "FixedDelayRetryStrategyBuilder: maxAttempts must be greater than zero, got " +
                                         std::to_string(maxAttempts));
    detail::require(backoffTimeMillis > 0,
                    "FixedDelayRetryStrategyBuilder: backoffTimeMillis must be greater than zero, got " +
                        std::to_string(backoffTimeMillis));
  }
  FixedDelayRetryStrategy<OUT> build() const { return {maxAttempts_, backoff_, this->predicate_}; }

 private:
  int maxAttempts_;
  int64_t backoff_;
};

template <class OUT>
class ExponentialBackoffDelayRetryStrategyBuilder
    : public RetryPredicateBuilder<ExponentialBackoffDelayRetryStrategyBuilder<OUT>, OUT> {
 public:
  ExponentialBackoffDelayRetryStrategyBuilder(int maxAttempts, int64_t initialDelay, int64_t maxRetryDelay,
                                              double multiplier)
      : maxAttempts_(maxAttempts), initialDelay_(initialDelay), maxRetryDelay_(maxRetryDelay), multiplier_(multiplier) {
    const std::string name = "ExponentialBackoffDelayRetryStrategyBuilder: ";
    detail::require(maxAttempts > 0, name + "maxAttempts must be greater than zero, got " + std::to_string(maxAttempts));
    detail::require(initialDelay > 0, name + "initialDelay must be greater than zero, got " + std::to_string(initialDelay));
    detail::require(maxRetryDelay >= initialDelay, name + "maxRetryDelay (" + std::to_string(maxRetryDelay) +
                                                       ") must be at least initialDelay (" +
                                                       std::to_string(initialDelay) + ")");
    detail::require(multiplier >= 1.0, name + "multiplier must be at least 1, got " + std::to_string(multiplier));
  }
  ExponentialBackoffDelayRetryStrategy<OUT> build() const {
    return {maxAttempts_, initialDelay_, maxRetryDelay_, multiplier_, this->predicate_};
  }

 private:
  int maxAttempts_;
  int64_t initialDelay_;
  int64_t maxRetryDelay_;
  double multiplier_;
};

}  // namespace AsyncRetryStrategies

}  // namespace weir
