// Two streams connected into one operator:
//   rules.connect(events).flatMap(MyCoFlatMapFunction{});   // CoMap, CoFlatMap, CoProcess
// Two keyed streams with the same key type, joined by key:
//   clicks.keyBy(user).connect(orders.keyBy(user)).process(MyKeyedCoProcessFunction{});
//   clicks.keyBy(user).intervalJoin(orders.keyBy(user)).between(-5s, 10s).process(MyJoin{});
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "weir/co_process_function.h"
#include "weir/data_stream.h"
#include "weir/detail/operators/co_stream_operator.h"
#include "weir/detail/operators/interval_join_function.h"
#include "weir/detail/operators/keyed_co_process_operator.h"
#include "weir/keyed_stream.h"
#include "weir/output_tag.h"

namespace weir {

// first.connect(second): one operator sees the records of both, each input in its order
// and the two interleaved as they arrive; its watermark is the smaller of the two.
template <class IN1, class IN2>
class ConnectedStreams {
 public:
  ConnectedStreams(DataStream<IN1> first, DataStream<IN2> second)
      : first_(std::move(first)), second_(std::move(second)) {}

  const DataStream<IN1>& getFirstInput() const { return first_; }
  const DataStream<IN2>& getSecondInput() const { return second_; }

  // `fn` derives from CoMapFunction<IN1, IN2, OUT>.
  template <class F>
  auto map(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<CoMapFunction<IN1, IN2, OUT>, F>,
                  "connect(...).map(f): f must derive from CoMapFunction<IN1, IN2, OUT> for the two streams' types");
    return add<OUT>("Co-Map", std::move(fn));
  }
  // `fn` derives from CoFlatMapFunction<IN1, IN2, OUT>.
  template <class F>
  auto flatMap(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<CoFlatMapFunction<IN1, IN2, OUT>, F>,
                  "connect(...).flatMap(f): f must derive from CoFlatMapFunction<IN1, IN2, OUT> for the two streams' "
                  "types");
    return add<OUT>("Co-Flat Map", std::move(fn));
  }
  // `fn` derives from CoProcessFunction<IN1, IN2, OUT>.
  template <class F>
  auto process(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<CoProcessFunction<IN1, IN2, OUT>, F>,
                  "connect(...).process(f): f must derive from CoProcessFunction<IN1, IN2, OUT> for the two streams' "
                  "types (keyBy both first for a KeyedCoProcessFunction)");
    return add<OUT>("Co-Process", std::move(fn));
  }

  // Keys both inputs (the keys must have one type): records with equal keys meet.
  template <class F1, class F2>
  auto keyBy(F1 key1, F2 key2) {
    return DataStream<IN1>(first_).keyBy(std::move(key1)).connect(DataStream<IN2>(second_).keyBy(std::move(key2)));
  }

 private:
  template <class OUT, class F>
  SingleOutputStreamOperator<OUT> add(std::string name, F fn) {
    return detail::addTwoInputOperator<OUT>(first_.graph(), first_.id(), second_.id(), std::move(name), [fn] {
      return std::make_unique<detail::CoStreamOperator<IN1, IN2, F>>(fn);
    });
  }

  DataStream<IN1> first_;
  DataStream<IN2> second_;
};

template <class T>
template <class T2>
ConnectedStreams<T, T2> DataStream<T>::connect(const DataStream<T2>& other) const {
  return ConnectedStreams<T, T2>(*this, other);
}

// keyed1.connect(keyed2): records of both with equal keys meet in one subtask.
template <class IN1, class IN2, class K, class Selector1, class Selector2>
class KeyedConnectedStreams {
 public:
  KeyedConnectedStreams(KeyedStream<IN1, K, Selector1> first, KeyedStream<IN2, K, Selector2> second)
      : first_(std::move(first)), second_(std::move(second)) {}

  // Runs `fn`, a KeyedCoProcessFunction<K, IN1, IN2, OUT>, on both inputs.
  template <class F>
  auto process(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<KeyedCoProcessFunction<K, IN1, IN2, OUT>, F>,
                  "keyed1.connect(keyed2).process(f): f must derive from KeyedCoProcessFunction<K, IN1, IN2, OUT>");
    return add<OUT>("Co-Process-Keyed", std::move(fn));
  }

  // The operator of a function over both inputs (process, or an interval join's).
  template <class OUT, class F>
  SingleOutputStreamOperator<OUT> add(std::string name, F fn) {
    return detail::addTwoInputOperator<OUT>(
        first_.graph(), first_.id(), second_.id(), std::move(name),
        [fn, s1 = first_.keySelector(), s2 = second_.keySelector()] {
          return std::make_unique<detail::KeyedCoProcessOperator<IN1, IN2, K, Selector1, Selector2, F>>(s1, s2, fn);
        });
  }

 private:
  KeyedStream<IN1, K, Selector1> first_;
  KeyedStream<IN2, K, Selector2> second_;
};

