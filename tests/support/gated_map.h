// A map that passes records on only once its gate is open: until then its input, and
// everything upstream, is back-pressured. Tests open the gate when they have looked.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "weir/functions.h"

namespace weir::test {

template <class T>
struct GatedMap : RichMapFunction<T, T> {
  explicit GatedMap(std::shared_ptr<std::atomic<bool>> open) : open_(std::move(open)) {}
  T map(const T& v) override {
    while (!open_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return v;
  }
  std::shared_ptr<std::atomic<bool>> open_;
};

// Opens a gate when it goes out of scope: declared after the job, it lets a held job go
// on (and be cancelled) when a test ends early.
struct OpenOnExit {
  std::shared_ptr<std::atomic<bool>> gate;
  ~OpenOnExit() { gate->store(true); }
};

}  // namespace weir::test
