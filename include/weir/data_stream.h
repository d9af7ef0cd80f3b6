// A stream of records of type T and the transformations that make new streams from it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/detail/operators/function_traits.h"
#include "weir/detail/operators/fused_operator.h"
#include "weir/detail/api/graph_builder.h"
#include "weir/detail/operators/source_operator.h"
#include "weir/detail/operators/filter_operator.h"
#include "weir/key_group.h"
#include "weir/detail/operators/flat_map_operator.h"
#include "weir/detail/operators/map_operator.h"
#include "weir/detail/operators/process_operator.h"
#include "weir/detail/operators/timestamps_and_watermarks_operator.h"
#include "weir/detail/sink/committing_sink_operator.h"
#include "weir/detail/sink/sink_operator.h"
#include "weir/output_tag.h"
#include "weir/partitioner.h"
#include "weir/print_sink.h"
#include "weir/sink.h"

namespace weir {

namespace detail {
// setMaxParallelism of operator or sink `what`.
inline void setMaxParallelismOf(Transformation& node, int maxParallelism, const std::string& what) {
  if (maxParallelism < 1 || maxParallelism > kUpperBoundMaxParallelism)
    throw Error(ErrorCode::kInvalidArgument, "max parallelism of " + what + " must be between 1 and " +
                                                 std::to_string(kUpperBoundMaxParallelism) + ", got " +
                                                 std::to_string(maxParallelism));
  if (node.nonParallel && maxParallelism != 1)
    throw Error(ErrorCode::kInvalidArgument,
                what + " is a non-parallel operator: its max parallelism must be 1, got " + std::to_string(maxParallelism));
  node.maxParallelism = maxParallelism;
}
}  // namespace detail

template <class T, class K, class KeySelector>
class KeyedStream;
template <class T>
class SingleOutputStreamOperator;
template <class T, class IN, class... Stages>
class FusibleStream;
template <class T>
class DataStreamSink;
template <class T>
class BroadcastStream;
template <class IN1, class IN2>
class BroadcastConnectedStream;
namespace detail {
struct DefaultTrigger;
struct NoEvictor;
}  // namespace detail
template <class T, class Assigner, class Trigger = detail::DefaultTrigger, class Evictor = detail::NoEvictor>
class AllWindowedStream;
template <class IN1, class IN2, bool kJoin>
class TwoStreams;
template <class IN1, class IN2>
class ConnectedStreams;

// A handle on a stream in a job being built. Copies are cheap and refer to the same stream.
template <class T>
class DataStream {
 public:
  using Type = T;

  DataStream(std::shared_ptr<detail::GraphBuilder> graph, int id) : graph_(std::move(graph)), id_(id) {}

  // Applies `fn` to every record: OUT fn(const T&), or an object with OUT map(const T&)
  // such as a RichMapFunction<T, OUT>.
  template <class F>
  auto map(F fn) {
    if constexpr (!detail::MapFunctionFor<F, T>) {
      static_assert(detail::kDependentFalse<F>,
                    "map(f): f must be callable as OUT f(const T&) with a non-void OUT, or be a RichMapFunction<T, OUT>");
      return *this;
    } else {
      using OUT = detail::MapResult<F, T>;
      auto made = addOperator<OUT>("Map", [fn] { return std::make_unique<detail::StreamMap<T, OUT, F>>(fn); });
      if constexpr (detail::Fusible<F>)
        return FusibleStream<OUT, T, detail::MapStage<T, OUT, F>>(
            made, made.id(), std::make_shared<const std::tuple<detail::MapStage<T, OUT, F>>>(detail::MapStage<T, OUT, F>{std::move(fn)}));
      else
        return made;
    }
  }