// An interval join with its bounds: pairs (left, right) of equal keys with
// left.time + lower <= right.time <= left.time + upper.
template <class IN1, class IN2, class K, class Selector1, class Selector2>
class IntervalJoined {
 public:
  IntervalJoined(KeyedConnectedStreams<IN1, IN2, K, Selector1, Selector2> streams, int64_t lower, int64_t upper)
      : streams_(std::move(streams)), lower_(lower), upper_(upper) {}

  // The lower bound itself does not match (default: it does).
  IntervalJoined& lowerBoundExclusive() {
    lowerExclusive_ = true;
    return *this;
  }
  // The upper bound itself does not match (default: it does).
  IntervalJoined& upperBoundExclusive() {
    upperExclusive_ = true;
    return *this;
  }
  // Left records behind the watermark go to `tag` instead of being dropped and counted
  // as numLateRecordsDropped (a late record is not joined, as in Flink).
  IntervalJoined& sideOutputLeftLateData(const OutputTag<IN1>& tag) {
    leftLate_ = tag;
    return *this;
  }
  IntervalJoined& sideOutputRightLateData(const OutputTag<IN2>& tag) {
    rightLate_ = tag;
    return *this;
  }

  // Calls `fn`, a ProcessJoinFunction<IN1, IN2, OUT>, for every pair; what it emits
  // carries the larger of the two timestamps.
  template <class F>
  auto process(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<ProcessJoinFunction<IN1, IN2, OUT>, F>,
                  "intervalJoin(...).between(...).process(f): f must derive from ProcessJoinFunction<IN1, IN2, OUT>");
    detail::IntervalJoinBounds bounds{lowerExclusive_ ? detail::saturatingAdd(lower_, 1) : lower_,
                                      upperExclusive_ ? detail::saturatingAdd(upper_, -1) : upper_};
    return streams_.template add<OUT>(
        "Interval Join", detail::IntervalJoinFunction<K, IN1, IN2, F>(std::move(fn), bounds, leftLate_, rightLate_));
  }

 private:
  KeyedConnectedStreams<IN1, IN2, K, Selector1, Selector2> streams_;
  int64_t lower_;
  int64_t upper_;
  bool lowerExclusive_ = false;
  bool upperExclusive_ = false;
  std::optional<OutputTag<IN1>> leftLate_;
  std::optional<OutputTag<IN2>> rightLate_;
};

// keyed1.intervalJoin(keyed2), waiting for between(lower, upper).
template <class IN1, class IN2, class K, class Selector1, class Selector2>
class IntervalJoin {
 public:
  explicit IntervalJoin(KeyedConnectedStreams<IN1, IN2, K, Selector1, Selector2> streams)
      : streams_(std::move(streams)) {}

  // Right records from left.time + lower to left.time + upper (both inclusive) match;
  // lower > upper is an error.
  IntervalJoined<IN1, IN2, K, Selector1, Selector2> between(std::chrono::milliseconds lower,
                                                            std::chrono::milliseconds upper) {
    if (lower > upper)
      throw Error(ErrorCode::kInvalidArgument, "intervalJoin: the lower bound (" + std::to_string(lower.count()) +
                                                   " ms) must not be above the upper bound (" +
                                                   std::to_string(upper.count()) + " ms)");
    return IntervalJoined<IN1, IN2, K, Selector1, Selector2>(streams_, lower.count(), upper.count());
  }

 private:
  KeyedConnectedStreams<IN1, IN2, K, Selector1, Selector2> streams_;
};

template <class T, class K, class KeySelector>
template <class T2, class K2, class Selector2>
KeyedConnectedStreams<T, T2, K, KeySelector, Selector2> KeyedStream<T, K, KeySelector>::connect(
    const KeyedStream<T2, K2, Selector2>& other) const {
  static_assert(std::is_same_v<K, K2>, "keyed1.connect(keyed2): both streams must have the same key type");
  return KeyedConnectedStreams<T, T2, K, KeySelector, Selector2>(*this, other);
}

template <class T, class K, class KeySelector>
template <class T2, class K2, class Selector2>
IntervalJoin<T, T2, K, KeySelector, Selector2> KeyedStream<T, K, KeySelector>::intervalJoin(
    const KeyedStream<T2, K2, Selector2>& other) const {
  static_assert(std::is_same_v<K, K2>, "keyed1.intervalJoin(keyed2): both streams must have the same key type");
  return IntervalJoin<T, T2, K, KeySelector, Selector2>(connect(other));
}

}  // namespace weir
