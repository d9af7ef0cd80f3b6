// State descriptors: the name and type of a keyed state (Flink's *StateDescriptor).
// Asking the runtime context for the same name twice gives the same state; asking for
// it with another kind or type is an error naming the state.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "weir/aggregate_function.h"
#include "weir/error.h"
#include "weir/state_ttl_config.h"

namespace weir {

class StateDescriptor {
 public:
  explicit StateDescriptor(std::string name) : name_(std::move(name)) {
    if (name_.empty()) throw Error(ErrorCode::kInvalidArgument, "a state descriptor needs a non-empty name");
  }
  const std::string& getName() const { return name_; }
  // Entries of this state expire `ttl` after they were last written (see
  // state_ttl_config.h).
  void enableTimeToLive(const StateTtlConfig& ttl) { ttl_ = ttl; }
  const std::optional<StateTtlConfig>& getTtlConfig() const { return ttl_; }

 private:
  std::string name_;
  std::optional<StateTtlConfig> ttl_;
};

template <class T>
class ValueStateDescriptor : public StateDescriptor {
 public:
  using ValueType = T;
  explicit ValueStateDescriptor(std::string name) : StateDescriptor(std::move(name)) {}
  // value() returns `defaultValue` for a key that has none.
  ValueStateDescriptor(std::string name, T defaultValue)
      : StateDescriptor(std::move(name)), defaultValue_(std::move(defaultValue)) {}
  const std::optional<T>& getDefaultValue() const { return defaultValue_; }

 private:
  std::optional<T> defaultValue_;
};

template <class T>
class ListStateDescriptor : public StateDescriptor {
 public:
  using ElementType = T;
  using StateDescriptor::StateDescriptor;
};

template <class UK, class UV>
class MapStateDescriptor : public StateDescriptor {
 public:
  using KeyType = UK;
  using ValueType = UV;
  using StateDescriptor::StateDescriptor;
};

template <class T>
class ReducingStateDescriptor : public StateDescriptor {
 public:
  using ReduceFn = std::function<T(const T&, const T&)>;
  // `reduce` is a callable T(const T&, const T&) or an object with such a reduce().
  template <class F>
  ReducingStateDescriptor(std::string name, F reduce) : StateDescriptor(std::move(name)) {
    if constexpr (std::is_invocable_r_v<T, F&, const T&, const T&>) {
      reduce_ = std::move(reduce);
    } else {
      static_assert(requires(F f, const T& a) { { f.reduce(a, a) } -> std::convertible_to<T>; },
                    "ReducingStateDescriptor<T> needs a function T(const T&, const T&) or an object with "
                    "T reduce(const T&, const T&)");
      reduce_ = [f = std::make_shared<F>(std::move(reduce))](const T& a, const T& b) { return f->reduce(a, b); };
    }
  }
  const ReduceFn& getReduceFunction() const { return reduce_; }

 private:
  ReduceFn reduce_;
};

template <class IN, class ACC, class OUT>
class AggregatingStateDescriptor : public StateDescriptor {
 public:
  using Function = AggregateFunction<IN, ACC, OUT>;
  template <class F>
    requires std::is_base_of_v<Function, F>
  AggregatingStateDescriptor(std::string name, F function)
      : StateDescriptor(std::move(name)), function_(std::make_shared<F>(std::move(function))) {}
  AggregatingStateDescriptor(std::string name, std::shared_ptr<Function> function)
      : StateDescriptor(std::move(name)), function_(std::move(function)) {}
  const std::shared_ptr<Function>& getAggregateFunction() const { return function_; }

 private:
  std::shared_ptr<Function> function_;
};

template <class F>
AggregatingStateDescriptor(std::string, F)
    -> AggregatingStateDescriptor<typename F::InputType, typename F::AccumulatorType, typename F::OutputType>;

}  // namespace weir
