// The window functions and triggers a Flink user reaches for beyond reduce, aggregate and
// process: reduce and aggregate followed by a ProcessWindowFunction or a WindowFunction,
// apply(WindowFunction), side outputs from a window function, DeltaTrigger,
// ContinuousProcessingTimeTrigger, ProcessingTimeoutTrigger and DeltaEvictor — each
// against a brute force over the same records, or step by step through the operator
// harness where processing time decides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "support/event_time_test_events.h"
#include "weir/testing/operator_harness.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

using event_time_test::Event;
using event_time_test::punctuated;

// Keys 0..4, values 1..9; times rise with disorder bounded by 30 ms.
std::vector<Event> events(int64_t n) {
  std::vector<Event> out;
  for (int64_t i = 0; i < n; ++i) out.push_back({(i * 7) % 5, 1000 + i * 3 - (i * 7919) % 30, 1 + (i * 31) % 9});
  return out;
}

Event sumValues(const Event& a, const Event& b) { return {a.key, std::max(a.time, b.time), a.value + b.value}; }

// (key, window end − 1, sum of values, elements the function saw)
using Firing = std::tuple<int64_t, int64_t, int64_t, int64_t>;

template <class W>
Firing firing(int64_t key, const W& window, std::span<const Event> in) {
  int64_t sum = 0;
  for (const Event& e : in) sum += e.value;
  return {key, window.maxTimestamp(), sum, static_cast<int64_t>(in.size())};
}

struct ProcessSum : ProcessWindowFunction<Event, Firing, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const Event> in, Collector<Firing>& out) override {
    out.collect(firing(key, ctx.window(), in));
  }
};

struct ApplySum : WindowFunction<Event, Firing, int64_t> {
  void apply(const int64_t& key, const TimeWindow& w, std::span<const Event> in, Collector<Firing>& out) override {
    out.collect(firing(key, w, in));
  }
};

// Sum and count of the values, as Flink's documentation's average example keeps them.
struct SumCount : AggregateFunction<Event, std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> {
  std::pair<int64_t, int64_t> createAccumulator() override { return {0, 0}; }
  std::pair<int64_t, int64_t> add(const Event& e, std::pair<int64_t, int64_t> acc) override {
    return {acc.first + e.value, acc.second + 1};
  }
  std::pair<int64_t, int64_t> getResult(const std::pair<int64_t, int64_t>& acc) override { return acc; }
  std::pair<int64_t, int64_t> merge(std::pair<int64_t, int64_t> a, const std::pair<int64_t, int64_t>& b) override {
    return {a.first + b.first, a.second + b.second};
  }
};

struct ApplyAfterAggregate : WindowFunction<std::pair<int64_t, int64_t>, Firing, int64_t> {
  void apply(const int64_t& key, const TimeWindow& w, std::span<const std::pair<int64_t, int64_t>> in,
             Collector<Firing>& out) override {
    ASSERT_EQ(in.size(), 1u);
    out.collect({key, w.maxTimestamp(), in[0].first, in[0].second});
  }
};

