// A stream partitioned by key, with rolling aggregations per key.
#pragma once

#include <algorithm>
#include <tuple>

#include "weir/data_stream.h"
#include "weir/detail/operators/keyed_process_operator.h"
#include "weir/detail/operators/keyed_reduce_operator.h"
#include "weir/detail/window/trigger_window_operator.h"
#include "weir/detail/window/window_operator.h"
#include "weir/evictor.h"
#include "weir/key_group.h"
#include "weir/trigger.h"
#include "weir/windows.h"

namespace weir {

// A keyed stream cut into windows: aggregate each (key, window) with reduce, aggregate
// or process; results carry the window's maxTimestamp() (end − 1). trigger() and
// evictor() replace when a window fires and what it holds (see trigger.h, evictor.h).
template <class T, class K, class KeySelector, class Assigner, class Tr = detail::DefaultTrigger,
          class Ev = detail::NoEvictor>
class WindowedStream {
  using W = typename Assigner::WindowType;

 public:
  WindowedStream(std::shared_ptr<detail::GraphBuilder> graph, int id, KeySelector keySelector, Assigner assigner,
                 Tr trigger = {}, Ev evictor = {}, int64_t allowedLateness = 0, int lateTag = -1)
      : graph_(std::move(graph)), id_(id), keySelector_(std::move(keySelector)), assigner_(std::move(assigner)),
        trigger_(std::move(trigger)), evictor_(std::move(evictor)), allowedLateness_(allowedLateness),
        lateTag_(lateTag) {}

  // Records up to `lateness` behind the watermark still update (and fire again) their
  // windows; later ones are dropped, counted as numLateRecordsDropped, or sent to the
  // late-data side output. Default 0; negative is an error.
  WindowedStream& allowedLateness(std::chrono::milliseconds lateness) {
    if (lateness.count() < 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "allowedLateness must not be negative, got " + std::to_string(lateness.count()) + " ms");
    allowedLateness_ = lateness.count();
    return *this;
  }
  // Records too late for every window go to `tag` instead of being dropped.
  WindowedStream& sideOutputLateData(const OutputTag<T>& tag) {
    lateTag_ = tag.index();
    return *this;
  }

  // Fires the windows by `trigger` instead of the assigner's default trigger. Session
  // windows need one that can merge (onMerge); one that says it cannot (canMerge() is
  // false) is an error here.
  template <class NewTrigger>
  WindowedStream<T, K, KeySelector, Assigner, NewTrigger, Ev> trigger(NewTrigger trigger) {
    static_assert(TriggerFor<NewTrigger, T, W>,
                  "trigger(t): t needs TriggerResult onElement(const T&, int64_t, const W&, TriggerContext<W>&), "
                  "onEventTime(int64_t, const W&, TriggerContext<W>&), onProcessingTime(int64_t, const W&, "
                  "TriggerContext<W>&) and clear(const W&, TriggerContext<W>&) for this stream's record type T and "
                  "window type W (derive from weir::Trigger<T, W>)");
    if constexpr (MergingWindowAssigner<Assigner>) {
      static_assert(MergingTriggerFor<NewTrigger, T, W>,
                    "trigger(t): session windows merge, so t also needs void onMerge(const W&, OnMergeContext<W>&)");
      if (!detail::canMerge(trigger))
        throw Error(ErrorCode::kInvalidArgument,
                    "trigger(): session windows merge, and this trigger's canMerge() says it cannot merge windows");
    }
    return {graph_, id_, keySelector_, assigner_, std::move(trigger), evictor_, allowedLateness_, lateTag_};
  }
  // Evicts records from a window when it fires, before or after the window function.
  template <class NewEvictor>
  WindowedStream<T, K, KeySelector, Assigner, Tr, NewEvictor> evictor(NewEvictor evictor) {
    static_assert(EvictorFor<NewEvictor, T, W>,
                  "evictor(e): e needs evictBefore and evictAfter(std::vector<TimestampedValue<T>>&, const W&, "
                  "const EvictorContext&) for this stream's record type T and window type W");
    return {graph_, id_, keySelector_, assigner_, trigger_, std::move(evictor), allowedLateness_, lateTag_};
  }