  // Keeps the records for which `fn` is true: bool fn(const T&), or a RichFilterFunction<T>.
  template <class F>
  auto filter(F fn) {
    if constexpr (!detail::FilterFunctionFor<F, T>) {
      static_assert(detail::kDependentFalse<F>,
                    "filter(f): f must be callable as bool f(const T&), or be a RichFilterFunction<T>");
      return *this;
    } else {
      auto made = addOperator<T>("Filter", [fn] { return std::make_unique<detail::StreamFilter<T, F>>(fn); });
      if constexpr (detail::Fusible<F>)
        return FusibleStream<T, T, detail::FilterStage<T, F>>(
            made, made.id(), std::make_shared<const std::tuple<detail::FilterStage<T, F>>>(detail::FilterStage<T, F>{std::move(fn)}));
      else
        return made;
    }
  }

  // Emits any number of records per input: flatMap<OUT>(void fn(const T&, Collector<OUT>&))
  // (or fn(T&&, ...) / fn(T, ...) to move from the record), or flatMap(f) with f a
  // RichFlatMapFunction<T, OUT>.
  template <class OUT = void, class F>
  auto flatMap(F fn) {
    if constexpr (std::is_void_v<OUT> && !detail::HasOutputType<F>) {
      static_assert(detail::kDependentFalse<F>,
                    "flatMap(f): name the output type, flatMap<OUT>(f), or derive f from RichFlatMapFunction<T, OUT>");
      return *this;
    } else {
      using O = std::conditional_t<std::is_void_v<OUT>, typename detail::HasOutputTypeOr<F, OUT>::type, OUT>;
      if constexpr (!detail::FlatMapObject<F, T, O> && !detail::FlatMapCallable<F, T, O>) {
        static_assert(detail::kDependentFalse<F>,
                      "flatMap(f): f must be callable as void f(const T&, Collector<OUT>&) (or take T&& or T), or be a "
                      "RichFlatMapFunction<T, OUT>");
        return *this;
      } else {
        return addOperator<O>("Flat Map", [fn] { return std::make_unique<detail::StreamFlatMap<T, O, F>>(fn); });
      }
    }
  }

  // Runs a ProcessFunction<T, OUT> on every record; its Context emits to side outputs.
  // A lambda works too: process<OUT>(void fn(const T&, ProcessFunction<T, OUT>::Context&, Collector<OUT>&)).
  template <class OUT = void, class F>
  auto process(F fn) {
    if constexpr (std::is_void_v<OUT> && !std::is_base_of_v<RichFunction, F>) {
      static_assert(detail::kDependentFalse<F>,
                    "process(f): derive f from ProcessFunction<T, OUT>, or name the output type, process<OUT>(f)");
      return *this;
    } else {
      using O = std::conditional_t<std::is_void_v<OUT>, typename detail::HasOutputTypeOr<F, OUT>::type, OUT>;
      using Context = typename ProcessFunction<T, O>::Context;
      if constexpr (!std::is_invocable_v<F&, const T&, Context&, Collector<O>&> &&
                    !std::is_base_of_v<ProcessFunction<T, O>, F>) {
        static_assert(detail::kDependentFalse<F>,
                      "process(f): f must derive from ProcessFunction<T, OUT> or be callable as "
                      "void f(const T&, ProcessFunction<T, OUT>::Context&, Collector<OUT>&)");
        return *this;
      } else {
        return addOperator<O>("Process", [fn] { return std::make_unique<detail::ProcessOperator<T, O, F>>(fn); });
      }
    }
  }

  // Stamps every record with `strategy`'s timestamp assigner (records keep theirs without
  // one) and emits the strategy's watermarks, which replace the upstream ones (only the
  // final watermark of a bounded input passes). Periodic watermarks are emitted as
  // records pass, at most every autoWatermarkInterval; with withIdleness(d) the stream is
  // marked idle after d of processing time without records (env.setClock's clock).
  SingleOutputStreamOperator<T> assignTimestampsAndWatermarks(WatermarkStrategy<T> strategy) {
    if (strategy.alignment())
      throw Error(ErrorCode::kInvalidArgument,
                  "assignTimestampsAndWatermarks: watermark alignment pauses sources, so it belongs to the strategy "
                  "given to fromSource, not to an operator");
    return addOperator<T>("Timestamps/Watermarks", [strategy] {
      return std::make_unique<detail::TimestampsAndWatermarksOperator<T>>(strategy);
    });
  }

