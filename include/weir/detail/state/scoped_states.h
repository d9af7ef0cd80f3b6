// Per-window keyed states looked up by name once and set to the window of each call:
// what triggers (getPartitionedState) and window functions (windowState) share.
#pragma once

#include <string>
#include <typeindex>
#include <utility>

#include <absl/container/flat_hash_map.h>

#include "weir/detail/state/keyed_state_backend.h"
#include "weir/error.h"
#include "weir/state_descriptor.h"

namespace weir::detail {

template <class W>
class ScopedStates {
 public:
  // `what` names the states in errors ("trigger state", "window state").
  explicit ScopedStates(const char* what) : what_(what) {}

  // A state looked up before: it as State, and as per-window state.
  struct Entry {
    std::type_index type;
    void* state;
    NamespacedState<W>* windowed;
  };

  // The state of `d` in `store`, made by `make(store)` on first use.
  template <class State, class Make>
  Entry& lookup(const StateDescriptor& d, KeyedStateBackendBase& store, Make make) {
    auto it = states_.find(d.getName());
    if (it == states_.end() || it->second.type != std::type_index(typeid(State))) {
      if (d.getName().starts_with('_'))
        throw Error(ErrorCode::kState, std::string(what_) + " '" + d.getName() + "': names starting with '_' are weir's own");
      State& state = make(store);  // throws when the name has another kind or type
      auto* windowed = dynamic_cast<NamespacedState<W>*>(&state);
      if (windowed == nullptr)
        throw Error(ErrorCode::kState, std::string(what_) + " '" + d.getName() +
                                           "': the name is already used by a state that is not per window");
      it = states_.insert_or_assign(d.getName(), Entry{typeid(State), &state, windowed}).first;
    }
    return it->second;
  }
  // The same, scoped to `window`.
  template <class State, class Make>
  State& scoped(const StateDescriptor& d, KeyedStateBackendBase& store, const W& window, Make make) {
    Entry& entry = lookup<State>(d, store, make);
    entry.windowed->setCurrentNamespace(window);
    return *static_cast<State*>(entry.state);
  }
  // The states looked up so far belong to a store that is going away.
  void forget() { states_.clear(); }

 private:
  const char* what_;
  absl::flat_hash_map<std::string, Entry> states_;
};

}  // namespace weir::detail
