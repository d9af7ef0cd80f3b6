// Streams connected with a broadcast stream: stream.broadcast(descriptors...) makes a
// BroadcastStream; other.connect(broadcastStream) (or keyedStream.connect(...)) pairs
// them, and process(...) runs a (Keyed)BroadcastProcessFunction on the pair.
#pragma once

#include <string>
#include <vector>

#include "weir/broadcast_process_function.h"
#include "weir/data_stream.h"
#include "weir/detail/operators/broadcast_process_operator.h"
#include "weir/keyed_stream.h"

namespace weir {

// Every record goes to every parallel instance of the operator it is connected to.
template <class T>
class BroadcastStream {
 public:
  using Type = T;
  BroadcastStream(std::shared_ptr<detail::GraphBuilder> graph, int id, std::vector<std::string> declared,
                  std::string checkpointProblem)
      : graph_(std::move(graph)), id_(id), declared_(std::move(declared)),
        checkpointProblem_(std::move(checkpointProblem)) {}
  int id() const { return id_; }
  const std::shared_ptr<detail::GraphBuilder>& graph() const { return graph_; }
  // The names of the broadcast states given to broadcast(...).
  const std::vector<std::string>& declaredStates() const { return declared_; }
  // Why its states cannot be checkpointed, or empty.
  const std::string& checkpointProblem() const { return checkpointProblem_; }

 private:
  std::shared_ptr<detail::GraphBuilder> graph_;
  int id_;
  std::vector<std::string> declared_;
  std::string checkpointProblem_;
};

// A non-keyed stream (IN1) connected with a broadcast stream (IN2).
template <class IN1, class IN2>
class BroadcastConnectedStream {
 public:
  BroadcastConnectedStream(DataStream<IN1> first, BroadcastStream<IN2> second)
      : first_(std::move(first)), second_(std::move(second)) {}

  // Runs `fn`, a BroadcastProcessFunction<IN1, IN2, OUT>, on both inputs.
  template <class F>
  auto process(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<BroadcastProcessFunction<IN1, IN2, OUT>, F>,
                  "connect(broadcast).process(f): f must derive from BroadcastProcessFunction<IN1, IN2, OUT>");
    return detail::addTwoInputOperator<OUT>(
        first_.graph(), first_.id(), second_.id(), "Co-Process-Broadcast",
        [fn, declared = second_.declaredStates(), problem = second_.checkpointProblem()] {
          return std::make_unique<detail::BroadcastProcessOperator<IN1, IN2, F>>(fn, declared, problem);
        });
  }

 private:
  DataStream<IN1> first_;
  BroadcastStream<IN2> second_;
};

// A keyed stream (IN1, key K) connected with a broadcast stream (IN2).
template <class IN1, class K, class KeySelector, class IN2>
class KeyedBroadcastConnectedStream {
 public:
  KeyedBroadcastConnectedStream(KeyedStream<IN1, K, KeySelector> first, BroadcastStream<IN2> second)
      : first_(std::move(first)), second_(std::move(second)) {}

  // Runs `fn`, a KeyedBroadcastProcessFunction<K, IN1, IN2, OUT>, on both inputs.
  template <class F>
  auto process(F fn) {
    using OUT = typename detail::HasOutputTypeOr<F, void>::type;
    static_assert(std::is_base_of_v<KeyedBroadcastProcessFunction<K, IN1, IN2, OUT>, F>,
                  "keyedStream.connect(broadcast).process(f): f must derive from "
                  "KeyedBroadcastProcessFunction<K, IN1, IN2, OUT>");
    return detail::addTwoInputOperator<OUT>(
        first_.graph(), first_.id(), second_.id(), "Co-Process-Broadcast-Keyed",
        [fn, sel = first_.keySelector(), declared = second_.declaredStates(), problem = second_.checkpointProblem()] {
          return std::make_unique<detail::KeyedBroadcastProcessOperator<IN1, IN2, K, KeySelector, F>>(
              sel, fn, declared, problem);
        });
  }

 private:
  KeyedStream<IN1, K, KeySelector> first_;
  BroadcastStream<IN2> second_;
};

template <class T>
template <class... Descriptors>
  requires(sizeof...(Descriptors) > 0)
BroadcastStream<T> DataStream<T>::broadcast(const Descriptors&... descriptors) const {
  static_assert((std::is_base_of_v<StateDescriptor, Descriptors> && ...),
                "broadcast(d...): every argument must be a MapStateDescriptor<K, V>");
  std::string problem;
  auto check = [&problem](const auto& d) {
    using D = std::decay_t<decltype(d)>;
    if constexpr (!Serializable<typename D::KeyType> || !Serializable<typename D::ValueType>) {
      if (problem.empty())
        problem = "broadcast state '" + d.getName() + "' holds a key or value type without a weir::Serializer";
    }
  };
  (check(descriptors), ...);
  return BroadcastStream<T>(graph_, partition(detail::PartitionerKind::kBroadcast).id(),
                            std::vector<std::string>{descriptors.getName()...}, std::move(problem));
}

template <class T>
template <class T2>
BroadcastConnectedStream<T, T2> DataStream<T>::connect(const BroadcastStream<T2>& broadcast) const {
  return BroadcastConnectedStream<T, T2>(*this, broadcast);
}

}  // namespace weir