  // Partitions the stream by key: records with equal keys go to the same subtask.
  template <class F>
  auto keyBy(F keySelector);

  // Windows of the whole stream, in one operator instance (see all_windowed_stream.h).
  template <class Assigner>
  AllWindowedStream<T, Assigner> windowAll(Assigner assigner);
  // Windows of `size` records of the whole stream; with `slide`, every `slide` records
  // the last `size` (Flink's countWindowAll).
  auto countWindowAll(int64_t size);
  auto countWindowAll(int64_t size, int64_t slide);

  // Window join with `other`: where(key1).equalTo(key2).window(assigner).apply(f) calls f
  // for every pair with equal keys in the same window (see joined_streams.h).
  template <class T2>
  TwoStreams<T, T2, true> join(const DataStream<T2>& other) const;
  // Window coGroup with `other`: like join, but f gets each key and window's records of
  // both inputs at once, so it can emit unmatched records too.
  template <class T2>
  TwoStreams<T, T2, false> coGroup(const DataStream<T2>& other) const;

  // Merges streams of the same type (Flink's union; `union` is a C++ keyword).
  template <class... Streams>
  DataStream<T> unionWith(const Streams&... others) {
    static_assert((std::is_same_v<typename Streams::Type, T> && ...),
                  "unionWith(s...): every stream must have the same record type as this one");
    std::vector<int> inputs{id_, others.id()...};
    return DataStream<T>(graph_, graph_->add(detail::Transformation::Kind::kUnion, "Union", inputs,
                                             detail::TypedStream<T>::get()).id);
  }

  // Round-robin to every downstream subtask.
  DataStream<T> rebalance() const { return partition(detail::PartitionerKind::kRebalance); }
  // To the downstream subtask with the same index; parallelism must not change.
  DataStream<T> forward() const { return partition(detail::PartitionerKind::kForward); }
  // To a downstream subtask chosen at random.
  DataStream<T> shuffle() const { return partition(detail::PartitionerKind::kShuffle); }
  // Every record to every downstream subtask.
  DataStream<T> broadcast() const { return partition(detail::PartitionerKind::kBroadcast); }
  // Round robin to a local share of the downstream subtasks (Flink's rescale): with 2
  // upstream and 4 downstream subtasks, upstream 0 feeds downstream 0 and 1, upstream 1
  // feeds 2 and 3; with 4 upstream and 2 downstream, downstream 0 reads upstream 0 and 1.
  DataStream<T> rescale() const { return partition(detail::PartitionerKind::kRescale); }
  // Every record to the first downstream subtask (Flink's global).
  DataStream<T> global() const { return partition(detail::PartitionerKind::kGlobal); }
  // To the subtask `partitioner` picks from the record's key: partitioner is a
  // weir::Partitioner<K> (weir/partitioner.h) or any callable int(const K&, int n);
  // a result outside [0, n) fails the job, naming it.
  template <class P, class F>
  DataStream<T> partitionCustom(P partitioner, F keySelector) const {
    static_assert(std::is_invocable_v<F&, const T&>, "partitionCustom(p, f): f must be callable as K f(const T&)");
    using K = std::decay_t<std::invoke_result_t<F&, const T&>>;
    static_assert(requires(P& p, const K& k) { p.partition(k, 1); } || std::is_invocable_r_v<int, P&, const K&, int>,
                  "partitionCustom(p, f): p must be a weir::Partitioner<K> or callable as int p(const K&, int n)");
    auto& node = graph_->add(detail::Transformation::Kind::kPartition, "CUSTOM", {id_}, detail::TypedStream<T>::get());
    node.partitioner = detail::PartitionerKind::kCustom;
    node.keyedWriter = [partitioner, keySelector](const std::vector<detail::ChannelBase*>& channels, int,
                                                  detail::TaskMetrics* metrics) -> std::unique_ptr<detail::OutputBase> {
      using Selector = detail::CustomSelector<P, F>;
      return std::make_unique<detail::RecordWriter<T, Selector>>(detail::TypedStream<T>::typed(channels),
                                                                 Selector{partitioner, keySelector}, metrics);
    };
    return DataStream<T>(graph_, node.id);
  }
  // A broadcast stream whose records update the broadcast states these descriptors
  // declare, for connect(...) (see broadcast_process_function.h).
  template <class... Descriptors>
    requires(sizeof...(Descriptors) > 0)
  BroadcastStream<T> broadcast(const Descriptors&... descriptors) const;
  // Connects this stream with a broadcast stream; process() then takes a
  // BroadcastProcessFunction<T, T2, OUT>.
  template <class T2>
  BroadcastConnectedStream<T, T2> connect(const BroadcastStream<T2>& broadcast) const;
  // Connects this stream with `other` for a CoMapFunction, CoFlatMapFunction or
  // CoProcessFunction over both (see connected_streams.h).
  template <class T2>
  ConnectedStreams<T, T2> connect(const DataStream<T2>& other) const;

