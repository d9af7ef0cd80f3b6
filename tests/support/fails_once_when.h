// A map whose subtask 2 fails once, on its first record, as soon as `ready()` holds
// (waiting up to two minutes for it): how a test fails one subtask of a batch stage once
// another has got somewhere, such as its end of input. Its re-run passes records on.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>

#include "weir/functions.h"

namespace weir::test {

template <class T>
struct FailsOnceWhen : RichMapFunction<T, T> {
  struct Outcome {
    std::atomic<bool> failed{false};
    std::atomic<bool> wasReady{false};  // when it failed: the test's premise
  };
  std::shared_ptr<Outcome> outcome = std::make_shared<Outcome>();
  std::function<bool()> ready;
  std::function<void()> onFailure;  // runs just before it throws; may be empty

  T map(const T& v) override {
    if (this->getRuntimeContext().getIndexOfThisSubtask() != 1 || outcome->failed.load()) return v;
    // The other subtask waits for nobody: only a slow machine makes this long.
    bool done = false;
    for (int i = 0; i < 6000 && !(done = ready()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    outcome->wasReady.store(done);
    if (onFailure) onFailure();
    outcome->failed.store(true);
    throw std::runtime_error("subtask 2 broke");
  }
};

}  // namespace weir::test