  template <class F>
  SingleOutputStreamOperator<T> reduce(F fn) {
    static_assert(detail::ReduceFunctionFor<F, T>,
                  "reduce(f): f must be callable as T f(const T& accumulated, const T& value), or be a RichReduceFunction<T>");
    return add<T>("Window Reduce", detail::ReduceWindowPolicy<T, F>{{}, std::move(fn)});
  }

  // Reduces incrementally with `reduceFn` (not a rich function, as in Flink), then hands
  // the one result to `fn`, a ProcessWindowFunction<T, OUT, K, W> or a WindowFunction<T,
  // OUT, K, W>, with the key and the window.
  template <class R, class F>
  SingleOutputStreamOperator<typename F::OutputType> reduce(R reduceFn, F fn) {
    static_assert(detail::ReduceFunctionFor<R, T>,
                  "reduce(r, f): r must be callable as T r(const T& accumulated, const T& value)");
    static_assert(!std::is_base_of_v<RichFunction, R>, "reduce(r, f): r cannot be a rich function here, as in Flink");
    using OUT = typename F::OutputType;
    if constexpr (std::is_base_of_v<ProcessWindowFunction<T, OUT, K, W>, F>) {
      return add<OUT>("Window Reduce", detail::ReduceProcessWindowPolicy<T, R, F>{{std::move(fn)}, {}, std::move(reduceFn)});
    } else {
      static_assert(std::is_base_of_v<WindowFunction<T, OUT, K, W>, F>,
                    "reduce(r, f): f must derive from ProcessWindowFunction<T, OUT, K, W> or WindowFunction<T, OUT, K, "
                    "W> with this stream's record and key types and the assigner's window type W");
      return add<OUT>("Window Reduce", detail::ReduceApplyWindowPolicy<T, R, F>{{}, std::move(fn), std::move(reduceFn)});
    }
  }

  // `agg` derives from AggregateFunction<T, ACC, OUT>.
  template <class A>
  SingleOutputStreamOperator<typename A::OutputType> aggregate(A agg) {
    static_assert(std::is_base_of_v<AggregateFunction<T, typename A::AccumulatorType, typename A::OutputType>, A>,
                  "aggregate(a): a must derive from AggregateFunction<T, ACC, OUT> for this stream's record type T");
    return add<typename A::OutputType>("Window Aggregate", detail::AggregateWindowPolicy<T, A>{{}, std::move(agg)});
  }

  // Aggregates incrementally with `agg`, then hands the one result to `fn` (derived
  // from ProcessWindowFunction<R, OUT, K, W> or WindowFunction<R, OUT, K, W>, R the
  // aggregate's result) with the key and the window.
  template <class A, class F>
  SingleOutputStreamOperator<typename F::OutputType> aggregate(A agg, F fn) {
    static_assert(std::is_base_of_v<AggregateFunction<T, typename A::AccumulatorType, typename A::OutputType>, A>,
                  "aggregate(a, f): a must derive from AggregateFunction<T, ACC, R> for this stream's record type T");
    using R = typename A::OutputType;
    using OUT = typename F::OutputType;
    if constexpr (std::is_base_of_v<ProcessWindowFunction<R, OUT, K, W>, F>) {
      return add<OUT>("Window Aggregate", detail::AggregateProcessWindowPolicy<T, A, F>{{std::move(fn)}, {}, std::move(agg)});
    } else {
      static_assert(std::is_base_of_v<WindowFunction<R, OUT, K, W>, F>,
                    "aggregate(a, f): f must derive from ProcessWindowFunction<R, OUT, K, W> or WindowFunction<R, OUT, "
                    "K, W> where R is a's result type and W the assigner's window type");
      return add<OUT>("Window Aggregate", detail::AggregateApplyWindowPolicy<T, A, F>{{}, std::move(fn), std::move(agg)});
    }
  }

  // `fn` derives from WindowFunction<T, OUT, K, W>: all records of a window at once
  // (Flink's apply; process() with a ProcessWindowFunction offers more).
  template <class F>
  SingleOutputStreamOperator<typename F::OutputType> apply(F fn) {
    static_assert(std::is_base_of_v<WindowFunction<T, typename F::OutputType, K, W>, F>,
                  "apply(f): f must derive from WindowFunction<T, OUT, K, W> with this stream's record and key types "
                  "and the assigner's window type W");
    return add<typename F::OutputType>("Window Apply", detail::ApplyWindowPolicy<T, F>{{}, std::move(fn)});
  }