// Brute force: per key and window (tumbling of `size`, or sessions with `gap` when size
// is 0), its records.
std::map<std::pair<int64_t, int64_t>, std::vector<Event>> windowsOf(const std::vector<Event>& in, int64_t size,
                                                                    int64_t gap = 0) {
  std::map<std::pair<int64_t, int64_t>, std::vector<Event>> out;
  if (size > 0) {
    for (const Event& e : in) out[{e.key, e.time - e.time % size + size - 1}].push_back(e);
    return out;
  }
  std::map<int64_t, std::vector<Event>> byKey;
  for (const Event& e : in) byKey[e.key].push_back(e);
  for (auto& [key, records] : byKey) {
    std::sort(records.begin(), records.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
    std::vector<Event> session;
    int64_t end = 0;
    for (const Event& e : records) {
      if (!session.empty() && e.time > end) {  // touching windows merge, as Flink's intersects() says
        out[{key, end - 1}] = session;
        session.clear();
      }
      session.push_back(e);
      end = std::max(session.size() == 1 ? 0 : end, e.time + gap);
    }
    out[{key, end - 1}] = session;
  }
  return out;
}

template <class Build>
std::vector<Firing> run(const std::vector<Event>& in, const std::string& backend, Build build) {
  StreamExecutionEnvironment env;
  env.setParallelism(2).setStateBackend(stateBackendFromName(backend));
  CollectSink<Firing> sink;
  build(env.fromSource(detail::CollectionSource<Event>(in), punctuated(30), "events")
            .setParallelism(1)
            .keyBy([](const Event& e) { return e.key; }))
      .sinkTo(sink);
  env.execute();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  return got;
}

class WindowFunctions : public ::testing::TestWithParam<std::string> {};

TEST_P(WindowFunctions, ReduceOrAggregateThenAWindowFunctionSeesTheOneResult) {
  auto in = events(6000);
  std::vector<Firing> reduced, aggregated;
  for (const auto& [kw, records] : windowsOf(in, 100)) {
    int64_t sum = 0;
    for (const Event& e : records) sum += e.value;
    reduced.push_back({kw.first, kw.second, sum, 1});
    aggregated.push_back({kw.first, kw.second, sum, static_cast<int64_t>(records.size())});
  }
  auto tumbling = [](auto keyed) { return keyed.window(TumblingEventTimeWindows::of(100ms)); };
  EXPECT_EQ(run(in, GetParam(), [&](auto keyed) { return tumbling(keyed).reduce(sumValues, ProcessSum{}); }), reduced);
  EXPECT_EQ(run(in, GetParam(), [&](auto keyed) { return tumbling(keyed).reduce(sumValues, ApplySum{}); }), reduced);
  EXPECT_EQ(run(in, GetParam(), [&](auto keyed) { return tumbling(keyed).aggregate(SumCount{}, ApplyAfterAggregate{}); }),
            aggregated);
}

TEST_P(WindowFunctions, ApplySeesEveryRecordOfTheWindowAlsoWhenSessionsMerge) {
  // In time order: a session then gets every record that belongs to it before the
  // watermark closes it.
  auto in = events(4000);
  std::stable_sort(in.begin(), in.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
  std::vector<Firing> tumbling, sessions;
  for (const auto& [kw, records] : windowsOf(in, 100))
    tumbling.push_back(firing(kw.first, TimeWindow{kw.second - 99, kw.second + 1}, records));
  for (const auto& [kw, records] : windowsOf(in, 0, 12))
    sessions.push_back(firing(kw.first, TimeWindow{0, kw.second + 1}, records));
  std::sort(sessions.begin(), sessions.end());
  EXPECT_EQ(run(in, GetParam(),
                [](auto keyed) { return keyed.window(TumblingEventTimeWindows::of(100ms)).apply(ApplySum{}); }),
            tumbling);
  EXPECT_EQ(run(in, GetParam(),
                [](auto keyed) { return keyed.window(EventTimeSessionWindows::withGap(12ms)).apply(ApplySum{}); }),
            sessions);
}

INSTANTIATE_TEST_SUITE_P(Backends, WindowFunctions, ::testing::Values("heap", "rocksdb"));

// A ProcessWindowFunction emits to a side output through its context; the records carry
// the window's maxTimestamp(), as its main output does.
struct SplitBySum : ProcessWindowFunction<Event, Firing, int64_t> {
  static inline const OutputTag<Firing> kBig{"big"};
  void process(const int64_t& key, Context& ctx, std::span<const Event> in, Collector<Firing>& out) override {
    Firing f = firing(key, ctx.window(), in);
    if (std::get<2>(f) >= 10) ctx.output(kBig, f);
    else out.collect(f);
  }
};

TEST(WindowSideOutputs, AProcessWindowFunctionWritesToASideOutputAtTheWindowsTime) {
  StreamExecutionEnvironment env;
  auto windows = env.fromElements(Event{})
                     .keyBy([](const Event& e) { return e.key; })
                     .window(TumblingEventTimeWindows::of(100ms))
                     .process(SplitBySum{});
  test::OperatorHarness<Firing> harness(windows);
  auto& big = harness.captureSideOutput(SplitBySum::kBig);
  harness.open();
  harness.processElement(Event{1, 10, 4}, 10);
  harness.processElement(Event{1, 50, 9}, 50);   // key 1, [0, 100): 13
  harness.processElement(Event{2, 60, 3}, 60);   // key 2, [0, 100): 3
  harness.processElement(Event{2, 150, 12}, 150);  // key 2, [100, 200): 12
  harness.processWatermark(250);
  std::vector<Firing> main = harness.output().records();
  std::sort(main.begin(), main.end());
  EXPECT_EQ(main, (std::vector<Firing>{{2, 99, 3, 1}}));
  std::vector<std::pair<Firing, int64_t>> side;
  for (const auto& e : big.events())
    if (e.record) side.emplace_back(*e.record, e.timestamp.value_or(-1));
  std::sort(side.begin(), side.end());
  EXPECT_EQ(side, (std::vector<std::pair<Firing, int64_t>>{{{1, 99, 13, 2}, 99}, {{2, 199, 12, 1}, 199}}));
}

// DeltaTrigger: a key's GlobalWindow fires when a record's time is more than 40 ms past
// the record that last fired it (its first record at the start); the window keeps all.
TEST(DeltaTriggers, AWindowFiresWhenARecordDriftsPastTheThresholdFromTheLastFiring) {
  auto in = events(3000);
  std::vector<std::pair<int64_t, int64_t>> expected;  // (key, sum of the window when it fired)
  std::map<int64_t, std::vector<Event>> seen;
  std::map<int64_t, Event> last;
  for (const Event& e : in) {
    seen[e.key].push_back(e);
    auto it = last.find(e.key);
    if (it == last.end()) {
      last.emplace(e.key, e);
      continue;
    }
    if (static_cast<double>(e.time - it->second.time) > 40.0) {
      int64_t sum = 0;
      for (const Event& r : seen[e.key]) sum += r.value;
      expected.push_back({e.key, sum});
      it->second = e;
    }
  }
  std::sort(expected.begin(), expected.end());
  ASSERT_GT(expected.size(), 50u);
  for (const std::string backend : {"heap", "rocksdb"}) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(backend));
    CollectSink<std::pair<int64_t, int64_t>> sink;
    env.fromCollection(in)
        .setParallelism(1)
        .keyBy([](const Event& e) { return e.key; })
        .window(GlobalWindows::create())
        .trigger(DeltaTrigger<Event>::of(40.0, [](const Event& a, const Event& b) {
          return static_cast<double>(b.time - a.time);
        }))
        .reduce(sumValues)
        .map([](const Event& e) { return std::pair<int64_t, int64_t>{e.key, e.value}; })
        .sinkTo(sink);
    env.execute();
    auto got = sink.getResults();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected) << backend;
  }
}

