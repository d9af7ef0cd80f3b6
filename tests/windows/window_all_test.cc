// windowAll (windows of a whole, non-keyed stream) and assignTimestampsAndWatermarks,
// against brute-force references.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "support/event_time_test_events.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using event_time_test::Event;
using event_time_test::punctuated;

// Events from a parallel source (p = 3), disorder up to 29 ms.
std::vector<Event> spread(int64_t n) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i) events.push_back({i % 11, 1000 + i - (i * 7919) % 30, 1 + (i * 31) % 9});
  return events;
}

// Per window: its start, record count and the number of distinct keys.
struct CountAll : ProcessAllWindowFunction<Event, std::tuple<int64_t, int64_t, int64_t>> {
  void process(Context& ctx, std::span<const Event> elements, Collector<std::tuple<int64_t, int64_t, int64_t>>& out) override {
    std::set<int64_t> keys;
    for (auto& e : elements) keys.insert(e.key);
    out.collect({ctx.window().start, static_cast<int64_t>(elements.size()), static_cast<int64_t>(keys.size())});
  }
};

TEST(WindowAll, SeesEveryRecordOfTheWholeStreamInOneInstance) {
  auto events = spread(20000);
  StreamExecutionEnvironment env;
  env.setParallelism(3);
  CollectSink<std::tuple<int64_t, int64_t, int64_t>> described;
  CollectSink<Event> summed;
  auto all = env.fromSource(detail::CollectionSource<Event>(events), punctuated(40), "events")
                 .windowAll(TumblingEventTimeWindows::of(500ms));
  all.process(CountAll{}).sinkTo(described);
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(40), "events again")
      .windowAll(SlidingEventTimeWindows::of(1000ms, 500ms))
      .reduce([](const Event& a, const Event& b) { return Event{0, std::max(a.time, b.time), a.value + b.value}; })
      .sinkTo(summed);
  env.execute();

  std::map<int64_t, std::pair<int64_t, std::set<int64_t>>> expected;  // start -> (count, keys)
  std::map<int64_t, int64_t> expectedSums;                            // sliding start -> sum
  for (auto& e : events) {
    auto& x = expected[e.time - e.time % 500];
    x.first += 1;
    x.second.insert(e.key);
    expectedSums[e.time - e.time % 500] += e.value;
    expectedSums[e.time - e.time % 500 - 500] += e.value;
  }
  std::map<int64_t, std::pair<int64_t, int64_t>> got, want;
  for (auto& [start, count, keys] : described.getResults()) EXPECT_TRUE(got.emplace(start, std::pair{count, keys}).second);
  for (auto& [start, x] : expected) want[start] = {x.first, static_cast<int64_t>(x.second.size())};
  EXPECT_EQ(got, want);  // one result per window: the stream was not split across instances
  int64_t total = 0, expectedTotal = 0;
  for (auto& e : summed.getResults()) total += e.value;
  for (auto& [start, sum] : expectedSums) expectedTotal += sum;
  EXPECT_EQ(summed.getResults().size(), expectedSums.size());
  EXPECT_EQ(total, expectedTotal);
}

TEST(WindowAll, ItsOperatorRunsAtParallelismOneOnly) {
  StreamExecutionEnvironment env;
  auto windowed = env.fromSource(detail::CollectionSource<Event>(spread(10)), punctuated(0), "events")
                      .windowAll(TumblingEventTimeWindows::of(10ms))
                      .reduce([](const Event& a, const Event& b) { return Event{a.key, a.time, a.value + b.value}; });
  EXPECT_THROW(windowed.setParallelism(2), Error);
  EXPECT_NO_THROW(windowed.setParallelism(1));
}

// assignTimestampsAndWatermarks replaces what came from upstream: the source stamps
// records 10,000 s ahead (its watermarks would make every window late); the stream is
// re-stamped with the event's own time and out-of-orderness of 40 ms.
TEST(AssignTimestampsAndWatermarks, ReplacesTheUpstreamTimestampsAndWatermarks) {
  auto events = spread(20000);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::pair<int64_t, int64_t>> sink;  // (key * 1e6 + window end - 1, sum)
  auto ahead = WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
      [](const Event& e) { return e.time + 10'000'000; });
  struct Stamp : ProcessFunction<Event, std::pair<int64_t, int64_t>> {
    void processElement(const Event& e, Context& ctx, Collector<std::pair<int64_t, int64_t>>& out) override {
      out.collect({e.key * 1'000'000 + *ctx.timestamp(), e.value});
    }
  };
  auto sums =
      env.fromSource(detail::CollectionSource<Event>(events), ahead, "events")
          .assignTimestampsAndWatermarks(WatermarkStrategy<Event>::forBoundedOutOfOrderness(40ms).withTimestampAssigner(
              [](const Event& e) { return e.time; }))
          .keyBy([](const Event& e) { return e.key; })
          .window(TumblingEventTimeWindows::of(100ms))
          .reduce([](const Event& a, const Event& b) { return Event{a.key, a.time, a.value + b.value}; })
          .process(Stamp{});
  sums.sinkTo(sink);
  auto job = env.executeAsync("restamped");
  job.wait();
  std::map<int64_t, int64_t> expected, got;  // key * 1e6 + window end - 1 -> sum
  for (auto& e : events) expected[e.key * 1'000'000 + e.time - e.time % 100 + 99] += e.value;
  for (auto& [kw, sum] : sink.getResults()) EXPECT_TRUE(got.emplace(kw, sum).second);
  EXPECT_EQ(got, expected);
  for (auto& v : job.getMetrics().vertices) EXPECT_EQ(v.numLateRecordsDropped, 0u);
}

}  // namespace
}  // namespace weir