  // Writes the stream to `sink` (a Sink<T> subclass, taken by value).
  template <class S>
  DataStreamSink<T> sinkTo(S sink) {
    static_assert(std::is_base_of_v<Sink<T>, S>, "sinkTo(s): s must derive from Sink<T> for the stream's type T");
    auto shared = std::make_shared<const S>(std::move(sink));
    auto& node = graph_->add(detail::Transformation::Kind::kOperator, "Sink", {id_}, detail::TypedStream<T>::get());
    node.isSink = true;
    node.checkSettings = [shared](const CheckpointConfig& checkpoints, const RestartStrategy& restarts,
                                  RuntimeExecutionMode mode) { shared->checkSettings(checkpoints, restarts, mode); };
    if constexpr (requires { typename S::CommittableType; }) {
      using CommT = typename S::CommittableType;
      static_assert(std::is_base_of_v<TwoPhaseCommittingSink<T, CommT>, S>);
      std::shared_ptr<const TwoPhaseCommittingSink<T, CommT>> twoPhase = shared;
      node.createOperator = [twoPhase] { return std::make_unique<detail::CommittingSinkOperator<T, CommT>>(twoPhase); };
    } else {
      std::shared_ptr<const Sink<T>> plain = shared;
      node.createOperator = [plain] { return std::make_unique<detail::SinkOperator<T>>(plain); };
    }
    return DataStreamSink<T>(graph_, node.id);
  }

  // Prints every record to stdout (PrintSink).
  DataStreamSink<T> print() { return sinkTo(PrintSink<T>()).name("Print to Std. Out"); }

  int id() const { return id_; }
  const std::shared_ptr<detail::GraphBuilder>& graph() const { return graph_; }

 protected:
  template <class OUT, class Factory>
  SingleOutputStreamOperator<OUT> addOperator(std::string name, Factory factory) {
    auto& node = graph_->add(detail::Transformation::Kind::kOperator, std::move(name), {id_},
                             detail::TypedStream<OUT>::get());
    node.createOperator = std::move(factory);
    return SingleOutputStreamOperator<OUT>(graph_, node.id);
  }

  DataStream<T> partition(detail::PartitionerKind kind) const {
    auto& node = graph_->add(detail::Transformation::Kind::kPartition, detail::partitionerName(kind), {id_},
                             detail::TypedStream<T>::get());
    node.partitioner = kind;
    return DataStream<T>(graph_, node.id);
  }

  detail::Transformation& node() const { return graph_->node(id_); }

  std::shared_ptr<detail::GraphBuilder> graph_;
  int id_;
};

// A stream produced by one operator, whose name, uid and parallelism can be set.
template <class T>
class SingleOutputStreamOperator : public DataStream<T> {
 public:
  using DataStream<T>::DataStream;

