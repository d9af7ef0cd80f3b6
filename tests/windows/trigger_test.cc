// Triggers, evictors and GlobalWindows against brute forces that replay each key's
// records in arrival order. Small cases with exact expected outputs are golden files:
// tests/golden/window_global_*.
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

// Keys 0..4 in a fixed order, values 1..9; times rise with disorder bounded by 30 ms.
std::vector<Event> events(int64_t n) {
  std::vector<Event> out;
  for (int64_t i = 0; i < n; ++i) out.push_back({(i * 7) % 5, 1000 + i - (i * 7919) % 30, 1 + (i * 31) % 9});
  return out;
}

// Each key's records in the order the stream has them.
std::map<int64_t, std::vector<Event>> byKey(const std::vector<Event>& in) {
  std::map<int64_t, std::vector<Event>> out;
  for (const Event& e : in) out[e.key].push_back(e);
  return out;
}

using KeySum = std::pair<int64_t, int64_t>;

std::vector<KeySum> sorted(std::vector<KeySum> v) {
  std::sort(v.begin(), v.end());
  return v;
}

Event sumValues(const Event& a, const Event& b) { return {a.key, std::max(a.time, b.time), a.value + b.value}; }

// countWindow(size) or countWindow(size, slide) over `in`, summing values, at `parallelism`.
std::vector<KeySum> runCountWindows(const std::vector<Event>& in, int parallelism, int64_t size, int64_t slide,
                                    const std::string& backend = "heap") {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setStateBackend(stateBackendFromName(backend));
  CollectSink<KeySum> sink;
  auto keyed = env.fromCollection(in).setParallelism(1).keyBy([](const Event& e) { return e.key; });
  auto toPair = [](const Event& e) { return KeySum{e.key, e.value}; };
  if (slide == 0) keyed.countWindow(size).reduce(sumValues).map(toPair).sinkTo(sink);
  else keyed.countWindow(size, slide).reduce(sumValues).map(toPair).sinkTo(sink);
  env.execute();
  return sorted(sink.getResults());
}

TEST(CountWindows, EachRunOfNRecordsOfAKeyFiresOnceAndAnIncompleteLastOneNever) {
  auto in = events(10003);
  std::vector<KeySum> expected;
  for (const auto& [key, records] : byKey(in)) {
    for (size_t end = 7; end <= records.size(); end += 7) {
      int64_t sum = 0;
      for (size_t i = end - 7; i < end; ++i) sum += records[i].value;
      expected.push_back({key, sum});
    }
  }
  expected = sorted(expected);
  ASSERT_EQ(expected.size(), 10003 / 5 / 7 * 5);
  for (int p : {1, 3}) EXPECT_EQ(runCountWindows(in, p, 7, 0), expected) << "parallelism " << p;
  EXPECT_EQ(runCountWindows(in, 2, 7, 0, "rocksdb"), expected);
}

TEST(CountWindows, SlidingCountWindowsFireEverySlideWithTheLastSizeRecords) {
  auto in = events(6000);
  std::vector<KeySum> expected;
  for (const auto& [key, records] : byKey(in)) {
    for (size_t seen = 3; seen <= records.size(); seen += 3) {
      int64_t sum = 0;
      for (size_t i = seen > 10 ? seen - 10 : 0; i < seen; ++i) sum += records[i].value;
      expected.push_back({key, sum});
    }
  }
  expected = sorted(expected);
  for (int p : {1, 2}) EXPECT_EQ(runCountWindows(in, p, 10, 3), expected) << "parallelism " << p;
  EXPECT_EQ(runCountWindows(in, 2, 10, 3, "rocksdb"), expected);
}

TEST(CountWindows, CountWindowsOfTheWholeStreamTakeItsRecordsInArrivalOrder) {
  auto in = events(3005);
  std::vector<int64_t> tumbling, sliding;
  for (size_t end = 10; end <= in.size(); end += 10) {
    int64_t sum = 0;
    for (size_t i = end - 10; i < end; ++i) sum += in[i].value;
    tumbling.push_back(sum);
  }
  for (size_t seen = 4; seen <= in.size(); seen += 4) {
    int64_t sum = 0;
    for (size_t i = seen > 10 ? seen - 10 : 0; i < seen; ++i) sum += in[i].value;
    sliding.push_back(sum);
  }
  StreamExecutionEnvironment env;  // parallelism 1: the sinks keep the windows' order
  CollectSink<int64_t> tumblingSink, slidingSink;
  auto values = env.fromCollection(in).map([](const Event& e) { return e.value; });
  auto add = [](int64_t a, int64_t b) { return a + b; };
  values.countWindowAll(10).reduce(add).sinkTo(tumblingSink);
  values.countWindowAll(10, 4).reduce(add).sinkTo(slidingSink);
  env.execute();
  EXPECT_EQ(tumblingSink.getResults(), tumbling);
  EXPECT_EQ(slidingSink.getResults(), sliding);
}

