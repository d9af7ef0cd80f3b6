// Makes a keyed state of the store's backend on first use: a heap state, or a RocksDB
// state when the store has a RocksDB instance (which needs serializable types).
#pragma once

#include <memory>
#include <string>
#include <typeinfo>
#include <utility>

#include "weir/detail/heap_state.h"
#include "weir/detail/rocksdb_state.h"

namespace weir::detail {

template <class State, class Impl>
std::pair<std::unique_ptr<KeyedStateBase>, State*> ownState(std::unique_ptr<Impl> impl) {
  State* state = impl.get();
  return {std::move(impl), state};
}

[[noreturn]] void throwNotSerializableForRocksDB(const std::string& state, const std::type_info& type);

// The state of `descriptor` in `store`, made as Heap<Kind> or RocksDB<Kind> if new.
// `Serializable` says whether the types RocksDB must serialize have a Serializer;
// `Missing` names one that has none.
template <class State, class HeapImpl, class RocksImpl, bool kSerializable, class Missing, class Descriptor>
State& keyedState(KeyedStateStore& store, const char* kind, const Descriptor& descriptor) {
  return store.getOrCreate<State>(descriptor.getName(), kind, typeid(State), [&] {
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

}  // namespace weir::detail
