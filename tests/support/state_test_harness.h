// Keyed state outside a job, as a keyed operator drives it: for the state tests.
#pragma once

#include <memory>
#include <string>

#include "weir/detail/state/operator_snapshot.h"
#include "weir/runtime_context.h"

namespace weir::test {

// A store of `backendName` ("heap" or "rocksdb") with key type K, and a runtime context
// that hands out its states.
template <class K>
class StateHarness {
 public:
  explicit StateHarness(const std::string& backendName,
                        std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>())
      : StateHarness(stateBackendFromName(backendName), std::move(clock)) {}
  explicit StateHarness(std::shared_ptr<StateBackend> backend,
                        std::shared_ptr<const Clock> clock = std::make_shared<SystemClock>())
      : backend_(std::move(backend)),
        store_(std::make_unique<detail::KeyedStateBackend<K>>(*backend_, 128, "test", std::move(clock))) {
    context_.setKeyedStateBackend(store_.get());
  }
  RuntimeContext& context() { return context_; }
  detail::KeyedStateBackend<K>& store() { return *store_; }
  void setKey(const K& key) {
    key_ = key;
    store_->setCurrentKey(key_);
  }
  void destroy() { store_.reset(); }

  // What a canonical checkpoint of the store holds, as a restore reads it back: every
  // state's entries and the schemas recorded for them.
  detail::RestoredOperatorState checkpoint() {
    detail::OperatorSnapshot snapshot;
    snapshot.savepoint = SavepointFormatType::CANONICAL;
    store_->snapshot(1, snapshot);
    detail::RestoredOperatorState restored;
    restored.keyGroups = KeyGroupRange{0, 127};
    for (auto& [name, state] : snapshot.keyed)
      state->readEntries(restored.keyGroups, [&](const detail::StateEntry& e) {
        restored.keyed[name].push_back({e.keyGroup, std::string(e.key), std::string(e.value)});
      });
    restored.keyedSchemas = snapshot.keyedSchemas;
    return restored;
  }
  // Replaces the store by a new one restored from `restored` (no state registered yet).
  void restore(detail::RestoredOperatorState& restored) {
    store_.reset();
    store_ = std::make_unique<detail::KeyedStateBackend<K>>(*backend_, 128, "test");
    context_.setKeyedStateBackend(store_.get());
    store_->setRestored(restored);
  }

 private:
  std::shared_ptr<StateBackend> backend_;
  RuntimeContext context_{"op", 0, 1, 128};
  std::unique_ptr<detail::KeyedStateBackend<K>> store_;
  K key_{};
};

}  // namespace weir::test
