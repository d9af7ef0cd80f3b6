// A sink that writes about 20,000 records per second, so that everything upstream of it
// is back-pressured: what the REST and Web UI tests watch.
#pragma once

#include <chrono>
#include <thread>
#include <utility>

#include "weir/weir.h"

namespace weir::testing {

struct SlowSink : Sink<std::pair<int64_t, int64_t>> {
  struct Writer : SinkWriter<std::pair<int64_t, int64_t>> {
    void write(const std::pair<int64_t, int64_t>&) override {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  };
  std::unique_ptr<SinkWriter<std::pair<int64_t, int64_t>>> createWriter(RuntimeContext&) const override {
    return std::make_unique<Writer>();
  }
};

// generator -> keyBy -> sum ("count") -> slow sink as its own vertex, parallelism 2.
inline JobClient startSlowJob(StreamExecutionEnvironment& env, const std::string& name = "slow job") {
  env.setParallelism(2);
  env.fromSource(DataGeneratorSource([](int64_t i) { return std::pair<int64_t, int64_t>{i % 100, 1}; }, kUnboundedCount),
                 WatermarkStrategy<std::pair<int64_t, int64_t>>::noWatermarks(), "numbers")
      .uid("numbers-source")
      .keyBy([](const std::pair<int64_t, int64_t>& p) { return p.first; })
      .sum<1>()
      .name("count")
      .sinkTo(SlowSink{})
      .name("slow sink")
      .disableChaining();
  return env.executeAsync(name);
}

}  // namespace weir::testing
