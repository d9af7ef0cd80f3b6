// Event-time windows against brute-force references computed here. Small cases with
// exact expected outputs (late data, allowed lateness) are golden files: tests/golden/.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "support/event_time_test_events.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

using event_time_test::Event;
using event_time_test::punctuated;

using Result = std::tuple<int64_t, int64_t, int64_t>;  // key, window end - 1, sum

struct WithTime : ProcessFunction<Event, std::pair<Event, int64_t>> {
  void processElement(const Event& e, Context& ctx, Collector<std::pair<Event, int64_t>>& out) override {
    out.collect({e, ctx.timestamp().value_or(-1)});
  }
};

// Events with disorder bounded by 30 ms over keys 0..4, values 1..9.
std::vector<Event> disordered(int64_t n) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i) events.push_back({i % 5, 1000 + i - (i * 7919) % 30, 1 + (i * 31) % 9});
  return events;
}

TEST(Windows, TumblingSumsEqualABruteForceAndEmptyWindowsEmitNothing) {
  auto events = disordered(20000);
  // Leave a hole: no record between 5000 and 5999, so windows there must not exist.
  events.erase(std::remove_if(events.begin(), events.end(), [](const Event& e) { return e.time >= 5000 && e.time < 6000; }),
               events.end());
  StreamExecutionEnvironment env2;
  env2.setParallelism(2);
  CollectSink<std::pair<Event, int64_t>> sink2;
  env2.fromSource(detail::CollectionSource<Event>(events), punctuated(30), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingEventTimeWindows::of(100ms))
      .reduce([](const Event& a, const Event& b) { return Event{a.key, std::max(a.time, b.time), a.value + b.value}; })
      .process(WithTime{})
      .sinkTo(sink2);
  env2.execute();

  std::map<std::pair<int64_t, int64_t>, int64_t> expected;  // (key, window start) -> sum
  for (auto& e : events) expected[{e.key, e.time - e.time % 100}] += e.value;
  std::map<std::pair<int64_t, int64_t>, int64_t> got;
  for (auto& [e, ts] : sink2.getResults()) {
    int64_t start = ts + 1 - 100;
    EXPECT_EQ(ts % 100, 99);  // a result carries the window's end − 1
    EXPECT_TRUE(got.emplace(std::pair{e.key, start}, e.value).second) << "window fired twice";
  }
  EXPECT_EQ(got, expected);
  for (auto& [kw, sum] : got) EXPECT_FALSE(kw.second >= 5000 && kw.second < 6000);
}

TEST(Windows, WindowsWithoutTimestampsFailWithAClearMessage) {
  StreamExecutionEnvironment env;
  env.fromCollection(disordered(10))
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingEventTimeWindows::of(100ms))
      .reduce([](const Event& a, const Event& b) { return Event{a.key, a.time, a.value + b.value}; })
      .sinkTo(DiscardingSink<Event>());
  try {
    env.execute();
    FAIL();
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("withTimestampAssigner"), std::string::npos) << e.what();
  }
}

// Sum and count into an average: IN, ACC and OUT all differ.
struct Average : AggregateFunction<Event, std::pair<int64_t, int64_t>, double> {
  std::pair<int64_t, int64_t> createAccumulator() override { return {0, 0}; }
  std::pair<int64_t, int64_t> add(const Event& e, std::pair<int64_t, int64_t> acc) override {
    return {acc.first + e.value, acc.second + 1};
  }
  double getResult(const std::pair<int64_t, int64_t>& acc) override {
    return static_cast<double>(acc.first) / static_cast<double>(acc.second);
  }
  std::pair<int64_t, int64_t> merge(std::pair<int64_t, int64_t> a, const std::pair<int64_t, int64_t>& b) override {
    return {a.first + b.first, a.second + b.second};
  }
};

struct KeyedAverage : ProcessFunction<double, std::pair<double, int64_t>> {
  void processElement(const double& v, Context& ctx, Collector<std::pair<double, int64_t>>& out) override {
    out.collect({v, ctx.timestamp().value_or(-1)});
  }
};

TEST(Windows, SlidingAveragesEqualABruteForce) {
  auto events = disordered(6000);
  for (auto& e : events) e.key = 0;  // one key: results per window are unambiguous
  StreamExecutionEnvironment env;
  CollectSink<std::pair<double, int64_t>> sink;
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(30), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(SlidingEventTimeWindows::of(100ms, 25ms, 5ms))
      .aggregate(Average{})
      .process(KeyedAverage{})
      .sinkTo(sink);
  env.execute();
  std::map<int64_t, std::pair<int64_t, int64_t>> sums;  // window end - 1 -> (sum, count)
  for (auto& e : events) {
    for (int64_t start = (e.time - 5) - ((e.time - 5) % 25) + 5; start > e.time - 100; start -= 25) {
      auto& s = sums[start + 99];
      s.first += e.value;
      s.second += 1;
    }
  }
  std::map<int64_t, double> got;
  for (auto& [avg, ts] : sink.getResults()) EXPECT_TRUE(got.emplace(ts, avg).second) << ts;
  ASSERT_EQ(got.size(), sums.size());
  for (auto& [ts, s] : sums) EXPECT_DOUBLE_EQ(got[ts], static_cast<double>(s.first) / static_cast<double>(s.second)) << ts;
}