  // `fn` derives from ProcessWindowFunction<T, OUT, K, W>: all records of a window at once.
  template <class F>
  SingleOutputStreamOperator<typename F::OutputType> process(F fn) {
    static_assert(std::is_base_of_v<ProcessWindowFunction<T, typename F::OutputType, K, W>, F>,
                  "process(f): f must derive from ProcessWindowFunction<T, OUT, K, W> with this stream's record and "
                  "key types and the assigner's window type W");
    return add<typename F::OutputType>("Window Process", detail::ProcessWindowPolicy<T, F>{{std::move(fn)}, {}});
  }

 private:
  // Windows fired by the assigner's own time take the specialised WindowOperator; a
  // trigger, an evictor or GlobalWindows take the general one.
  static constexpr bool kGeneral = !std::is_same_v<Tr, detail::DefaultTrigger> ||
                                   !std::is_same_v<Ev, detail::NoEvictor> || !std::is_same_v<W, TimeWindow>;

  template <class OUT, class Policy>
  SingleOutputStreamOperator<OUT> add(const char* name, Policy policy) {
    auto& node = graph_->add(detail::Transformation::Kind::kOperator, name, {id_}, detail::TypedStream<OUT>::get());
    if constexpr (kGeneral) {
      auto trigger = resolvedTrigger();
      node.createOperator = [sel = keySelector_, assigner = assigner_, trigger, evictor = evictor_,
                             lateness = allowedLateness_, tag = lateTag_, policy] {
        return std::make_unique<
            detail::TriggerWindowOperator<T, K, KeySelector, Assigner, decltype(trigger), Ev, Policy>>(
            sel, assigner, trigger, evictor, lateness, tag, policy);
      };
    } else {
      node.createOperator = [sel = keySelector_, assigner = assigner_, lateness = allowedLateness_, tag = lateTag_,
                             policy] {
        return std::make_unique<detail::WindowOperator<T, K, KeySelector, Assigner, Policy>>(sel, assigner, lateness,
                                                                                             tag, policy);
      };
    }
    return SingleOutputStreamOperator<OUT>(graph_, node.id);
  }
  auto resolvedTrigger() const {
    if constexpr (std::is_same_v<Tr, detail::DefaultTrigger>) return detail::defaultTriggerOf<Assigner>();
    else return trigger_;
  }

  std::shared_ptr<detail::GraphBuilder> graph_;
  int id_;
  KeySelector keySelector_;
  Assigner assigner_;
  Tr trigger_;
  Ev evictor_;
  int64_t allowedLateness_ = 0;
  int lateTag_ = -1;
};

namespace detail {
inline auto identityField() {
  return [](auto& v) -> auto& { return v; };
}
template <class T, class M>
auto memberField(M T::*field) {
  return [field](auto& v) -> auto& { return v.*field; };
}
template <size_t I>
auto tupleField() {
  return [](auto& v) -> auto& { return std::get<I>(v); };
}
}  // namespace detail

template <class IN1, class K, class KeySelector, class IN2>
class KeyedBroadcastConnectedStream;
template <class IN1, class IN2, class K, class Selector1, class Selector2>
class KeyedConnectedStreams;
template <class IN1, class IN2, class K, class Selector1, class Selector2>
class IntervalJoin;

// Records with equal keys reach the same subtask, in order. K is the key type.
template <class T, class K, class KeySelector>
class KeyedStream : public DataStream<T> {
 public:
  using KeyType = K;

  KeyedStream(std::shared_ptr<detail::GraphBuilder> graph, int id, KeySelector keySelector)
      : DataStream<T>(std::move(graph), id), keySelector_(std::move(keySelector)) {}

  const KeySelector& keySelector() const { return keySelector_; }

  using DataStream<T>::connect;  // with a broadcast or a non-keyed stream
  // Connects this keyed stream with a broadcast stream; process() then takes a
  // KeyedBroadcastProcessFunction<K, T, T2, OUT> (see broadcast_stream.h).
  template <class T2>
  KeyedBroadcastConnectedStream<T, K, KeySelector, T2> connect(const BroadcastStream<T2>& broadcast) const {
    return KeyedBroadcastConnectedStream<T, K, KeySelector, T2>(*this, broadcast);
  }

