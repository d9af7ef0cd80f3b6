// Functions over two connected streams (first.connect(second)): CoMapFunction,
// CoFlatMapFunction and CoProcessFunction on any two streams; KeyedCoProcessFunction on
// two keyed ones; and ProcessJoinFunction, which an interval join calls for every
// matching pair. Records of the two inputs reach the function interleaved as they come.
#pragma once

#include <cstdint>
#include <optional>

#include "weir/functions.h"
#include "weir/keyed_process_function.h"

namespace weir {

// One output per record of either input.
template <class IN1, class IN2, class OUT>
class CoMapFunction : public RichFunction {
 public:
  using OutputType = OUT;
  virtual OUT map1(const IN1& value) = 0;
  virtual OUT map2(const IN2& value) = 0;
};

// Any number of outputs per record of either input.
template <class IN1, class IN2, class OUT>
class CoFlatMapFunction : public RichFunction {
 public:
  using OutputType = OUT;
  virtual void flatMap1(const IN1& value, Collector<OUT>& out) = 0;
  virtual void flatMap2(const IN2& value, Collector<OUT>& out) = 0;
};

// Processes the records of two streams with a context: the record's timestamp, the
// current watermark and processing time, side outputs. Timers need keyed streams
// (connected.keyBy(...) and a KeyedCoProcessFunction).
template <class IN1, class IN2, class OUT>
class CoProcessFunction : public RichFunction {
 public:
  using OutputType = OUT;
  using Context = typename ProcessFunction<IN1, OUT>::Context;
  virtual void processElement1(const IN1& value, Context& ctx, Collector<OUT>& out) = 0;
  virtual void processElement2(const IN2& value, Context& ctx, Collector<OUT>& out) = 0;
};

// Processes two keyed streams with the same key type (keyed1.connect(keyed2)): records of
// either input with equal keys meet in one subtask, share its keyed state and timers.
template <class K, class IN1, class IN2, class OUT>
class KeyedCoProcessFunction : public RichFunction {
 public:
  using KeyType = K;
  using OutputType = OUT;
  using TimerService = typename KeyedProcessFunction<K, IN1, OUT>::TimerService;
  using Context = typename KeyedProcessFunction<K, IN1, OUT>::Context;
  using OnTimerContext = typename KeyedProcessFunction<K, IN1, OUT>::OnTimerContext;

  virtual void processElement1(const IN1& value, Context& ctx, Collector<OUT>& out) = 0;
  virtual void processElement2(const IN2& value, Context& ctx, Collector<OUT>& out) = 0;
  // A timer of the current key fired; what an event-time timer emits carries `timestamp`,
  // what a processing-time timer emits carries none.
  virtual void onTimer(int64_t timestamp, OnTimerContext& ctx, Collector<OUT>& out) {}
};

namespace detail {
class JoinContextAccess;
}

// Called for each pair of an interval join: left from the first stream, right from the
// second, with equal keys and right.time - left.time within the bounds.
template <class IN1, class IN2, class OUT>
class ProcessJoinFunction : public RichFunction {
 public:
  using OutputType = OUT;

  class Context {
   public:
    int64_t getLeftTimestamp() const { return left_; }
    int64_t getRightTimestamp() const { return right_; }
    // The pair's timestamp, which what it emits carries: the larger of the two.
    int64_t getTimestamp() const { return left_ > right_ ? left_ : right_; }
    template <class X>
    void output(const OutputTag<X>& tag, X value) {
      sideOutputs_->collect(tag, std::move(value));
    }

   private:
    friend class detail::JoinContextAccess;
    int64_t left_ = 0;
    int64_t right_ = 0;
    detail::SideOutputs* sideOutputs_ = nullptr;
  };

  virtual void processElement(const IN1& left, const IN2& right, Context& ctx, Collector<OUT>& out) = 0;
};

}  // namespace weir
