// Which callables fit which transformation, and what they return. The API checks these
// with static_assert so a wrong signature is one message naming the expected one.
#pragma once

#include <concepts>
#include <functional>
#include <type_traits>

#include "weir/functions.h"

namespace weir::detail {

template <class...>
inline constexpr bool kDependentFalse = false;

// Stands in for the result type of a function that does not fit, so that only the
// static_assert reports the mistake.
struct InvalidFunction {};

template <class F, class IN>
concept MapObject = requires(F& f, const IN& v) { f.map(v); };
template <class F, class IN>
concept MapCallable = std::invocable<F&, IN&&> && !std::is_void_v<std::invoke_result_t<F&, IN&&>>;
template <class F, class IN>
concept MapFunctionFor = MapObject<F, IN> || MapCallable<F, IN>;

template <class F, class IN>
auto mapResult() {
  if constexpr (MapObject<F, IN>) {
    return std::type_identity<std::decay_t<decltype(std::declval<F&>().map(std::declval<const IN&>()))>>{};
  } else if constexpr (MapCallable<F, IN>) {
    return std::type_identity<std::decay_t<std::invoke_result_t<F&, IN&&>>>{};
  } else {
    return std::type_identity<InvalidFunction>{};
  }
}
template <class F, class IN>
using MapResult = typename decltype(mapResult<F, IN>())::type;

template <class F, class IN>
decltype(auto) callMap(F& f, IN&& v) {
  if constexpr (MapObject<F, std::decay_t<IN>>) return f.map(v);
  else return std::invoke(f, std::forward<IN>(v));
}

template <class F, class T>
concept FilterObject = requires(F& f, const T& v) { { f.filter(v) } -> std::convertible_to<bool>; };
template <class F, class T>
concept FilterCallable = std::is_invocable_r_v<bool, F&, const T&>;
template <class F, class T>
concept FilterFunctionFor = FilterObject<F, T> || FilterCallable<F, T>;

template <class F, class T>
bool callFilter(F& f, const T& v) {
  if constexpr (FilterObject<F, T>) return f.filter(v);
  else return std::invoke(f, v);
}

template <class F, class T>
concept ReduceObject = requires(F& f, const T& a, const T& b) { { f.reduce(a, b) } -> std::convertible_to<T>; };
template <class F, class T>
concept ReduceCallable = std::is_invocable_r_v<T, F&, const T&, const T&>;
template <class F, class T>
concept ReduceFunctionFor = ReduceObject<F, T> || ReduceCallable<F, T>;

template <class F, class T>
T callReduce(F& f, const T& a, const T& b) {
  if constexpr (ReduceObject<F, T>) return f.reduce(a, b);
  else return std::invoke(f, a, b);
}

template <class F, class IN, class OUT>
concept FlatMapObject = requires(F& f, const IN& v, Collector<OUT>& c) { f.flatMap(v, c); };
// A callable may take the record by value or as IN&& to move from it (the operator owns
// its input batch), or as const IN&.
template <class F, class IN, class OUT>
concept FlatMapCallable = std::invocable<F&, IN&&, Collector<OUT>&>;

// OUT of a flatMap function object: declared as OutputType by RichFlatMapFunction.
template <class F>
concept HasOutputType = requires { typename F::OutputType; };

template <class F, class Fallback>
struct HasOutputTypeOr {
  using type = Fallback;
};
template <HasOutputType F, class Fallback>
struct HasOutputTypeOr<F, Fallback> {
  using type = typename F::OutputType;
};

template <class F, class IN, class OUT>
void callFlatMap(F& f, IN&& v, Collector<OUT>& c) {
  if constexpr (FlatMapObject<F, std::decay_t<IN>, OUT>) f.flatMap(v, c);
  else std::invoke(f, std::forward<IN>(v), c);
}

template <class F, class T>
concept KeySelectorFor = std::invocable<F&, const T&> && !std::is_void_v<std::invoke_result_t<F&, const T&>>;

}  // namespace weir::detail