TEST(CountWindows, ABadCountIsAClearErrorWhenTheJobIsBuilt) {
  StreamExecutionEnvironment env;
  auto keyed = env.fromElements<int64_t>(1, 2, 3).keyBy([](int64_t v) { return v; });
  EXPECT_THROW(keyed.countWindow(0), Error);
  EXPECT_THROW(keyed.countWindow(5, -1), Error);
  EXPECT_THROW(CountEvictor::of(0), Error);
  EXPECT_THROW(TimeEvictor::of(-1ms), Error);
  EXPECT_THROW(ContinuousEventTimeTrigger::of(0ms), Error);
}

// A user trigger: a record with value 0 fires the window early, -1 purges it, -2 fires
// and purges; the window fires again when the watermark passes its end.
struct MarkerTrigger : Trigger<Event, TimeWindow> {
  TriggerResult onElement(const Event& e, int64_t, const TimeWindow& w, TriggerContext<TimeWindow>& ctx) override {
    ctx.registerEventTimeTimer(w.maxTimestamp());
    ValueState<int64_t>& seen = ctx.getPartitionedState(ValueStateDescriptor<int64_t>("seen", 0));
    seen.update(*seen.value() + 1);
    if (e.value == 0) return TriggerResult::FIRE;
    if (e.value == -1) return TriggerResult::PURGE;
    if (e.value == -2) return TriggerResult::FIRE_AND_PURGE;
    return TriggerResult::CONTINUE;
  }
  TriggerResult onEventTime(int64_t time, const TimeWindow& w, TriggerContext<TimeWindow>&) override {
    return time == w.maxTimestamp() ? TriggerResult::FIRE : TriggerResult::CONTINUE;
  }
  TriggerResult onProcessingTime(int64_t, const TimeWindow&, TriggerContext<TimeWindow>&) override {
    return TriggerResult::CONTINUE;
  }
  void clear(const TimeWindow& w, TriggerContext<TimeWindow>& ctx) override {
    ctx.deleteEventTimeTimer(w.maxTimestamp());
    ctx.getPartitionedState(ValueStateDescriptor<int64_t>("seen", 0)).clear();
  }
};

// (key, window end − 1, sum of values, records in it)
using Firing = std::tuple<int64_t, int64_t, int64_t, int64_t>;

struct SumAndCount : ProcessWindowFunction<Event, Firing, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const Event> in, Collector<Firing>& out) override {
    int64_t sum = 0;
    for (const Event& e : in) sum += e.value;
    out.collect({key, ctx.window().maxTimestamp(), sum, static_cast<int64_t>(in.size())});
  }
};

std::vector<Event> withMarkers(int64_t n) {
  auto in = events(n);
  for (size_t i = 0; i < in.size(); ++i) {
    if (i % 23 == 0) in[i].value = 0;
    else if (i % 41 == 0) in[i].value = -1;
    else if (i % 59 == 0) in[i].value = -2;
  }
  return in;
}

TEST(Triggers, AUserTriggerFiresAndPurgesAsItsResultsSay) {
  auto in = withMarkers(8000);
  // Brute force: per key and 100 ms window, the records in arrival order (none is late:
  // the watermark trails by the disorder bound).
  std::vector<Firing> expected;
  std::map<std::pair<int64_t, int64_t>, std::vector<Event>> windows;
  for (const Event& e : in) {
    int64_t end = e.time - e.time % 100 + 99;
    auto& contents = windows[{e.key, end}];
    contents.push_back(e);
    auto fire = [&] {
      int64_t sum = 0;
      for (const Event& c : contents) sum += c.value;
      expected.push_back({e.key, end, sum, static_cast<int64_t>(contents.size())});
    };
    if (e.value == 0 || e.value == -2) fire();
    if (e.value == -1 || e.value == -2) contents.clear();
  }
  for (const auto& [kw, contents] : windows) {
    if (contents.empty()) continue;  // purged: the final firing has nothing to give
    int64_t sum = 0;
    for (const Event& c : contents) sum += c.value;
    expected.push_back({kw.first, kw.second, sum, static_cast<int64_t>(contents.size())});
  }
  std::sort(expected.begin(), expected.end());
  for (const auto& [p, backend] : std::vector<std::pair<int, std::string>>{{1, "heap"}, {2, "heap"}, {2, "rocksdb"}}) {
    StreamExecutionEnvironment env;
    env.setParallelism(p).setStateBackend(stateBackendFromName(backend));
    CollectSink<Firing> sink;
    env.fromSource(detail::CollectionSource<Event>(in), punctuated(30), "events")
        .setParallelism(1)
        .keyBy([](const Event& e) { return e.key; })
        .window(TumblingEventTimeWindows::of(100ms))
        .trigger(MarkerTrigger{})
        .process(SumAndCount{})
        .sinkTo(sink);
    env.execute();
    auto got = sink.getResults();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected) << "parallelism " << p << ", " << backend;
  }
}