  // The name shown in logs, metrics and errors.
  SingleOutputStreamOperator& name(std::string name) {
    this->node().name = std::move(name);
    return *this;
  }
  // A stable id that matches this operator's state across job versions.
  SingleOutputStreamOperator& uid(std::string uid) {
    this->node().uid = std::move(uid);
    return *this;
  }
  SingleOutputStreamOperator& setParallelism(int parallelism) {
    if (parallelism < 1)
      throw Error(ErrorCode::kInvalidArgument,
                  "parallelism of '" + this->node().name + "' must be at least 1, got " + std::to_string(parallelism));
    if (this->node().nonParallel && parallelism != 1)
      throw Error(ErrorCode::kInvalidArgument, "'" + this->node().name +
                                                   "' is a non-parallel operator: its parallelism must be 1, got " +
                                                   std::to_string(parallelism));
    this->node().parallelism = parallelism;
    return *this;
  }
  // The number of key groups of this operator's keyed state (Flink's per-operator
  // setMaxParallelism): the most subtasks it can ever be rescaled to. Without it, the
  // job's. It must stay the same across restores of its state. An operator chained to
  // another runs with the chain head's, as in Flink; a keyed operator always heads its
  // chain.
  SingleOutputStreamOperator& setMaxParallelism(int maxParallelism) {
    detail::setMaxParallelismOf(this->node(), maxParallelism, "'" + this->node().name + "'");
    return *this;
  }
  // Runs this operator as one instance, whatever the job's parallelism (windowAll does).
  SingleOutputStreamOperator& forceNonParallel() {
    this->node().parallelism = 1;
    this->node().nonParallel = true;
    return *this;
  }
  // Runs this operator in its own chain, neither chained to its input nor its output.
  SingleOutputStreamOperator& disableChaining() {
    this->node().chainingDisabled = true;
    return *this;
  }
  // Starts a new chain here: not chained to its input.
  SingleOutputStreamOperator& startNewChain() {
    this->node().startsNewChain = true;
    return *this;
  }

  // The records this operator emitted to `tag` through its Context.
  template <class X>
  DataStream<X> getSideOutput(const OutputTag<X>& tag) {
    auto& node = this->graph_->add(detail::Transformation::Kind::kSideOutput, "Side output " + tag.getId(),
                                   {this->id_}, detail::TypedStream<X>::get());
    node.sideOutputTag = tag.index();
    return DataStream<X>(this->graph_, node.id);
  }
};

// What map and filter of plain functions (no RichFunction) return: a stream made by one
// or more of them in a row from a stream of IN. The next map or filter on it records
// how to run the whole run as one operator (fused_operator.h); the runtime does so for
// the part of it that stays chained one to one. Everything else is
// SingleOutputStreamOperator's. Each call returns a new type: a variable that must hold
// several of them is a SingleOutputStreamOperator<T> (or a FusibleStream assigned one,
// which then fuses nothing more).
template <class T, class IN, class... Stages>
class FusibleStream : public SingleOutputStreamOperator<T> {
 public:
  FusibleStream(const SingleOutputStreamOperator<T>& stream, int head,
                std::shared_ptr<const std::tuple<Stages...>> stages)
      : SingleOutputStreamOperator<T>(stream), head_(head), tail_(stream.id()), stages_(std::move(stages)) {}

  // Another stream of T: this one now stands for it, and its run ends here.
  FusibleStream& operator=(const SingleOutputStreamOperator<T>& other) {
    SingleOutputStreamOperator<T>::operator=(other);
    head_ = -1;
    stages_.reset();
    return *this;
  }

  template <class F>
  auto map(F fn) {
    return extend(DataStream<T>::map(std::move(fn)));
  }
  template <class F>
  auto filter(F fn) {
    return extend(DataStream<T>::filter(std::move(fn)));
  }