  // Connects this keyed stream with another of the same key type; process() then takes a
  // KeyedCoProcessFunction<K, T, T2, OUT> (see connected_streams.h).
  template <class T2, class K2, class Selector2>
  KeyedConnectedStreams<T, T2, K, KeySelector, Selector2> connect(const KeyedStream<T2, K2, Selector2>& other) const;

  // Joins with another keyed stream of the same key type by event time: between(lower,
  // upper) then process(ProcessJoinFunction<T, T2, OUT>) (see connected_streams.h).
  template <class T2, class K2, class Selector2>
  IntervalJoin<T, T2, K, KeySelector, Selector2> intervalJoin(const KeyedStream<T2, K2, Selector2>& other) const;

  // Rolling reduce: for every record, emits fn(previous result for its key, record);
  // the first record of a key is emitted as it is. T fn(const T&, const T&), or a
  // RichReduceFunction<T>.
  template <class F>
  SingleOutputStreamOperator<T> reduce(F fn) {
    if constexpr (!detail::ReduceFunctionFor<F, T>) {
      static_assert(detail::kDependentFalse<F>,
                    "reduce(f): f must be callable as T f(const T& accumulated, const T& value), or be a RichReduceFunction<T>");
      return SingleOutputStreamOperator<T>(this->graph_, this->id_);
    } else {
      return this->template addOperator<T>("Keyed Reduce", [sel = keySelector_, fn] {
        return std::make_unique<detail::KeyedReduceOperator<T, K, KeySelector, F>>(sel, fn);
      });
    }
  }

  // Runs a KeyedProcessFunction<K, T, OUT> on every record, with the record's key and
  // event-time timers. A plain ProcessFunction works too, as on any stream.
  template <class OUT = void, class F>
  auto process(F fn) {
    using KeyedOut = typename detail::HasOutputTypeOr<F, void>::type;
    if constexpr (std::is_base_of_v<KeyedProcessFunction<K, T, KeyedOut>, F>) {
      return this->template addOperator<KeyedOut>("Keyed Process", [sel = keySelector_, fn] {
        return std::make_unique<detail::KeyedProcessOperator<T, K, KeySelector, F>>(sel, fn);
      });
    } else {
      return DataStream<T>::template process<OUT>(std::move(fn));
    }
  }

  // Windows of this stream, by `assigner`: Tumbling / Sliding EventTimeWindows and
  // EventTimeSessionWindows, their ProcessingTime counterparts, or GlobalWindows.
  template <class Assigner>
  WindowedStream<T, K, KeySelector, Assigner> window(Assigner assigner) {
    return WindowedStream<T, K, KeySelector, Assigner>(this->graph_, this->id_, keySelector_, std::move(assigner));
  }
  // Windows of `size` records per key, each fired once it is full (Flink's countWindow:
  // GlobalWindows with a purging CountTrigger). A last window not yet full never fires.
  auto countWindow(int64_t size) {
    return window(GlobalWindows::create()).trigger(PurgingTrigger<CountTrigger>::of(CountTrigger::of(size)));
  }
  // Every `slide` records of a key, its last `size` records (GlobalWindows, a
  // CountEvictor and a CountTrigger).
  auto countWindow(int64_t size, int64_t slide) {
    return window(GlobalWindows::create()).evictor(CountEvictor::of(size)).trigger(CountTrigger::of(slide));
  }

  // Rolling sum per key. sum() for an arithmetic T; sum(&Type::field) for a struct field;
  // sum<I>() for element I of a pair or tuple. Other fields come from the key's first record.
  SingleOutputStreamOperator<T> sum() { return aggregate(detail::identityField(), Sum{}, "Sum"); }
  template <class M, class C = T>
  SingleOutputStreamOperator<T> sum(M C::*field) { return aggregate(detail::memberField(field), Sum{}, "Sum"); }
  template <size_t I>
  SingleOutputStreamOperator<T> sum() { return aggregate(detail::tupleField<I>(), Sum{}, "Sum"); }

