// The window functions of the keyed window operators as policies: what a window's
// contents (its accumulator) are, how a record is added and two windows' contents merged,
// and what firing a window hands the user's function — reduce(), aggregate(),
// aggregate() with a ProcessWindowFunction, and process().
#pragma once

#include <iterator>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "weir/clock.h"
#include "weir/detail/operators/function_traits.h"
#include "weir/error.h"
#include "weir/functions.h"
#include "weir/windows.h"

namespace weir::detail {

// Whether window function F overrides clear(Context&); if not, its windows need not
// be told when they go.
template <class F>
constexpr bool overridesClear() {
  if constexpr (requires { F::kOverridesClear; }) return F::kOverridesClear;
  else return !std::is_same_v<decltype(&F::clear), decltype(&F::FunctionBase::clear)>;
}

// A policy whose function clears per-window state when a window goes.
template <class Policy>
concept ClearsWindows = Policy::kClears;

// A policy that keeps a window's records (its accumulator is their vector).
template <class Policy>
concept KeepsRecords = Policy::kKeepsRecords;

// What the policies with a ProcessWindowFunction share: its context, and clear().
template <class F>
struct ProcessFunctionPolicy {
  static constexpr bool kClears = overridesClear<F>();
  F fn;
  template <class W>
  static typename F::Context context(const W& window, int64_t watermark, const Clock& clock,
                                     WindowFunctionState<W>* state) {
    return typename F::Context(window, watermark, clock, state);
  }
  template <class W>
  void clear(const W& window, int64_t watermark, const Clock& clock, WindowFunctionState<W>* state) {
    auto ctx = context(window, watermark, clock, state);
    fn.clear(ctx);
  }
};

// Session windows merge, so a window function has no per-window state there (as in Flink).
[[noreturn]] inline void throwNoWindowStateOnSessions() {
  throw Error(ErrorCode::kState,
              "windowState(): session windows merge, so they have no per-window state; use globalState()");
}

// What a window's contents (its accumulator) are and how records go in. Each is a base
// of the policies below; a policy names the function its contents use.

// The reduced record, with the policy's reducer().
template <class T, class Policy>
struct ReducedContents {
  using Acc = std::optional<T>;
  Acc create() { return std::nullopt; }
  void add(Acc& acc, const T& value) {
    auto& reduce = static_cast<Policy&>(*this).reducer();
    acc = acc ? callReduce(reduce, *acc, value) : value;
  }
  void merge(Acc& into, Acc& from) {
    if (from) add(into, *from);
  }
};

// The accumulator of the policy's aggregator(), an AggregateFunction A.
template <class T, class A, class Policy>
struct AggregatedContents {
  using Acc = typename A::AccumulatorType;
  Acc create() { return aggregator().createAccumulator(); }
  void add(Acc& acc, const T& value) { acc = aggregator().add(value, std::move(acc)); }
  void merge(Acc& into, Acc& from) { into = aggregator().merge(std::move(into), from); }
  A& aggregator() { return static_cast<Policy&>(*this).aggregator(); }
};

// The window's records themselves.
template <class T>
struct RecordContents {
  static constexpr bool kKeepsRecords = true;
  using Acc = std::vector<T>;
  Acc create() { return {}; }
  void add(Acc& acc, const T& value) { acc.push_back(value); }
  void merge(Acc& into, Acc& from) {
    into.insert(into.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  }
};

// reduce(): the reduced record is the output.
template <class T, class F>
struct ReduceWindowPolicy : ReducedContents<T, ReduceWindowPolicy<T, F>> {
  using Out = T;
  F fn;
  F& reducer() { return fn; }
  template <class K, class W>
  void fire(const K&, const W&, std::optional<T>& acc, int64_t, const Clock&, WindowFunctionState<W>*,
            Collector<T>& out) {
    out.collect(*acc);
  }
};

// aggregate(): an AggregateFunction's result is the output.
template <class T, class A>
struct AggregateWindowPolicy : AggregatedContents<T, A, AggregateWindowPolicy<T, A>> {
  using Out = typename A::OutputType;
  A fn;
  A& aggregator() { return fn; }
  template <class K, class W>
  void fire(const K&, const W&, typename A::AccumulatorType& acc, int64_t, const Clock&, WindowFunctionState<W>*,
            Collector<Out>& out) {
    out.collect(fn.getResult(acc));
  }
};

// aggregate(agg, processWindowFunction): the accumulator's result is the one element the
// ProcessWindowFunction sees, with the key and the window.
template <class T, class A, class F>
struct AggregateProcessWindowPolicy : ProcessFunctionPolicy<F>,
                                      AggregatedContents<T, A, AggregateProcessWindowPolicy<T, A, F>> {
  using Out = typename F::OutputType;
  A agg;
  A& aggregator() { return agg; }
  template <class K, class W>
  void fire(const K& key, const W& window, typename A::AccumulatorType& acc, int64_t watermark, const Clock& clock,
            WindowFunctionState<W>* state, Collector<Out>& out) {
    typename A::OutputType result = agg.getResult(acc);
    auto ctx = this->context(window, watermark, clock, state);
    this->fn.process(key, ctx, std::span<const typename A::OutputType>(&result, 1), out);
  }
};

// reduce(reduceFn, processWindowFunction): the reduced record is the one element the
// ProcessWindowFunction sees, with the key and the window.
template <class T, class R, class F>
struct ReduceProcessWindowPolicy : ProcessFunctionPolicy<F>, ReducedContents<T, ReduceProcessWindowPolicy<T, R, F>> {
  using Out = typename F::OutputType;
  R reduce;
  R& reducer() { return reduce; }
  template <class K, class W>
  void fire(const K& key, const W& window, std::optional<T>& acc, int64_t watermark, const Clock& clock,
            WindowFunctionState<W>* state, Collector<Out>& out) {
    auto ctx = this->context(window, watermark, clock, state);
    this->fn.process(key, ctx, std::span<const T>(&*acc, 1), out);
  }
};

// apply(windowFunction): keeps the window's records and hands them to a WindowFunction.
template <class T, class F>
struct ApplyWindowPolicy : RecordContents<T> {
  using Out = typename F::OutputType;
  F fn;
  template <class K, class W>
  void fire(const K& key, const W& window, std::vector<T>& acc, int64_t, const Clock&, WindowFunctionState<W>*,
            Collector<Out>& out) {
    fn.apply(key, window, std::span<const T>(acc), out);
  }
};

// reduce(reduceFn, windowFunction): the reduced record is the one element it sees.
template <class T, class R, class F>
struct ReduceApplyWindowPolicy : ReducedContents<T, ReduceApplyWindowPolicy<T, R, F>> {
  using Out = typename F::OutputType;
  F fn;
  R reduce;
  R& reducer() { return reduce; }
  template <class K, class W>
  void fire(const K& key, const W& window, std::optional<T>& acc, int64_t, const Clock&, WindowFunctionState<W>*,
            Collector<Out>& out) {
    fn.apply(key, window, std::span<const T>(&*acc, 1), out);
  }
};

// aggregate(agg, windowFunction): the aggregate's result is the one element it sees.
template <class T, class A, class F>
struct AggregateApplyWindowPolicy : AggregatedContents<T, A, AggregateApplyWindowPolicy<T, A, F>> {
  using Out = typename F::OutputType;
  F fn;
  A agg;
  A& aggregator() { return agg; }
  template <class K, class W>
  void fire(const K& key, const W& window, typename A::AccumulatorType& acc, int64_t, const Clock&,
            WindowFunctionState<W>*, Collector<Out>& out) {
    typename A::OutputType result = agg.getResult(acc);
    fn.apply(key, window, std::span<const typename A::OutputType>(&result, 1), out);
  }
};

// process(): keeps the window's records and hands them to a ProcessWindowFunction.
template <class T, class F>
struct ProcessWindowPolicy : ProcessFunctionPolicy<F>, RecordContents<T> {
  using Out = typename F::OutputType;
  template <class K, class W>
  void fire(const K& key, const W& window, std::vector<T>& acc, int64_t watermark, const Clock& clock,
            WindowFunctionState<W>* state, Collector<Out>& out) {
    auto ctx = this->context(window, watermark, clock, state);
    this->fn.process(key, ctx, std::span<const T>(acc), out);
  }
};

}  // namespace weir::detail
