// A source a test feeds while its job runs, and waiting for what the job did: for tests
// that checkpoint, cancel and restore a job at chosen points of its input.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "weir/weir.h"

namespace weir::test {

// A source the test feeds while the job runs (one reader): push() hands it records,
// close() ends its input. It takes part in checkpoints without a position: a restored
// job's source starts with what its test pushes.
template <class T>
class GatedSource final : public Source<T> {
 public:
  GatedSource() : gate_(std::make_shared<Gate>()) {}
  void push(const std::vector<T>& events) const {
    std::lock_guard lock(gate_->mutex);
    gate_->queue.insert(gate_->queue.end(), events.begin(), events.end());
  }
  void close() const {
    std::lock_guard lock(gate_->mutex);
    gate_->closed = true;
  }

  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  int maxParallelism() const override { return 1; }
  bool supportsCheckpointing() const override { return true; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override { return nullptr; }
  std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext&) const override {
    return std::make_unique<Reader>(gate_);
  }

 private:
  struct Gate {
    std::mutex mutex;
    std::deque<T> queue;
    bool closed = false;
  };
  struct Reader final : SourceReader<T> {
    explicit Reader(std::shared_ptr<Gate> g) : gate(std::move(g)) {}
    InputStatus pollNext(std::vector<T>& out, size_t maxRecords) override {
      std::lock_guard lock(gate->mutex);
      while (!gate->queue.empty() && maxRecords-- > 0) {
        out.push_back(gate->queue.front());
        gate->queue.pop_front();
      }
      if (!gate->queue.empty()) return InputStatus::MORE_AVAILABLE;
      return gate->closed ? InputStatus::END_OF_INPUT : InputStatus::NOTHING_AVAILABLE;
    }
    std::shared_ptr<Gate> gate;
  };
  std::shared_ptr<Gate> gate_;
};

// Waits (polling, without depending on how long anything takes) until `done()`; throws
// after 30 s, which only a bug takes.
template <class Done>
void waitUntil(Done done, const char* what) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error(std::string("timed out waiting for ") + what);
    std::this_thread::yield();
  }
}

// How many records the vertex whose name contains `name` has taken from its inputs.
inline uint64_t recordsIn(const JobClient& client, const std::string& name) {
  for (const auto& v : client.getMetrics().vertices)
    if (v.name.find(name) != std::string::npos) return v.numRecordsIn;
  return 0;
}

}  // namespace weir::test
