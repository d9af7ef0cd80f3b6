// A sink that keeps every record in memory, for tests: read them after the job ends.
#pragma once

#include <mutex>
#include <vector>

#include "weir/sink.h"

namespace weir {

// Copies share one result list; every parallel instance appends to it.
template <class T>
class CollectSink final : public Sink<T> {
 public:
  CollectSink() : shared_(std::make_shared<Shared>()) {}

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext&) const override {
    return std::make_unique<Writer>(shared_);
  }

  // Everything collected so far, in arrival order per parallel instance.
  std::vector<T> getResults() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->records;
  }

 private:
  struct Shared {
    std::mutex mutex;
    std::vector<T> records;  // guarded by mutex
  };

  struct Writer final : SinkWriter<T> {
    explicit Writer(std::shared_ptr<Shared> s) : shared(std::move(s)) {}
    void write(const T& record) override {
      std::lock_guard lock(shared->mutex);
      shared->records.push_back(record);
    }
    void writeBatch(std::span<T> records) override {
      std::lock_guard lock(shared->mutex);
      for (auto& r : records) shared->records.push_back(std::move(r));
    }
    std::shared_ptr<Shared> shared;
  };

  std::shared_ptr<Shared> shared_;
};

}  // namespace weir