// Emits two records per window: its record count and its largest value.
struct Describe : ProcessWindowFunction<Event, std::tuple<int64_t, int64_t, std::string, int64_t>, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const Event> elements,
               Collector<std::tuple<int64_t, int64_t, std::string, int64_t>>& out) override {
    int64_t largest = 0;
    for (auto& e : elements) largest = std::max(largest, e.value);
    out.collect({key, ctx.window().start, "count", static_cast<int64_t>(elements.size())});
    out.collect({key, ctx.window().start, "max", largest});
    if (ctx.currentWatermark() < ctx.window().maxTimestamp()) throw std::logic_error("fired before its end");
  }
};

// Sliding windows whose size is not a multiple of the slide (panes of 10 ms), by every
// function kind: each window's result equals a brute force over its records.
TEST(Windows, SlidingWindowsOfEveryFunctionKindEqualABruteForce) {
  auto events = disordered(12000);
  auto windowsOf = [](int64_t t) {  // size 100, slide 30, offset 7
    std::vector<int64_t> starts;
    int64_t last = t - (((t - 7) % 30) + 30) % 30;
    for (int64_t s = last; s > t - 100; s -= 30) starts.push_back(s);
    return starts;
  };
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> expected;  // (key, end - 1) -> (sum, count)
  for (auto& e : events)
    for (int64_t s : windowsOf(e.time)) {
      auto& x = expected[{e.key, s + 99}];
      x.first += e.value;
      x.second += 1;
    }
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::pair<Event, int64_t>> reduced;
  CollectSink<std::tuple<int64_t, int64_t, std::string, int64_t>> described;
  auto windowed = env.fromSource(detail::CollectionSource<Event>(events), punctuated(30), "events")
                      .keyBy([](const Event& e) { return e.key; })
                      .window(SlidingEventTimeWindows::of(100ms, 30ms, 7ms));
  windowed.reduce([](const Event& a, const Event& b) { return Event{a.key, a.time, a.value + b.value}; })
      .process(WithTime{})
      .sinkTo(reduced);
  windowed.process(Describe{}).sinkTo(described);
  env.execute();
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> got;
  for (auto& [e, ts] : reduced.getResults()) {
    auto& sum = got[std::pair{e.key, ts}].first;
    EXPECT_EQ(sum, 0) << "window fired twice";
    sum = e.value;
  }
  for (auto& [key, start, what, v] : described.getResults())
    if (what == "count") got[std::pair{key, start + 99}].second = v;
  EXPECT_EQ(got, expected);
}

TEST(Windows, ProcessWindowFunctionSeesEveryRecordOfItsWindow) {
  auto events = disordered(8000);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<std::tuple<int64_t, int64_t, std::string, int64_t>> sink;
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(30), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingEventTimeWindows::of(250ms))
      .process(Describe{})
      .sinkTo(sink);
  env.execute();
  std::map<std::tuple<int64_t, int64_t, std::string>, int64_t> expected, got;
  for (auto& e : events) {
    int64_t start = e.time - e.time % 250;
    expected[{e.key, start, "count"}] += 1;
    auto& m = expected[{e.key, start, "max"}];
    m = std::max(m, e.value);
  }
  for (auto& [k, start, what, v] : sink.getResults()) EXPECT_TRUE(got.emplace(std::tuple{k, start, what}, v).second);
  EXPECT_EQ(got, expected);
}

TEST(Windows, BadWindowsAreClearErrorsWhenTheJobIsBuilt) {
  EXPECT_THROW(TumblingEventTimeWindows::of(0ms), Error);
  EXPECT_THROW(TumblingEventTimeWindows::of(-5ms), Error);
  EXPECT_THROW(TumblingEventTimeWindows::of(10ms, 10ms), Error);
  EXPECT_THROW(SlidingEventTimeWindows::of(10ms, 0ms), Error);
  EXPECT_THROW(SlidingEventTimeWindows::of(10ms, 20ms), Error);
  StreamExecutionEnvironment env;
  auto keyed = env.fromElements(Event{}).keyBy([](const Event& e) { return e.key; });
  auto windowed = keyed.window(TumblingEventTimeWindows::of(10ms));
  EXPECT_THROW(windowed.allowedLateness(-1ms), Error);
}

TEST(Windows, TimestampsAtTheEndsOfTheRangeDoNotOverflow) {
  std::vector<TimeWindow> got;
  auto collect = [&](const TimeWindow& w) { got.push_back(w); };
  TumblingEventTimeWindows::of(1000ms).assignWindows(INT64_MAX, collect);
  TumblingEventTimeWindows::of(1000ms).assignWindows(INT64_MIN, collect);
  SlidingEventTimeWindows::of(1000ms, 300ms).assignWindows(INT64_MAX - 1, collect);
  SlidingEventTimeWindows::of(1000ms, 300ms).assignWindows(INT64_MIN + 1, collect);
  ASSERT_GE(got.size(), 4u);
  for (auto& w : got) {
    EXPECT_LE(w.start, w.end);
    EXPECT_GE(w.maxTimestamp(), w.start);
  }
  EXPECT_EQ(got[0].end, INT64_MAX);  // clamped, not wrapped
  EXPECT_EQ(got[1].start, INT64_MIN);
}

}  // namespace
}  // namespace weir
