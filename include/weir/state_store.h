// The keyed state a ProcessWindowFunction's context hands out (Flink's KeyedStateStore):
// ctx.windowState() is scoped to the current key and the window that fires, so each
// window has its own; ctx.globalState() to the current key alone, shared by all its
// windows. Both live on the job's state backend and in its checkpoints.
#pragma once

#include <utility>

#include "weir/detail/state/scoped_states.h"
#include "weir/detail/state/state_factory.h"
#include "weir/state.h"
#include "weir/state_descriptor.h"

namespace weir {

template <class W>
class StateStore {
 public:
  template <class T>
  ValueState<T>& getState(const ValueStateDescriptor<T>& d) {
    return get<ValueState<T>>(d, [&]<class N>(detail::KeyedStateBackendBase& s) -> auto& { return detail::valueState<N>(s, d); });
  }
  template <class T>
  ListState<T>& getListState(const ListStateDescriptor<T>& d) {
    return get<ListState<T>>(d, [&]<class N>(detail::KeyedStateBackendBase& s) -> auto& { return detail::listState<N>(s, d); });
  }
  template <class UK, class UV>
  MapState<UK, UV>& getMapState(const MapStateDescriptor<UK, UV>& d) {
    return get<MapState<UK, UV>>(d,
                                 [&]<class N>(detail::KeyedStateBackendBase& s) -> auto& { return detail::mapState<N>(s, d); });
  }
  template <class T>
  ReducingState<T>& getReducingState(const ReducingStateDescriptor<T>& d) {
    return get<ReducingState<T>>(
        d, [&]<class N>(detail::KeyedStateBackendBase& s) -> auto& { return detail::reducingState<N>(s, d); });
  }
  template <class IN, class ACC, class OUT>
  AggregatingState<IN, OUT>& getAggregatingState(const AggregatingStateDescriptor<IN, ACC, OUT>& d) {
    return get<AggregatingState<IN, OUT>>(
        d, [&]<class N>(detail::KeyedStateBackendBase& s) -> auto& { return detail::aggregatingState<N>(s, d); });
  }

  // weir's: the window operator points the store at its keyed state (the current key is
  // the store's), and at a window, or at none for global state.
  explicit StateStore(bool perWindow) : perWindow_(perWindow) {}
  StateStore& bind(detail::KeyedStateBackendBase& store, const W* window) {
    if (store_ != &store) states_.forget();
    store_ = &store;
    window_ = window;
    return *this;
  }

 private:
  template <class State, class Make>
  State& get(const StateDescriptor& d, Make make) {
    if (perWindow_) {
      return states_.template scoped<State>(d, *store_, *window_, [&](detail::KeyedStateBackendBase& s) -> auto& {
        return make.template operator()<W>(s);
      });
    }
    if (d.getName().starts_with('_'))
      throw Error(ErrorCode::kState, "global state '" + d.getName() + "': names starting with '_' are weir's own");
    State& state = make.template operator()<detail::VoidNamespace>(*store_);
    if (dynamic_cast<detail::NamespacedState<W>*>(&state) != nullptr)
      throw Error(ErrorCode::kState,
                  "global state '" + d.getName() + "': the name is already used by per-window state (windowState())");
    return state;
  }

  bool perWindow_;
  detail::KeyedStateBackendBase* store_ = nullptr;
  const W* window_ = nullptr;
  detail::ScopedStates<W> states_{"window state"};
};

namespace detail {
class SideOutputs;

// What a window operator gives its window function's context: the state stores of the
// key and window that fire (made on first use).
template <class W>
class WindowFunctionState {
 public:
  virtual ~WindowFunctionState() = default;
  virtual StateStore<W>& windowState(const W& window) = 0;
  virtual StateStore<W>& globalState() = 0;
  // Where ctx.output(tag, value) goes; none outside an operator.
  virtual SideOutputs* sideOutputs() { return nullptr; }
};
}  // namespace detail

}  // namespace weir