  FusibleStream& name(std::string name) {
    SingleOutputStreamOperator<T>::name(std::move(name));
    return *this;
  }
  FusibleStream& uid(std::string uid) {
    SingleOutputStreamOperator<T>::uid(std::move(uid));
    return *this;
  }
  FusibleStream& setParallelism(int parallelism) {
    SingleOutputStreamOperator<T>::setParallelism(parallelism);
    return *this;
  }
  FusibleStream& setMaxParallelism(int maxParallelism) {
    SingleOutputStreamOperator<T>::setMaxParallelism(maxParallelism);
    return *this;
  }
  FusibleStream& disableChaining() {
    SingleOutputStreamOperator<T>::disableChaining();
    return *this;
  }
  FusibleStream& startNewChain() {
    SingleOutputStreamOperator<T>::startNewChain();
    return *this;
  }

 private:
  template <class, class, class...>
  friend class FusibleStream;

  // `next` is one more plain function on this stream: the run grows by it.
  template <class U, class Stage>
  FusibleStream<U, IN, Stages..., Stage> extend(const FusibleStream<U, T, Stage>& next) {
    // (A stream assigned through a base reference names another node than its run's end.)
    if (!stages_ || this->id() != tail_) return {next, -1, nullptr};
    auto stages = std::make_shared<const std::tuple<Stages..., Stage>>(std::tuple_cat(*stages_, *next.stages_));
    if constexpr (!std::is_same_v<U, bool>) {  // a fused operator's batch cannot be a vector<bool>
      auto& node = this->graph_->node(next.id());
      node.fusedFrom = head_;
      node.createFused = [stages](std::vector<std::string> names, size_t first) {
        return detail::makeFusedOperator<U>(*stages, first, std::move(names));
      };
    }
    return {next, head_, std::move(stages)};
  }
  // Anything else (a rich function) ends the run.
  template <class S>
  S extend(S next) {
    return next;
  }

  int head_;  // the node of the run's first function; -1: the run cannot grow
  int tail_;  // the node of its last function: this stream's own, unless reassigned
  std::shared_ptr<const std::tuple<Stages...>> stages_;
};

// The end of a stream in a sink.
template <class T>
class DataStreamSink {
 public:
  DataStreamSink(std::shared_ptr<detail::GraphBuilder> graph, int id) : graph_(std::move(graph)), id_(id) {}
  DataStreamSink& name(std::string name) {
    graph_->node(id_).name = std::move(name);
    return *this;
  }
  DataStreamSink& uid(std::string uid) {
    graph_->node(id_).uid = std::move(uid);
    return *this;
  }
  DataStreamSink& setParallelism(int parallelism) {
    if (parallelism < 1)
      throw Error(ErrorCode::kInvalidArgument, "parallelism of sink '" + graph_->node(id_).name +
                                                   "' must be at least 1, got " + std::to_string(parallelism));
    graph_->node(id_).parallelism = parallelism;
    return *this;
  }
  DataStreamSink& setMaxParallelism(int maxParallelism) {
    detail::setMaxParallelismOf(graph_->node(id_), maxParallelism, "sink '" + graph_->node(id_).name + "'");
    return *this;
  }
  DataStreamSink& disableChaining() {
    graph_->node(id_).chainingDisabled = true;
    return *this;
  }

 private:
  std::shared_ptr<detail::GraphBuilder> graph_;
  int id_;
};

namespace detail {
// Adds the two-input operator of a connected pair.
template <class OUT, class Factory>
SingleOutputStreamOperator<OUT> addTwoInputOperator(const std::shared_ptr<GraphBuilder>& graph, int first,
                                                    int second, std::string name, Factory factory) {
  auto& node = graph->add(Transformation::Kind::kOperator, std::move(name), {first, second}, TypedStream<OUT>::get());
  node.twoInput = true;
  node.createOperator = std::move(factory);
  return SingleOutputStreamOperator<OUT>(graph, node.id);
}
}  // namespace detail

}  // namespace weir

#include "weir/keyed_stream.h"
