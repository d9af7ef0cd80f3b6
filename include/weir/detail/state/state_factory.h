// Makes a keyed state of the store's backend on first use: a heap state, or a RocksDB
// state when the store has a RocksDB instance (which needs serializable types); with a
// TTL, a TTL decorator over one of those.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>

#include "weir/detail/state/heap_state.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/detail/state/ttl_state.h"

namespace weir::detail {

template <class State, class Impl>
std::pair<std::unique_ptr<KeyedStateBase>, State*> ownState(std::unique_ptr<Impl> impl) {
  State* state = impl.get();
  return {std::move(impl), state};
}

[[noreturn]] void throwNotSerializableForRocksDB(const std::string& state, const std::type_info& type);
// Window state (a namespace besides the key) has no TTL.
[[noreturn]] void throwTtlOnWindowState(const std::string& state);

// What a state stores besides its key, for its schema: the namespace, then (`fields`)
// the value, a list's element, or a map's user key and value; none when a type has no
// Serializer (a heap state of a type that cannot be checkpointed).
template <class N, class... Fields>
std::optional<TypeSchema> stateLayout(std::initializer_list<const char*> names) {
  if constexpr (Serializable<N> && (Serializable<Fields> && ...)) {
    TypeSchema layout{"", 1, {{"namespace", Serializer<N>::schema()}}};
    auto name = names.begin();
    (layout.fields.push_back({*name++, Serializer<Fields>::schema()}), ...);
    return layout;
  } else {
    static_cast<void>(names);
    return std::nullopt;
  }
}

// The state of `descriptor` in `store`, made as HeapImpl or RocksImpl if new.
// `kSerializable` says whether the types RocksDB must serialize have a Serializer;
// `Missing` names one that has none.
template <class State, class HeapImpl, class RocksImpl, bool kSerializable, class Missing, class Descriptor>
State& keyedState(KeyedStateBackendBase& store, const char* kind, const std::optional<TypeSchema>& layout,
                  const Descriptor& descriptor) {
  return store.getOrCreate<State>(descriptor.getName(), kind, typeid(State), layout, [&] {
    if (store.rocksdb() != nullptr) {
      if constexpr (kSerializable) {
        return ownState<State>(std::make_unique<RocksImpl>(store, descriptor));
      } else {
        throwNotSerializableForRocksDB(descriptor.getName(), typeid(Missing));
      }
    }
    return ownState<State>(std::make_unique<HeapImpl>(store, descriptor));
  });
}

// A state with a TTL: `Wrapper` over a HeapInner or RocksInner (typed InnerState) made
// from `inner`, the descriptor of its TtlValue entries. On the heap, `sweep(heap,
// policy, n)` is the incremental cleanup.
template <class State, class Wrapper, class InnerState, class HeapInner, class RocksInner, bool kSerializable,
          class Missing, class Descriptor, class InnerDescriptor, class Sweep>
State& ttlState(KeyedStateBackendBase& store, const char* kind, const std::optional<TypeSchema>& layout,
               const Descriptor& d, InnerDescriptor inner, Sweep sweep) {
  const StateTtlConfig& config = *d.getTtlConfig();
  inner.enableTimeToLive(config);
  return store.getOrCreate<State>(d.getName(), kind, typeid(State), layout, [&] {
    std::unique_ptr<KeyedStateBase> owner;
    InnerState* typed = nullptr;
    HeapInner* heap = nullptr;
    if (store.rocksdb() != nullptr) {
      if constexpr (kSerializable) {
        auto impl = std::make_unique<RocksInner>(store, inner);
        typed = impl.get();
        owner = std::move(impl);
      } else {
        throwNotSerializableForRocksDB(d.getName(), typeid(Missing));
      }
    } else {
      auto impl = std::make_unique<HeapInner>(store, inner);
      heap = impl.get();
      typed = impl.get();
      owner = std::move(impl);
    }
    auto wrapper = std::make_unique<Wrapper>(std::move(owner), *typed, d, store.clock());
    if (heap != nullptr && config.getIncrementalCleanupSize() > 0) {
      wrapper->sweeper = [heap, policy = TtlPolicy(config, store.clock()), sweep](size_t n) {
        sweep(*heap, policy, n);
      };
      if (config.runCleanupForEveryRecord()) {
        store.addRecordCleanup([w = wrapper.get(), n = static_cast<size_t>(config.getIncrementalCleanupSize())] {
          w->sweeper(n);
        });
      }
    }
    return ownState<State>(std::move(wrapper));
  });
}

// Incremental cleanup of a heap state whose entries are single TTL values.
inline constexpr auto kSweepValues = [](auto& heap, const TtlPolicy& policy, size_t n) {
  int64_t now = policy.now();
  heap.sweep(n, [&](auto& v) { return policy.expired(v.lastAccess, now); });
};

template <class N, class T>
ValueState<T>& valueState(KeyedStateBackendBase& store, const ValueStateDescriptor<T>& d) {
  if (!d.getTtlConfig()) {
    return keyedState<ValueState<T>, HeapValueState<N, T>, RocksDBValueState<N, T>, Serializable<T>, T>(
        store, "ValueState", stateLayout<N, T>({"value"}), d);
  }
  if constexpr (!std::is_same_v<N, VoidNamespace>) {
    throwTtlOnWindowState(d.getName());
  } else {
    using V = TtlValue<T>;
    return ttlState<ValueState<T>, TtlValueState<T>, ValueState<V>, HeapValueState<N, V>, RocksDBValueState<N, V>,
                    Serializable<T>, T>(store, "ValueState", stateLayout<N, V>({"value"}), d,
                                        ValueStateDescriptor<V>(d.getName()), kSweepValues);
  }
}

template <class N, class T>
ListState<T>& listState(KeyedStateBackendBase& store, const ListStateDescriptor<T>& d) {
  if (!d.getTtlConfig()) {
    return keyedState<ListState<T>, HeapListState<N, T>, RocksDBListState<N, T>, Serializable<T>, T>(
        store, "ListState", stateLayout<N, T>({"element"}), d);
  }
  if constexpr (!std::is_same_v<N, VoidNamespace>) {
    throwTtlOnWindowState(d.getName());
  } else {
    using V = TtlValue<T>;
    auto sweep = [](auto& heap, const TtlPolicy& policy, size_t n) {
      int64_t now = policy.now();
      heap.sweep(n, [&](std::vector<V>& list) {
        std::erase_if(list, [&](const V& e) { return policy.expired(e.lastAccess, now); });
        return list.empty();
      });
    };
    return ttlState<ListState<T>, TtlListState<T>, ListState<V>, HeapListState<N, V>, RocksDBListState<N, V>,
                    Serializable<T>, T>(store, "ListState", stateLayout<N, V>({"element"}), d,
                                        ListStateDescriptor<V>(d.getName()), sweep);
  }
}

template <class N, class UK, class UV>
MapState<UK, UV>& mapState(KeyedStateBackendBase& store, const MapStateDescriptor<UK, UV>& d) {
  constexpr bool kSer = Serializable<UK> && Serializable<UV>;
  using Missing = std::conditional_t<Serializable<UK>, UV, UK>;
  if (!d.getTtlConfig()) {
    return keyedState<MapState<UK, UV>, HeapMapState<N, UK, UV>, RocksDBMapState<N, UK, UV>, kSer, Missing>(
        store, "MapState", stateLayout<N, UK, UV>({"userKey", "value"}), d);
  }
  if constexpr (!std::is_same_v<N, VoidNamespace>) {
    throwTtlOnWindowState(d.getName());
  } else {
    using V = TtlValue<UV>;
    auto sweep = [](auto& heap, const TtlPolicy& policy, size_t n) {
      int64_t now = policy.now();
      heap.sweepEntries(n, [&](const V& v) { return policy.expired(v.lastAccess, now); });
    };
    return ttlState<MapState<UK, UV>, TtlMapState<UK, UV>, MapState<UK, V>, HeapMapState<N, UK, V>,
                    RocksDBMapState<N, UK, V>, kSer, Missing>(store, "MapState", stateLayout<N, UK, V>({"userKey", "value"}),
                                                              d, MapStateDescriptor<UK, V>(d.getName()), sweep);
  }
}

template <class N, class T>
ReducingState<T>& reducingState(KeyedStateBackendBase& store, const ReducingStateDescriptor<T>& d) {
  if (!d.getTtlConfig()) {
    return keyedState<ReducingState<T>, HeapReducingState<N, T>, RocksDBReducingState<N, T>, Serializable<T>, T>(
        store, "ReducingState", stateLayout<N, T>({"value"}), d);
  }
  if constexpr (!std::is_same_v<N, VoidNamespace>) {
    throwTtlOnWindowState(d.getName());
  } else {
    using V = TtlValue<T>;
    return ttlState<ReducingState<T>, TtlReducingState<T>, ValueState<V>, HeapValueState<N, V>, RocksDBValueState<N, V>,
                    Serializable<T>, T>(store, "ReducingState", stateLayout<N, V>({"value"}), d,
                                        ValueStateDescriptor<V>(d.getName()), kSweepValues);
  }
}

template <class N, class IN, class ACC, class OUT>
AggregatingState<IN, OUT>& aggregatingState(KeyedStateBackendBase& store, const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
  if (!d.getTtlConfig()) {
    return keyedState<AggregatingState<IN, OUT>, HeapAggregatingState<N, IN, ACC, OUT>,
                      RocksDBAggregatingState<N, IN, ACC, OUT>, Serializable<ACC>, ACC>(
        store, "AggregatingState", stateLayout<N, ACC>({"accumulator"}), d);
  }
  if constexpr (!std::is_same_v<N, VoidNamespace>) {
    throwTtlOnWindowState(d.getName());
  } else {
    using V = TtlValue<ACC>;
    return ttlState<AggregatingState<IN, OUT>, TtlAggregatingState<IN, ACC, OUT>, ValueState<V>, HeapValueState<N, V>,
                    RocksDBValueState<N, V>, Serializable<ACC>, ACC>(store, "AggregatingState",
                                                                     stateLayout<N, V>({"accumulator"}), d,
                                                                     ValueStateDescriptor<V>(d.getName()), kSweepValues);
  }
}

}  // namespace weir::detail
