// Functions over a stream connected with a broadcast stream (Flink's
// BroadcastProcessFunction and KeyedBroadcastProcessFunction): every parallel instance
// sees every broadcast element and keeps what it learns in broadcast state, which the
// other input reads but cannot change.
//
//   BroadcastStream<Rule> rules = ruleStream.broadcast(ruleDescriptor);
//   events.keyBy(...).connect(rules).process(MyKeyedBroadcastFunction{});
//
// The two inputs are not ordered with respect to each other.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "weir/broadcast_state.h"
#include "weir/detail/state/operator_state.h"
#include "weir/serializer.h"
#include "weir/clock.h"
#include "weir/functions.h"
#include "weir/keyed_process_function.h"
#include "weir/state_descriptor.h"

namespace weir {

namespace detail {

// The broadcast states of one operator instance, by name: only those whose descriptors
// were given to broadcast(...).
class BroadcastStates {
 public:
  // `checkpointProblem`: why these states cannot be checkpointed (a type without a
  // Serializer), or empty.
  BroadcastStates(std::vector<std::string> declared, std::string checkpointProblem = "")
      : declared_(std::move(declared)), checkpointProblem_(std::move(checkpointProblem)) {}

  template <class K, class V>
  BroadcastState<K, V>& get(const MapStateDescriptor<K, V>& d) {
    const std::string& name = d.getName();
    auto it = states_.find(name);
    if (it == states_.end()) {
      if (std::find(declared_.begin(), declared_.end(), name) == declared_.end()) {
        throw Error(ErrorCode::kState, "broadcast state '" + name +
                                           "' was not declared: pass its descriptor to broadcast(...)");
      }
      auto state = std::make_shared<BroadcastState<K, V>>();
      Entry entry{typeid(BroadcastState<K, V>), state, nullptr};
      if constexpr (Serializable<K> && Serializable<V>) {
        entry.schema = detail::indexedSchema<K, V>("pair");  // each entry: its key, then its value
        if (auto r = restored_.find(name); r != restored_.end()) {
          std::vector<std::string> migrated;
          for (const auto& bytes : detail::elementsAs(r->second, entry.schema, "broadcast state '" + name + "'", migrated)) {
            DataInput in(bytes);
            K key = Serializer<K>::deserialize(in);
            state->put(std::move(key), Serializer<V>::deserialize(in));
          }
          restored_.erase(r);
        }
        entry.serialize = [s = state.get()] {
          std::vector<std::string> out;
          DataOutput bytes;
          for (const auto& [k, v] : s->immutableEntries()) {
            bytes.clear();
            Serializer<K>::serialize(k, bytes);
            Serializer<V>::serialize(v, bytes);
            out.push_back(bytes.data());
          }
          return out;
        };
      }
      it = states_.emplace(name, std::move(entry)).first;
    }
    if (it->second.type != typeid(BroadcastState<K, V>)) {
      throw Error(ErrorCode::kState, "broadcast state '" + name + "' is asked for with other key or value types");
    }
    return *static_cast<BroadcastState<K, V>*>(it->second.state.get());
  }

  const std::string& checkpointProblem() const { return checkpointProblem_; }

  // Every state as operator state "_broadcast/<name>" (each entry's key and value
  // bytes). Every instance holds the same copy, so each writes it and a restore takes
  // the union; restored states not used again are passed on.
  std::vector<OperatorStateSnapshot> snapshot() const {
    std::vector<OperatorStateSnapshot> out;
    for (const auto& [name, entry] : states_)
      if (entry.serialize) out.push_back({kPrefix + name, OperatorStateMode::kUnion, entry.serialize(), entry.schema});
    for (const auto& [name, restored] : restored_) {
      out.push_back(restored);
      out.back().name = kPrefix + name;
    }
    return out;
  }
  void restore(const std::vector<OperatorStateSnapshot>& lists) {
    for (const auto& l : lists) {
      if (l.name.rfind(kPrefix, 0) != 0) continue;
      auto& restored = restored_[l.name.substr(kPrefix.size())];
      restored.mode = OperatorStateMode::kUnion;
      if (l.schema) restored.schema = l.schema;
      auto& elements = restored.elements;
      elements.insert(elements.end(), l.elements.begin(), l.elements.end());
      std::sort(elements.begin(), elements.end());  // the copies of all old instances: once
      elements.erase(std::unique(elements.begin(), elements.end()), elements.end());
    }
  }

 private:
  inline static const std::string kPrefix = "_broadcast/";
  struct Entry {
    std::type_index type;
    std::shared_ptr<void> state;
    std::function<std::vector<std::string>()> serialize;  // null: its types have no Serializer
    std::optional<TypeSchema> schema = {};                 // of an entry: pair<K, V>
  };
  std::vector<std::string> declared_;
  std::string checkpointProblem_;
  std::map<std::string, Entry> states_;
  std::map<std::string, detail::OperatorStateSnapshot> restored_;  // by name, until asked for
};

// What both sides' contexts share: the element's timestamp, time, side outputs and
// (read-only) broadcast state.
class BroadcastContextBase {
 public:
  BroadcastContextBase(BroadcastStates* states, SideOutputs* sideOutputs, const int64_t* watermark, const Clock* clock)
      : states_(states), sideOutputs_(sideOutputs), watermark_(watermark), clock_(clock) {}
  // The element's event timestamp (ms), or nullopt when its stream carries none.
  std::optional<int64_t> timestamp() const { return timestamp_; }
  int64_t currentWatermark() const { return *watermark_; }
  int64_t currentProcessingTime() const { return clock_->currentTimeMillis(); }
  template <class X>
  void output(const OutputTag<X>& tag, X value) {
    sideOutputs_->collect(tag, std::move(value));
  }
  template <class K, class V>
  const ReadOnlyBroadcastState<K, V>& getBroadcastState(const MapStateDescriptor<K, V>& d) const {
    return states_->get(d);
  }
  void setTimestamp(std::optional<int64_t> timestamp) { timestamp_ = timestamp; }