  // Rolling minimum of a field per key; other fields come from the key's first record.
  SingleOutputStreamOperator<T> min() { return aggregate(detail::identityField(), Min{}, "Min"); }
  template <class M, class C = T>
  SingleOutputStreamOperator<T> min(M C::*field) { return aggregate(detail::memberField(field), Min{}, "Min"); }
  template <size_t I>
  SingleOutputStreamOperator<T> min() { return aggregate(detail::tupleField<I>(), Min{}, "Min"); }

  // Rolling maximum of a field per key; other fields come from the key's first record.
  SingleOutputStreamOperator<T> max() { return aggregate(detail::identityField(), Max{}, "Max"); }
  template <class M, class C = T>
  SingleOutputStreamOperator<T> max(M C::*field) { return aggregate(detail::memberField(field), Max{}, "Max"); }
  template <size_t I>
  SingleOutputStreamOperator<T> max() { return aggregate(detail::tupleField<I>(), Max{}, "Max"); }

  // The whole record with the smallest field per key (the earlier one on ties).
  template <class M, class C = T>
  SingleOutputStreamOperator<T> minBy(M C::*field) {
    return reduce([field](const T& a, const T& b) { return b.*field < a.*field ? b : a; }).name("Min By");
  }
  // The whole record with the largest field per key (the earlier one on ties).
  template <class M, class C = T>
  SingleOutputStreamOperator<T> maxBy(M C::*field) {
    return reduce([field](const T& a, const T& b) { return a.*field < b.*field ? b : a; }).name("Max By");
  }

 private:
  struct Sum {
    template <class V>
    V operator()(const V& a, const V& b) const { return a + b; }
  };
  struct Min {
    template <class V>
    V operator()(const V& a, const V& b) const { return std::min(a, b); }
  };
  struct Max {
    template <class V>
    V operator()(const V& a, const V& b) const { return std::max(a, b); }
  };

  template <class Field, class Op>
  SingleOutputStreamOperator<T> aggregate(Field field, Op op, const char* name) {
    return reduce([field, op](const T& acc, const T& value) {
             T result = acc;
             field(result) = op(field(acc), field(value));
             return result;
           }).name(name);
  }

  KeySelector keySelector_;
};


template <class T>
template <class F>
auto DataStream<T>::keyBy(F keySelector) {
  if constexpr (!detail::KeySelectorFor<F, T>) {
    static_assert(detail::kDependentFalse<F>, "keyBy(f): f must be callable as K f(const T&) with a non-void key type K");
    return *this;
  } else {
    using K = std::decay_t<std::invoke_result_t<F&, const T&>>;
    if constexpr (std::is_same_v<K, std::string_view> || std::is_pointer_v<K>) {
      static_assert(detail::kDependentFalse<F>,
                    "keyBy(f): return a key that owns its data (e.g. std::string), not a view or pointer into the record");
      return *this;
    } else if constexpr (!HashableKey<K>) {
      static_assert(detail::kDependentFalse<F>,
                    "keyBy(f): the key type has no weir::KeyHash; declare it with WEIR_STRUCT or specialize weir::KeyHash<K>");
      return *this;
    } else {
      auto& node = graph_->add(detail::Transformation::Kind::kPartition, "Key By", {id_}, detail::TypedStream<T>::get());
      node.partitioner = detail::PartitionerKind::kKeyGroup;
      node.keyedWriter = [keySelector](const std::vector<detail::ChannelBase*>& channels, int maxParallelism,
                                       detail::TaskMetrics* metrics) -> std::unique_ptr<detail::OutputBase> {
        using Selector = detail::KeyGroupSelector<K, F>;
        return std::make_unique<detail::RecordWriter<T, Selector>>(detail::TypedStream<T>::typed(channels),
                                                                   Selector{keySelector, maxParallelism}, metrics);
      };
      node.keyGroupOf = [keySelector](const void* record, int maxParallelism) mutable {
        return assignToKeyGroup(KeyHash<K>{}(std::invoke(keySelector, *static_cast<const T*>(record))),
                                maxParallelism);
      };
      return KeyedStream<T, K, F>(graph_, node.id, keySelector);
    }
  }
}

}  // namespace weir