// DeltaEvictor: before the function, the records whose value differs from the window's
// last record's by 4 or more go.
TEST(DeltaEvictors, TheWindowFunctionSeesOnlyRecordsCloseToTheLastOne) {
  auto in = events(5000);
  std::vector<Firing> expected;
  for (const auto& [kw, records] : windowsOf(in, 100)) {
    std::vector<Event> kept;
    for (const Event& e : records)
      if (std::abs(static_cast<double>(e.value - records.back().value)) < 4) kept.push_back(e);
    expected.push_back(firing(kw.first, TimeWindow{kw.second - 99, kw.second + 1}, kept));
  }
  auto got = run(in, "heap", [](auto keyed) {
    return keyed.window(TumblingEventTimeWindows::of(100ms))
        .evictor(DeltaEvictor<Event>::of(4.0, [](const Event& a, const Event& b) {
          return std::abs(static_cast<double>(a.value - b.value));
        }))
        .process(ProcessSum{});
  });
  EXPECT_EQ(got, expected);
}

// The sums a reducing window emitted, in order.
std::vector<int64_t> sums(test::OperatorHarness<Event>& harness) {
  std::vector<int64_t> out;
  for (const Event& e : harness.output().records()) out.push_back(e.value);
  return out;
}

// ContinuousProcessingTimeTrigger (Flink's): every 300 ms of processing time, aligned to
// multiples of 300, from the window's first record; the last firing at the window's end.
TEST(ProcessingTimeTriggers, ContinuousProcessingTimeTriggerFiresEveryIntervalUpToTheWindowsEnd) {
  StreamExecutionEnvironment env;
  auto windows = env.fromElements(Event{})
                     .keyBy([](const Event& e) { return e.key; })
                     .window(TumblingProcessingTimeWindows::of(1000ms))
                     .trigger(ContinuousProcessingTimeTrigger::of(300ms))
                     .reduce(sumValues);
  test::OperatorHarness<Event> harness(windows);
  harness.open();
  harness.setProcessingTime(10);
  harness.processElement(Event{1, 0, 5});
  harness.setProcessingTime(300);
  EXPECT_EQ(sums(harness), std::vector<int64_t>{});
  harness.setProcessingTime(301);  // the timer for 300
  EXPECT_EQ(sums(harness), std::vector<int64_t>{5});
  harness.setProcessingTime(350);
  harness.processElement(Event{1, 0, 2});
  harness.setProcessingTime(601);
  EXPECT_EQ(sums(harness), (std::vector<int64_t>{5, 7}));
  harness.setProcessingTime(901);
  EXPECT_EQ(sums(harness), (std::vector<int64_t>{5, 7, 7}));
  harness.setProcessingTime(1000);  // the window's end, 999: fires, and the window goes
  EXPECT_EQ(sums(harness), (std::vector<int64_t>{5, 7, 7, 7}));
  harness.setProcessingTime(5000);
  EXPECT_EQ(sums(harness).size(), 4u);
}

