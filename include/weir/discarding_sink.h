// A sink that drops every record (for benchmarks and jobs run for their side effects).
#pragma once

#include "weir/sink.h"

namespace weir {

template <class T>
class DiscardingSink final : public Sink<T> {
 public:
  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext&) const override {
    return std::make_unique<Writer>();
  }

 private:
  struct Writer final : SinkWriter<T> {
    void write(const T&) override {}
    void writeBatch(std::span<T>) override {}
  };
};

}  // namespace weir
