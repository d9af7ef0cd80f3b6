// Keyed state outside a job, as a keyed operator drives it: for the state tests.
#pragma once

#include <memory>
#include <string>

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

 private:
  std::shared_ptr<StateBackend> backend_;
  RuntimeContext context_{"op", 0, 1, 128};
  std::unique_ptr<detail::KeyedStateBackend<K>> store_;
  K key_{};
};

}  // namespace weir::test