TEST(Triggers, ContinuousEventTimeTriggerGivesEarlyResultsThatGrowToTheFinalOne) {
  auto in = events(5000);
  std::map<std::pair<int64_t, int64_t>, int64_t> finals;  // (key, window end − 1) -> sum
  std::map<std::pair<int64_t, int64_t>, int64_t> firstTime;  // of the window's first record to arrive
  for (const Event& e : in) {
    std::pair<int64_t, int64_t> kw{e.key, e.time - e.time % 1000 + 999};
    finals[kw] += e.value;
    firstTime.try_emplace(kw, e.time);
  }
  StreamExecutionEnvironment env;
  CollectSink<Firing> sink;
  env.fromSource(detail::CollectionSource<Event>(in), punctuated(30), "events")
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingEventTimeWindows::of(1000ms))
      .trigger(ContinuousEventTimeTrigger::of(250ms))
      .process(SumAndCount{})
      .sinkTo(sink);
  env.execute();
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> firings;  // in emission order
  for (const auto& [key, end, sum, count] : sink.getResults()) firings[{key, end}].push_back(sum);
  ASSERT_EQ(firings.size(), finals.size());
  for (const auto& [kw, sums] : firings) {
    // An early firing at every 250 ms boundary after the first record, up to the
    // window's end, then the final one.
    size_t early = 0;
    for (int64_t at = firstTime[kw] - firstTime[kw] % 250 + 250; at < kw.second; at += 250) ++early;
    EXPECT_EQ(sums.size(), early + 1) << "key " << kw.first << ", window " << kw.second;
    EXPECT_TRUE(std::is_sorted(sums.begin(), sums.end()));
    EXPECT_EQ(sums.back(), finals[kw]);
  }
}

// Evictors: what the window function sees, brute-forced per (key, window).
std::vector<Firing> runEvicting(const std::vector<Event>& in, auto evictor, int p) {
  StreamExecutionEnvironment env;
  env.setParallelism(p);
  CollectSink<Firing> sink;
  env.fromSource(detail::CollectionSource<Event>(in), punctuated(30), "events")
      .setParallelism(1)
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingEventTimeWindows::of(100ms))
      .evictor(evictor)
      .process(SumAndCount{})
      .sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  return got;
}

TEST(Evictors, CountAndTimeEvictorsLeaveTheWindowFunctionWhatTheyKeep) {
  auto in = events(6000);
  std::map<std::pair<int64_t, int64_t>, std::vector<Event>> windows;
  for (const Event& e : in) windows[{e.key, e.time - e.time % 100 + 99}].push_back(e);
  auto firing = [](const std::pair<int64_t, int64_t>& kw, const std::vector<Event>& kept) {
    int64_t sum = 0;
    for (const Event& e : kept) sum += e.value;
    return Firing{kw.first, kw.second, sum, static_cast<int64_t>(kept.size())};
  };
  std::vector<Firing> lastThree, lastTwentyMs;
  for (const auto& [kw, records] : windows) {
    std::vector<Event> tail(records.end() - std::min<size_t>(3, records.size()), records.end());
    lastThree.push_back(firing(kw, tail));
    int64_t newest = 0;
    for (const Event& e : records) newest = std::max(newest, e.time);
    std::vector<Event> recent;
    for (const Event& e : records)
      if (e.time > newest - 20) recent.push_back(e);
    lastTwentyMs.push_back(firing(kw, recent));
  }
  std::sort(lastThree.begin(), lastThree.end());
  std::sort(lastTwentyMs.begin(), lastTwentyMs.end());
  EXPECT_EQ(runEvicting(in, CountEvictor::of(3), 1), lastThree);
  EXPECT_EQ(runEvicting(in, CountEvictor::of(3), 2), lastThree);
  EXPECT_EQ(runEvicting(in, TimeEvictor::of(20ms), 2), lastTwentyMs);
}

// Evicting after the function: GlobalWindows fired every 3 records, summing everything
// in the window, then keeping its last 2 for the next firing.
TEST(Evictors, EvictingAfterTheFunctionKeepsTheRestForTheNextFiring) {
  auto in = events(3000);
  std::vector<KeySum> expected;
  for (const auto& [key, records] : byKey(in)) {
    std::vector<int64_t> window;
    int64_t sinceFiring = 0;
    for (const Event& e : records) {
      window.push_back(e.value);
      if (++sinceFiring < 3) continue;
      sinceFiring = 0;
      int64_t sum = 0;
      for (int64_t v : window) sum += v;
      expected.push_back({key, sum});
      window.erase(window.begin(), window.end() - 2);
    }
  }
  expected = sorted(expected);
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<KeySum> sink;
  env.fromCollection(in)
      .setParallelism(1)
      .keyBy([](const Event& e) { return e.key; })
      .window(GlobalWindows::create())
      .trigger(CountTrigger::of(3))
      .evictor(CountEvictor::of(2, /*doEvictAfter=*/true))
      .reduce(sumValues)
      .map([](const Event& e) { return KeySum{e.key, e.value}; })
      .sinkTo(sink);
  env.execute();
  EXPECT_EQ(sorted(sink.getResults()), expected);
}

}  // namespace
}  // namespace weir
