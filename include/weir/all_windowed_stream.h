// Windows over a whole, non-keyed stream (Flink's windowAll): every record goes to one
// operator instance (parallelism 1), which sees all of the stream's windows.
#pragma once

#include <chrono>
#include <span>

#include "weir/checkpoint_listener.h"
#include "weir/checkpointed_function.h"
#include "weir/data_stream.h"
#include "weir/keyed_stream.h"
#include "weir/windows.h"

namespace weir {

// Sees all records of a window of the whole stream at once (Flink's
// ProcessAllWindowFunction).
template <class IN, class OUT, class W = TimeWindow>
class ProcessAllWindowFunction : public RichFunction {
 public:
  using InputType = IN;
  using OutputType = OUT;
  using Context = typename ProcessWindowFunction<IN, OUT, int32_t, W>::Context;
  using FunctionBase = ProcessAllWindowFunction;

  // Called when the window fires; everything emitted carries window.maxTimestamp().
  virtual void process(Context& ctx, std::span<const IN> elements, Collector<OUT>& out) = 0;
  // Called when the window's state goes; clear what it kept in ctx.windowState() here.
  virtual void clear(Context& ctx) {}
};

namespace detail {
// The one key of a windowAll: every record has it.
struct AllKey {
  int32_t operator()(const auto&) const { return 0; }
};

// Runs a ProcessAllWindowFunction as the ProcessWindowFunction of the single key.
template <class F, class W>
class AllWindowProcess final
    : public ProcessWindowFunction<typename F::InputType, typename F::OutputType, int32_t, W> {
  using IN = typename F::InputType;
  using OUT = typename F::OutputType;
  using Base = ProcessWindowFunction<IN, OUT, int32_t, W>;
  static_assert(!std::is_base_of_v<CheckpointedFunction, F> && !std::is_base_of_v<CheckpointListener, F>,
                "windowAll(...).process(f): f cannot be a CheckpointedFunction or CheckpointListener yet");

 public:
  explicit AllWindowProcess(F fn) : fn_(std::move(fn)) {}
  void open() override { openFunction(fn_, &this->getRuntimeContext()); }
  void close() override { closeFunction(fn_); }
  void process(const int32_t&, typename Base::Context& ctx, std::span<const IN> elements, Collector<OUT>& out) override {
    fn_.process(ctx, elements, out);
  }
  void clear(typename Base::Context& ctx) override { fn_.clear(ctx); }
  static constexpr bool kOverridesClear = overridesClear<F>();

 private:
  F fn_;
};
}  // namespace detail

// stream.windowAll(assigner): reduce, aggregate or process the windows of the whole
// stream. The operator's parallelism is 1 (setting another is an error).
template <class T, class Assigner, class Trigger, class Evictor>
class AllWindowedStream {
  using Keyed = WindowedStream<T, int32_t, detail::AllKey, Assigner, Trigger, Evictor>;
  using W = typename Assigner::WindowType;

 public:
  explicit AllWindowedStream(Keyed windowed) : windowed_(std::move(windowed)) {}

  // Fires the windows by `trigger` (see trigger.h).
  template <class NewTrigger>
  AllWindowedStream<T, Assigner, NewTrigger, Evictor> trigger(NewTrigger trigger) {
    return AllWindowedStream<T, Assigner, NewTrigger, Evictor>(windowed_.trigger(std::move(trigger)));
  }
  // Evicts records from a window when it fires (see evictor.h).
  template <class NewEvictor>
  AllWindowedStream<T, Assigner, Trigger, NewEvictor> evictor(NewEvictor evictor) {
    return AllWindowedStream<T, Assigner, Trigger, NewEvictor>(windowed_.evictor(std::move(evictor)));
  }

  AllWindowedStream& allowedLateness(std::chrono::milliseconds lateness) {
    windowed_.allowedLateness(lateness);
    return *this;
  }
  AllWindowedStream& sideOutputLateData(const OutputTag<T>& tag) {
    windowed_.sideOutputLateData(tag);
    return *this;
  }

  template <class F>
  SingleOutputStreamOperator<T> reduce(F fn) {
    return nonParallel(windowed_.reduce(std::move(fn)), "Window All Reduce");
  }
  template <class A>
  SingleOutputStreamOperator<typename A::OutputType> aggregate(A agg) {
    return nonParallel(windowed_.aggregate(std::move(agg)), "Window All Aggregate");
  }
  // `fn` derives from ProcessAllWindowFunction<T, OUT>.
  template <class F>
  SingleOutputStreamOperator<typename F::OutputType> process(F fn) {
    static_assert(std::is_base_of_v<ProcessAllWindowFunction<T, typename F::OutputType, W>, F>,
                  "windowAll(...).process(f): f must derive from ProcessAllWindowFunction<T, OUT, W> with this "
                  "stream's record type and the assigner's window type W");
    return nonParallel(windowed_.process(detail::AllWindowProcess<F, W>(std::move(fn))), "Window All Process");
  }

 private:
  template <class OUT>
  static SingleOutputStreamOperator<OUT> nonParallel(SingleOutputStreamOperator<OUT> op, const char* name) {
    op.name(name).forceNonParallel();
    return op;
  }

  Keyed windowed_;
};

template <class T>
template <class Assigner>
AllWindowedStream<T, Assigner> DataStream<T>::windowAll(Assigner assigner) {
  auto keyed = keyBy(detail::AllKey{});
  return AllWindowedStream<T, Assigner>(keyed.window(std::move(assigner)));
}

template <class T>
auto DataStream<T>::countWindowAll(int64_t size) {
  return windowAll(GlobalWindows::create()).trigger(PurgingTrigger<CountTrigger>::of(CountTrigger::of(size)));
}
template <class T>
auto DataStream<T>::countWindowAll(int64_t size, int64_t slide) {
  return windowAll(GlobalWindows::create()).evictor(CountEvictor::of(size)).trigger(CountTrigger::of(slide));
}

}  // namespace weir