// A window whose first record comes when the clock is already at its end still fires
// there (Flink registers min(start + interval, end) unconditionally).
TEST(ProcessingTimeTriggers, ContinuousProcessingTimeTriggerFiresAWindowFirstSeenAtItsEnd) {
  StreamExecutionEnvironment env;
  auto windows = env.fromElements(Event{})
                     .keyBy([](const Event& e) { return e.key; })
                     .window(TumblingProcessingTimeWindows::of(1000ms))
                     .trigger(ContinuousProcessingTimeTrigger::of(333ms))
                     .reduce(sumValues);
  test::OperatorHarness<Event> harness(windows);
  harness.open();
  harness.setProcessingTime(999);
  harness.processElement(Event{1, 0, 5});
  harness.setProcessingTime(1000);
  EXPECT_EQ(sums(harness), std::vector<int64_t>{5});
}

// What a window function writes to a side output when a processing-time window fires goes
// out then, not with the next record.
struct SideOnly : ProcessWindowFunction<Event, Firing, int64_t> {
  static inline const OutputTag<Firing> kAll{"all"};
  void process(const int64_t& key, Context& ctx, std::span<const Event> in, Collector<Firing>&) override {
    ctx.output(kAll, firing(key, ctx.window(), in));
  }
};

TEST(WindowSideOutputs, ProcessingTimeFiringsSendTheirSideOutputAtOnce) {
  StreamExecutionEnvironment env;
  for (bool trigger : {false, true}) {
    auto window = env.fromElements(Event{})
                      .keyBy([](const Event& e) { return e.key; })
                      .window(TumblingProcessingTimeWindows::of(100ms));
    auto stream = trigger ? window.trigger(ProcessingTimeTrigger::create()).process(SideOnly{}) : window.process(SideOnly{});
    test::OperatorHarness<Firing> harness(stream);
    auto& side = harness.captureSideOutput(SideOnly::kAll);
    harness.open();
    harness.setProcessingTime(10);
    harness.processElement(Event{3, 0, 7});
    harness.setProcessingTime(100);  // the window [0, 100) fires
    EXPECT_EQ(side.records(), (std::vector<Firing>{{3, 99, 7, 1}})) << (trigger ? "general operator" : "specialised");
  }
}