 protected:
  BroadcastStates* states_;

 private:
  SideOutputs* sideOutputs_;
  const int64_t* watermark_;
  const Clock* clock_;
  std::optional<int64_t> timestamp_;
};

// What the keyed broadcast operator offers its contexts besides timers: the keys that
// hold entries in a state, and switching the current key to one of them.
template <class K>
class KeyedStateVisitor {
 public:
  virtual ~KeyedStateVisitor() = default;
  virtual std::vector<K> keysWithState(const std::string& stateName) = 0;
  virtual void setVisitedKey(const K& key) = 0;
  virtual RuntimeContext& runtimeContext() = 0;
};

template <class T>
ValueState<T>& stateOf(RuntimeContext& c, const ValueStateDescriptor<T>& d) {
  return c.getState(d);
}
template <class T>
ListState<T>& stateOf(RuntimeContext& c, const ListStateDescriptor<T>& d) {
  return c.getListState(d);
}
template <class UK, class UV>
MapState<UK, UV>& stateOf(RuntimeContext& c, const MapStateDescriptor<UK, UV>& d) {
  return c.getMapState(d);
}
template <class T>
ReducingState<T>& stateOf(RuntimeContext& c, const ReducingStateDescriptor<T>& d) {
  return c.getReducingState(d);
}
template <class IN, class ACC, class OUT>
AggregatingState<IN, OUT>& stateOf(RuntimeContext& c, const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
  return c.getAggregatingState(d);
}

}  // namespace detail

// Processes a non-keyed stream (IN1) connected with a broadcast stream (IN2).
template <class IN1, class IN2, class OUT>
class BroadcastProcessFunction : public RichFunction {
 public:
  using OutputType = OUT;

  // The non-broadcast side: broadcast state is read-only.
  class ReadOnlyContext : public detail::BroadcastContextBase {
   public:
    using BroadcastContextBase::BroadcastContextBase;
  };
  // The broadcast side: broadcast state can be written.
  class Context : public ReadOnlyContext {
   public:
    using ReadOnlyContext::ReadOnlyContext;
    template <class K, class V>
    BroadcastState<K, V>& getBroadcastState(const MapStateDescriptor<K, V>& d) {
      return this->states_->get(d);
    }
  };

  virtual void processElement(const IN1& value, ReadOnlyContext& ctx, Collector<OUT>& out) = 0;
  virtual void processBroadcastElement(const IN2& value, Context& ctx, Collector<OUT>& out) = 0;
};

// Processes a keyed stream (IN1, key KS) connected with a broadcast stream (IN2). The
// keyed side has the current key, keyed state and timers; the broadcast side
// can reach every key's state with applyToKeyedState.
template <class KS, class IN1, class IN2, class OUT>
class KeyedBroadcastProcessFunction : public RichFunction {
 public:
  using KeyType = KS;
  using OutputType = OUT;
  using TimerService = typename KeyedProcessFunction<KS, IN1, OUT>::TimerService;

  class ReadOnlyContext : public detail::BroadcastContextBase {
   public:
    ReadOnlyContext(detail::BroadcastStates* states, detail::SideOutputs* sideOutputs, const int64_t* watermark,
                    const Clock* clock, detail::KeyedTimers<KS>* timers)
        : BroadcastContextBase(states, sideOutputs, watermark, clock), timers_(timers), timerService_(timers) {}
    const KS& getCurrentKey() const { return timers_->currentKey(); }
    TimerService& timerService() { return timerService_; }

   protected:
    detail::KeyedTimers<KS>* timers_;

   private:
    TimerService timerService_;
  };

  class Context : public detail::BroadcastContextBase {
   public:
    Context(detail::BroadcastStates* states, detail::SideOutputs* sideOutputs, const int64_t* watermark,
            const Clock* clock, detail::KeyedStateVisitor<KS>* keyed)
        : BroadcastContextBase(states, sideOutputs, watermark, clock), keyed_(keyed) {}
    template <class K, class V>
    BroadcastState<K, V>& getBroadcastState(const MapStateDescriptor<K, V>& d) {
      return this->states_->get(d);
    }
    // Calls fn(key, state) for every key that has an entry in the state of `descriptor`
    // on this subtask, with that key current.
    template <class Descriptor, class F>
    void applyToKeyedState(const Descriptor& descriptor, F fn) {
      for (const KS& key : keyed_->keysWithState(descriptor.getName())) {
        keyed_->setVisitedKey(key);
        fn(key, detail::stateOf(keyed_->runtimeContext(), descriptor));
      }
    }

   private:
    detail::KeyedStateVisitor<KS>* keyed_;
  };

  class OnTimerContext : public ReadOnlyContext {
   public:
    using ReadOnlyContext::ReadOnlyContext;
    TimeDomain timeDomain() const { return this->timers_->timerDomain(); }
  };

  virtual void processElement(const IN1& value, ReadOnlyContext& ctx, Collector<OUT>& out) = 0;
  virtual void processBroadcastElement(const IN2& value, Context& ctx, Collector<OUT>& out) = 0;
  // A timer of the current key fired; what an event-time timer emits carries `timestamp`,
  // what a processing-time timer emits carries none.
  virtual void onTimer(int64_t timestamp, OnTimerContext& ctx, Collector<OUT>& out) {}
};

}  // namespace weir