// A trigger that deletes its timer at the window's end deletes the cleanup timer with it
// (one timer per key, window and time); the window's state still goes at its end.
TEST(ProcessingTimeTriggers, AWindowIsClearedAtItsEndAfterATriggerDeletedThatTimer) {
  StreamExecutionEnvironment env;
  auto windows = env.fromElements(Event{})
                     .keyBy([](const Event& e) { return e.key; })
                     .window(TumblingProcessingTimeWindows::of(1000ms))
                     .trigger(ProcessingTimeoutTrigger<ProcessingTimeTrigger>::of(ProcessingTimeTrigger::create(), 100ms))
                     .reduce(sumValues);
  test::OperatorHarness<Event> harness(windows);
  harness.open();
  harness.processElement(Event{1, 0, 5});
  harness.setProcessingTime(101);  // the timeout fires it, and clears the inner trigger's timer at 999
  EXPECT_EQ(sums(harness), std::vector<int64_t>{5});
  auto entries = [&] {
    size_t n = 0;
    for (const auto& [name, list] : harness.snapshot().keyed) n += list.size();
    return n;
  };
  EXPECT_GT(entries(), 0u);  // the window's contents
  harness.setProcessingTime(1000);
  // At its end the window goes. Its cleanup timer passes through the trigger first, as
  // every timer does in Flink, and ProcessingTimeoutTrigger fires on any timer.
  EXPECT_EQ(sums(harness), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(entries(), 0u);
}

// ProcessingTimeoutTrigger (Flink's): CountTrigger::of(3), but a window also fires 100 ms
// of processing time after its first record; firing clears the trigger's state.
TEST(ProcessingTimeTriggers, ProcessingTimeoutTriggerFiresAWindowThatWaitedTooLong) {
  StreamExecutionEnvironment env;
  auto keyed = env.fromElements(Event{}).keyBy([](const Event& e) { return e.key; });
  {
    auto windows = keyed.window(GlobalWindows::create())
                       .trigger(ProcessingTimeoutTrigger<CountTrigger>::of(CountTrigger::of(3), 100ms))
                       .reduce(sumValues);
    test::OperatorHarness<Event> harness(windows);
    harness.open();
    harness.processElement(Event{1, 0, 1});
    harness.setProcessingTime(40);
    harness.processElement(Event{1, 0, 2});
    harness.setProcessingTime(100);
    EXPECT_EQ(sums(harness), std::vector<int64_t>{});
    harness.setProcessingTime(101);  // 100 ms after the first record
    EXPECT_EQ(sums(harness), std::vector<int64_t>{3});
    harness.setProcessingTime(150);
    harness.processElement(Event{1, 0, 4});  // the count starts again: 1
    harness.processElement(Event{1, 0, 8});
    harness.processElement(Event{1, 0, 16});  // 3: fires, and the timeout goes
    EXPECT_EQ(sums(harness), (std::vector<int64_t>{3, 31}));
    harness.setProcessingTime(400);
    EXPECT_EQ(sums(harness), (std::vector<int64_t>{3, 31}));
  }
  {
    // resetTimerOnNewRecord: the timeout counts from the latest record.
    auto windows = keyed.window(GlobalWindows::create())
                       .trigger(ProcessingTimeoutTrigger<CountTrigger>::of(CountTrigger::of(10), 100ms, true, true))
                       .reduce(sumValues);
    test::OperatorHarness<Event> harness(windows);
    harness.open();
    harness.processElement(Event{1, 0, 1});
    harness.setProcessingTime(80);
    harness.processElement(Event{1, 0, 2});
    harness.setProcessingTime(150);
    EXPECT_EQ(sums(harness), std::vector<int64_t>{});
    harness.setProcessingTime(181);
    EXPECT_EQ(sums(harness), std::vector<int64_t>{3});
  }
  EXPECT_THROW(ProcessingTimeoutTrigger<CountTrigger>::of(CountTrigger::of(3), 0ms), Error);
  EXPECT_THROW(ContinuousProcessingTimeTrigger::of(-1ms), Error);
}

// Flink's TimeWindow.getWindowStartWithOffset: the largest start ≤ t with start ≡ offset
// (mod size), negative timestamps included; brute-forced.
TEST(TimeWindows, GetWindowStartWithOffsetIsTheAlignedStartAtOrBeforeTheTimestamp) {
  for (int64_t size : {1, 7, 100})
    for (int64_t offset : {0, 3, -5})
      for (int64_t t = -250; t <= 250; ++t) {
        int64_t start = t;
        while (((start - offset) % size + size) % size != 0) --start;
        ASSERT_EQ(TimeWindow::getWindowStartWithOffset(t, offset, size), start) << t << " " << offset << " " << size;
      }
  EXPECT_THROW(TimeWindow::getWindowStartWithOffset(5, 0, 0), Error);
}

}  // namespace
}  // namespace weir
