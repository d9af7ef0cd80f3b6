// RuntimeExecutionMode::BATCH (docs/batch.md): a bounded job's final results, as a
// streaming run with a perfect watermark would end with, checked against brute forces
// computed here; and the jobs BATCH refuses, each with the reason.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "support/event_time_test_events.h"
#include "support/process_figures.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using event_time_test::Event;
using event_time_test::punctuated;

using KeySum = std::pair<int64_t, int64_t>;

// A record and the timestamp it carries (-1: none).
template <class T>
struct WithTimestamp : ProcessFunction<T, std::pair<T, int64_t>> {
  void processElement(const T& v, typename ProcessFunction<T, std::pair<T, int64_t>>::Context& ctx,
                      Collector<std::pair<T, int64_t>>& out) override {
    out.collect({v, ctx.timestamp().value_or(-1)});
  }
};

// Events whose times run up to 40 ms back: a watermark that follows the highest time
// seen (punctuated(0)) leaves many of them late.
std::vector<Event> disordered(int64_t n, int64_t keys) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i) events.push_back({i % keys, 1000 + i - (i * 7919) % 40, 1 + (i * 31) % 9});
  return events;
}

// Each key's total in keyed state, emitted by the event-time timer at the end of time.
struct ProcessWithState : KeyedProcessFunction<int64_t, KeySum, KeySum> {
  ValueState<int64_t>* total = nullptr;
  void open() override { total = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("total", 0)); }
  void processElement(const KeySum& r, Context& ctx, Collector<KeySum>&) override {
    total->update(*total->value() + r.second);
    ctx.timerService().registerEventTimeTimer(kMaxWatermark);
  }
  void onTimer(int64_t, OnTimerContext& ctx, Collector<KeySum>& out) override {
    out.collect({ctx.getCurrentKey(), *total->value()});
  }
};

using test::bytesWritten;
using test::peakRssAddedBy;

class BatchOn : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Backends, BatchOn, ::testing::Values("heap", "rocksdb"),
                         [](const auto& info) { return info.param; });

// sum emits one final value per key, stamped Long.MAX_VALUE (Flink's batch reduce), where
// STREAMING emits one per record; the final values are the same and the brute force's.
TEST_P(BatchOn, ASumEmitsOnlyEachKeysFinalValue) {
  constexpr int64_t kRecords = 50000, kKeys = 997;
  std::map<int64_t, int64_t> expected;
  for (int64_t i = 0; i < kRecords; ++i) expected[(i * 7919) % kKeys] += i % 13;
  auto run = [&](RuntimeExecutionMode mode) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(mode);
    CollectSink<std::pair<KeySum, int64_t>> sink;
    env.fromSource(DataGeneratorSource([](int64_t i) { return KeySum{(i * 7919) % kKeys, i % 13}; }, kRecords),
                   WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
        .keyBy([](const KeySum& r) { return r.first; })
        .sum<1>()
        .process(WithTimestamp<KeySum>{})
        .sinkTo(sink);
    env.execute();
    return sink.getResults();
  };
  const auto batch = run(RuntimeExecutionMode::BATCH);
  std::map<int64_t, int64_t> finals;
  for (const auto& [kv, timestamp] : batch) {
    EXPECT_TRUE(finals.emplace(kv.first, kv.second).second) << "key " << kv.first << " emitted twice";
    EXPECT_EQ(timestamp, kMaxWatermark);
  }
  EXPECT_EQ(finals, expected);

  const auto streaming = run(RuntimeExecutionMode::STREAMING);
  EXPECT_EQ(streaming.size(), static_cast<size_t>(kRecords));  // a rolling value per record
  std::map<int64_t, int64_t> lastValues;
  for (const auto& [kv, timestamp] : streaming) lastValues[kv.first] = std::max(lastValues[kv.first], kv.second);
  EXPECT_EQ(lastValues, finals);
}

// A reduce sees each key's records in timestamp order (Flink sorts a batch job's keyed
// input by key, then timestamp), those without a timestamp first, in the order they
// came: keeping the later record leaves each key's latest stamped record, or its last
// unstamped one if it has none. So it does when 5,003 keys overflow a 64 KiB budget
// (the combined values of unstamped records and the stamped records are spilled and
// merged) as within 128 MiB, for stamped, unstamped and both together.
TEST_P(BatchOn, AReduceSeesEachKeysRecordsInTimestampOrder) {
  std::vector<Event> stampedEvents, unstampedEvents;  // times scattered within each key
  for (int64_t i = 0; i < 60000; ++i) stampedEvents.push_back({(i * 31) % 5003, 1000 + (i * 7919) % 100000, i});
  for (int64_t i = 0; i < 30000; ++i) unstampedEvents.push_back({(i * 17) % 7001, 0, -i});
  std::map<int64_t, Event> latest, lastCame;
  for (const auto& e : stampedEvents) {
    auto [it, fresh] = latest.try_emplace(e.key, e);
    if (e.time >= it->second.time) it->second = e;
  }
  for (const auto& e : unstampedEvents) lastCame.insert_or_assign(e.key, e);
  for (int64_t budget : {int64_t{64} << 10, int64_t{128} << 20}) {
    for (int input : {0, 1, 2}) {  // stamped, unstamped, both
      SCOPED_TRACE(std::to_string(budget) + " bytes, input " + std::to_string(input));
      StreamExecutionEnvironment env;
      env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
      env.setSortedInputsMemory(budget);
      CollectSink<Event> sink;
      auto stamped = env.fromSource(detail::CollectionSource<Event>(stampedEvents), punctuated(0), "stamped");
      auto unstamped = env.fromSource(detail::CollectionSource<Event>(unstampedEvents),
                                      WatermarkStrategy<Event>::noWatermarks(), "unstamped");
      auto events = input == 0 ? stamped : input == 1 ? unstamped : stamped.unionWith(unstamped);
      events.keyBy([](const Event& e) { return e.key; })
          .reduce([](const Event&, const Event& later) { return later; })
          .sinkTo(sink);
      env.execute();
      std::map<int64_t, Event> expected;
      if (input != 0) expected = lastCame;
      if (input != 1)
        for (const auto& [key, e] : latest) expected.insert_or_assign(key, e);  // stamped ones come after
      std::map<int64_t, Event> got;
      for (const auto& e : sink.getResults()) EXPECT_TRUE(got.emplace(e.key, e).second) << "key " << e.key << " twice";
      EXPECT_EQ(got, expected);
    }
  }
}

// Tumbling, sliding and session windows over disordered events: BATCH counts every
// record, as a perfect watermark would; STREAMING behind a watermark that follows the
// highest time seen drops the late ones (so the input is disordered enough to tell).
TEST_P(BatchOn, WindowsCountEveryRecordAsAPerfectWatermarkWould) {
  const auto events = disordered(20000, 7);
  using Window = std::tuple<int64_t, int64_t, int64_t>;  // key, window end - 1, sum
  auto run = [&](RuntimeExecutionMode mode, auto assigner) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(mode);
    CollectSink<std::pair<Event, int64_t>> sink;
    env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
        .keyBy([](const Event& e) { return e.key; })
        .window(assigner)
        .reduce([](const Event& a, const Event& b) { return Event{a.key, std::max(a.time, b.time), a.value + b.value}; })
        .process(WithTimestamp<Event>{})
        .sinkTo(sink);
    env.execute();
    std::multiset<Window> out;
    for (const auto& [e, end] : sink.getResults()) out.insert({e.key, end, e.value});
    return out;
  };
  // Brute forces: the windows each event falls in, summed.
  std::multiset<Window> tumbling, sliding, sessions;
  {
    std::map<std::pair<int64_t, int64_t>, int64_t> sums;
    for (const auto& e : events) sums[{e.key, e.time - e.time % 100 + 99}] += e.value;
    for (const auto& [kw, sum] : sums) tumbling.insert({kw.first, kw.second, sum});
    sums.clear();
    for (const auto& e : events)
      for (int64_t start = e.time - e.time % 25; start > e.time - 100; start -= 25) sums[{e.key, start + 99}] += e.value;
    for (const auto& [kw, sum] : sums) sliding.insert({kw.first, kw.second, sum});
    // Sessions with a 3 ms gap: each key's times in order, split where the gap is 3 or more.
    std::map<int64_t, std::vector<Event>> byKey;
    for (const auto& e : events) byKey[e.key].push_back(e);
    for (auto& [key, list] : byKey) {
      std::sort(list.begin(), list.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
      int64_t sum = 0;
      for (size_t i = 0; i < list.size(); ++i) {
        sum += list[i].value;
        if (i + 1 == list.size() || list[i + 1].time - list[i].time >= 3) {
          sessions.insert({key, list[i].time + 3 - 1, sum});
          sum = 0;
        }
      }
    }
  }
  EXPECT_EQ(run(RuntimeExecutionMode::BATCH, TumblingEventTimeWindows::of(100ms)), tumbling);
  EXPECT_EQ(run(RuntimeExecutionMode::BATCH, SlidingEventTimeWindows::of(100ms, 25ms)), sliding);
  EXPECT_EQ(run(RuntimeExecutionMode::BATCH, EventTimeSessionWindows::withGap(3ms)), sessions);
  EXPECT_NE(run(RuntimeExecutionMode::STREAMING, TumblingEventTimeWindows::of(100ms)), tumbling)
      << "the input is not disordered enough for a streaming run to drop anything";
}

// Windows that take the trigger path (a trigger given, or GlobalWindows): each key's
// count windows over its records in timestamp order (as Flink sorts a batch job's keyed
// input: by key, then timestamp), and event-time windows through their trigger, as the
// brute forces find them.
TEST_P(BatchOn, TriggeredWindowsFireAsTheBruteForceDoes) {
  const auto events = disordered(20000, 7);
  auto run = [&](auto windowed) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
    CollectSink<Event> sink;
    windowed(env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
                 .keyBy([](const Event& e) { return e.key; }))
        .reduce([](const Event& a, const Event& b) { return Event{a.key, std::max(a.time, b.time), a.value + b.value}; })
        .sinkTo(sink);
    env.execute();
    std::multiset<std::pair<int64_t, int64_t>> out;  // key, sum
    for (const auto& e : sink.getResults()) out.insert({e.key, e.value});
    return out;
  };
  std::multiset<std::pair<int64_t, int64_t>> counted, tumbling;
  std::map<int64_t, std::vector<Event>> byKey;  // in timestamp order, then input order
  std::map<std::pair<int64_t, int64_t>, int64_t> windows;
  for (const auto& e : events) {
    byKey[e.key].push_back(e);
    windows[{e.key, e.time / 100}] += e.value;
  }
  for (auto& [key, list] : byKey) {
    std::stable_sort(list.begin(), list.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
    for (size_t i = 0; i + 5 <= list.size(); i += 5) {  // a last window not yet full never fires
      int64_t sum = 0;
      for (size_t j = i; j < i + 5; ++j) sum += list[j].value;
      counted.insert({key, sum});
    }
  }
  for (const auto& [kw, sum] : windows) tumbling.insert({kw.first, sum});
  EXPECT_EQ(run([](auto keyed) { return keyed.countWindow(5); }), counted);
  EXPECT_EQ(run([](auto keyed) {
              return keyed.window(TumblingEventTimeWindows::of(100ms)).trigger(EventTimeTrigger::create());
            }),
            tumbling);
}

using JoinedPair = std::tuple<int64_t, int64_t, int64_t>;  // key, left time, right time
struct JoinTimes : ProcessJoinFunction<Event, Event, JoinedPair> {
  void processElement(const Event& a, const Event& b, Context&, Collector<JoinedPair>& out) override {
    out.collect({a.key, a.time, b.time});
  }
};

// An interval join finds every pair the brute force does, within its sort budget and
// far beyond it (both inputs spilled together and merged by key).
TEST_P(BatchOn, AnIntervalJoinFindsEveryPair) {
  const auto left = disordered(3000, 5), right = disordered(2000, 5);
  using Pair = JoinedPair;
  std::multiset<Pair> expected;
  for (const auto& a : left)
    for (const auto& b : right)
      if (a.key == b.key && b.time >= a.time - 5 && b.time <= a.time + 5) expected.insert({a.key, a.time, b.time});
  for (int64_t budget : {int64_t{64} << 10, int64_t{128} << 20}) {
    SCOPED_TRACE(std::to_string(budget) + " bytes");
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
    env.setSortedInputsMemory(budget);
    CollectSink<Pair> sink;
    auto byKey = [](const Event& e) { return e.key; };
    auto l = env.fromSource(detail::CollectionSource<Event>(left), punctuated(0), "left").keyBy(byKey);
    auto r = env.fromSource(detail::CollectionSource<Event>(right), punctuated(0), "right").keyBy(byKey);
    l.intervalJoin(r).between(-5ms, 5ms).process(JoinTimes{}).sinkTo(sink);
    const int64_t before = bytesWritten();
    env.execute();
    const int64_t written = bytesWritten() - before;
    auto results = sink.getResults();
    EXPECT_EQ(std::multiset<Pair>(results.begin(), results.end()), expected);
    constexpr int64_t kInputBytes = 5000 * sizeof(Event);
    if (budget < kInputBytes) EXPECT_GT(written, kInputBytes) << "a 64 KiB budget did not spill";
    else EXPECT_LT(written, kInputBytes / 4) << "a 128 MiB budget spilled";
  }
}

// What a KeyedCoProcessFunction saw: the input, the key, the record's time, the
// watermark then, and how many records of the key (of both inputs) its state counted.
struct SeenOfTwo {
  int input = 0;
  int64_t key = 0, time = 0, watermark = 0, counted = 0;
};

// Counts each key's records of both inputs in one keyed state; emits the count from an
// event-time timer at the end of time.
struct CountBoth : KeyedCoProcessFunction<int64_t, Event, Event, KeySum> {
  explicit CountBoth(std::shared_ptr<std::vector<SeenOfTwo>> seen) : seen(std::move(seen)) {}
  std::shared_ptr<std::vector<SeenOfTwo>> seen;  // parallelism 1: one thread appends
  ValueState<int64_t>* count = nullptr;
  void open() override { count = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0)); }
  void processElement1(const Event& e, Context& ctx, Collector<KeySum>&) override { saw(1, e, ctx); }
  void processElement2(const Event& e, Context& ctx, Collector<KeySum>&) override { saw(2, e, ctx); }
  void saw(int input, const Event& e, Context& ctx) {
    count->update(*count->value() + 1);
    ctx.timerService().registerEventTimeTimer(kMaxWatermark);
    seen->push_back({input, e.key, ctx.timestamp().value_or(-1), ctx.timerService().currentWatermark(), *count->value()});
  }
  void onTimer(int64_t, OnTimerContext& ctx, Collector<KeySum>& out) override {
    out.collect({ctx.getCurrentKey(), *count->value()});
  }
};

// keyed1.connect(keyed2).process(f) takes both inputs grouped by key together, as
// Flink's sorted inputs of a two-input operator: one key's records of both inputs, in
// one timestamp order, with no watermark, then its timers, then the next key's.
TEST_P(BatchOn, ConnectedInputsComeGroupedByKeyTogether) {
  const auto left = disordered(3000, 7), right = disordered(2000, 7);
  StreamExecutionEnvironment env;
  env.setParallelism(1).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
  auto seen = std::make_shared<std::vector<SeenOfTwo>>();
  CollectSink<KeySum> sink;
  auto byKey = [](const Event& e) { return e.key; };
  env.fromSource(detail::CollectionSource<Event>(left), punctuated(0), "left")
      .keyBy(byKey)
      .connect(env.fromSource(detail::CollectionSource<Event>(right), punctuated(0), "right").keyBy(byKey))
      .process(CountBoth(seen))
      .sinkTo(sink);
  env.execute();
  std::map<int64_t, std::map<int, int64_t>> records;  // per key, per input
  for (const auto& e : left) ++records[e.key][1];
  for (const auto& e : right) ++records[e.key][2];
  std::set<int64_t> done;
  size_t i = 0;
  while (i < seen->size()) {
    const int64_t key = (*seen)[i].key;
    ASSERT_TRUE(done.insert(key).second) << "key " << key << " came back after another key";
    std::map<int, int64_t> counted;
    int64_t lastTime = INT64_MIN;
    for (; i < seen->size() && (*seen)[i].key == key; ++i) {
      const SeenOfTwo& s = (*seen)[i];
      ++counted[s.input];
      EXPECT_EQ(s.counted, counted[1] + counted[2]) << "key " << key << "'s state counted another key's records";
      EXPECT_EQ(s.watermark, kMinWatermark) << "a watermark within a key";
      EXPECT_GE(s.time, lastTime) << "key " << key << "'s records out of timestamp order";
      lastTime = s.time;
    }
    EXPECT_EQ(counted, records[key]) << "key " << key;
  }
  EXPECT_EQ(done.size(), records.size());
  std::map<int64_t, int64_t> totals;
  for (const auto& [k, n] : sink.getResults()) EXPECT_TRUE(totals.emplace(k, n).second) << "key " << k << " twice";
  std::map<int64_t, int64_t> expected;
  for (const auto& [k, inputs] : records) expected[k] = inputs.at(1) + inputs.at(2);
  EXPECT_EQ(totals, expected);
}

// The broadcast side of events.connect(rules.broadcast(...)).process(f) is processed
// first, as in Flink's batch mode, whether events are keyed or not: every event sees
// every rule, although no rule leaves its source before every event left theirs; each
// key's sum and rule are the brute force's.
TEST_P(BatchOn, TheBroadcastSideComesFirst) {
  struct Rule {
    int64_t key = 0, multiplier = 0;
  };
  using Out = std::tuple<int64_t, int64_t, int64_t>;  // key (-1: a record), sum or rules seen, rule
  static const MapStateDescriptor<int64_t, int64_t> kRulesState{"rules"};
  struct Keyed : KeyedBroadcastProcessFunction<int64_t, Event, Rule, Out> {
    ValueState<int64_t>* sum = nullptr;
    void open() override { sum = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("sum", 0)); }
    void processElement(const Event& e, ReadOnlyContext& ctx, Collector<Out>& out) override {
      sum->update(*sum->value() + e.value);
      ctx.timerService().registerEventTimeTimer(kMaxWatermark);
      out.collect({-1, static_cast<int64_t>(ctx.getBroadcastState(kRulesState).immutableEntries().size()), 0});
    }
    void processBroadcastElement(const Rule& r, Context& ctx, Collector<Out>&) override {
      ctx.getBroadcastState(kRulesState).put(r.key, r.multiplier);
    }
    void onTimer(int64_t, OnTimerContext& ctx, Collector<Out>& out) override {
      out.collect({ctx.getCurrentKey(), *sum->value(), *ctx.getBroadcastState(kRulesState).get(ctx.getCurrentKey())});
    }
  };
  struct NotKeyed : BroadcastProcessFunction<Event, Rule, Out> {
    void processElement(const Event&, ReadOnlyContext& ctx, Collector<Out>& out) override {
      out.collect({-1, static_cast<int64_t>(ctx.getBroadcastState(kRulesState).immutableEntries().size()), 0});
    }
    void processBroadcastElement(const Rule& r, Context& ctx, Collector<Out>&) override {
      ctx.getBroadcastState(kRulesState).put(r.key, r.multiplier);
    }
  };
  constexpr int64_t kKeys = 7;
  const auto events = disordered(20000, kKeys);
  std::vector<Rule> rules;
  for (int64_t k = 0; k < kKeys; ++k) rules.push_back({k, 100 + k});
  std::map<int64_t, std::pair<int64_t, int64_t>> expected;
  for (const auto& e : events) expected[e.key].first += e.value;
  for (const auto& r : rules) expected[r.key].second = r.multiplier;
  for (bool keyed : {true, false}) {
    SCOPED_TRACE(keyed ? "keyed" : "not keyed");
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
    CollectSink<Out> sink;
    auto left = std::make_shared<std::atomic<int64_t>>(0);  // events out of their source
    auto eventStream = env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events").map([left](const Event& e) {
      left->fetch_add(1);
      return e;
    });
    auto ruleStream = env.fromCollection(rules)
                          .map([left, n = static_cast<int64_t>(events.size())](const Rule& r) {
                            while (left->load() < n) std::this_thread::yield();
                            return r;
                          })
                          .broadcast(kRulesState);
    if (keyed) eventStream.keyBy([](const Event& e) { return e.key; }).connect(ruleStream).process(Keyed{}).sinkTo(sink);
    else eventStream.connect(ruleStream).process(NotKeyed{}).sinkTo(sink);
    env.execute();
    std::map<int64_t, std::pair<int64_t, int64_t>> got;
    int64_t records = 0;
    for (const auto& [key, a, b] : sink.getResults()) {
      if (key >= 0) {
        EXPECT_TRUE(got.emplace(key, std::pair{a, b}).second) << "key " << key << " twice";
      } else {
        ++records;
        ASSERT_EQ(a, kKeys) << "a record came before the broadcast side was done";
      }
    }
    EXPECT_EQ(records, static_cast<int64_t>(events.size()));
    if (keyed) EXPECT_EQ(got, expected);
  }
}

// A configuration file's checkpoint interval (setCheckpointIntervalForStreaming) is left
// out in BATCH: the job runs, and its sinks are told it takes no checkpoints, as a sink
// that must commit with them must hear; in STREAMING it takes them.
TEST(Batch, AConfigurationFilesCheckpointIntervalIsForStreamingJobsOnly) {
  struct Checking : Sink<int64_t> {
    std::shared_ptr<std::atomic<int>> told = std::make_shared<std::atomic<int>>(-1);  // checkpointing on?
    std::unique_ptr<SinkWriter<int64_t>> createWriter(RuntimeContext& context) const override {
      return DiscardingSink<int64_t>().createWriter(context);
    }
    void checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy&, RuntimeExecutionMode) const override {
      told->store(checkpoints.isCheckpointingEnabled() ? 1 : 0);
    }
  };
  for (auto mode : {RuntimeExecutionMode::BATCH, RuntimeExecutionMode::AUTOMATIC, RuntimeExecutionMode::STREAMING}) {
    StreamExecutionEnvironment env;
    env.setRuntimeMode(mode);
    env.getCheckpointConfig().setCheckpointIntervalForStreaming(100ms);
    Checking sink;
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 1000), WatermarkStrategy<int64_t>::noWatermarks(),
                   "numbers")
        .sinkTo(sink);
    EXPECT_EQ(env.execute().status, JobStatus::FINISHED);
    EXPECT_EQ(sink.told->load(), mode == RuntimeExecutionMode::STREAMING ? 1 : 0) << static_cast<int>(mode);
  }
  // An interval set for the job itself is refused, as before.
  StreamExecutionEnvironment env;
  env.setRuntimeMode(RuntimeExecutionMode::BATCH).enableCheckpointing(100ms);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, 10), WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .sinkTo(DiscardingSink<int64_t>());
  EXPECT_THROW(env.execute(), Error);
}

// A two-input keyed operator holds one key's state at a time, as a one-input one does:
// 400 keys of 1 MiB each, which would take 400 MiB at once, raise the peak resident
// memory by far less.
TEST_P(BatchOn, AConnectedKeysStateIsDroppedOnceItsInputIsDone) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator keeps freed memory: peak RSS shows nothing";
#endif
  struct Hold : KeyedCoProcessFunction<int64_t, int64_t, int64_t, int64_t> {
    ValueState<std::string>* held = nullptr;
    void open() override { held = &getRuntimeContext().getState(ValueStateDescriptor<std::string>("held")); }
    void processElement1(const int64_t& key, Context& ctx, Collector<int64_t>&) override {
      if (!held->value()) held->update(std::string(1 << 20, static_cast<char>('a' + key % 26)));
      ctx.timerService().registerEventTimeTimer(kMaxWatermark);
    }
    void processElement2(const int64_t&, Context& ctx, Collector<int64_t>&) override {
      ctx.timerService().registerEventTimeTimer(kMaxWatermark);
    }
    void onTimer(int64_t, OnTimerContext& ctx, Collector<int64_t>& out) override {
      out.collect(held->value() ? static_cast<int64_t>(held->value()->size()) : 0);
    }
  };
  StreamExecutionEnvironment env;
  env.setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
  CollectSink<int64_t> sink;
  auto keys = [&](const char* name) {
    return env
        .fromSource(DataGeneratorSource([](int64_t i) { return i % 400; }, 4000), WatermarkStrategy<int64_t>::noWatermarks(),
                    name)
        .keyBy([](int64_t k) { return k; });
  };
  keys("first").connect(keys("second")).process(Hold{}).sinkTo(sink);
  const int64_t added = peakRssAddedBy(env);
  EXPECT_EQ(sink.getResults(), std::vector<int64_t>(400, 1 << 20));
  EXPECT_LT(added, int64_t{100} << 20) << "the peak memory rose by " << (added >> 20) << " MiB";
}

// What a KeyedProcessFunction saw, in order: a record or a timer, its key, the time of
// a timer, the watermark then, and how many records of the key its state had counted.
struct Seen {
  bool timer = false, eventTime = true;
  int64_t key = 0, time = 0, watermark = 0, counted = 0;
};

// Counts each key's records in keyed state; an event-time timer 10 ms after each
// record, and one processing-time timer per key (in 2096) that registers another, and
// an event-time timer at kLast.
struct Timers : KeyedProcessFunction<int64_t, Event, int64_t> {
  static constexpr int64_t kIn2096 = 4'000'000'000'000;
  static constexpr int64_t kLast = 3'000'000'000'000;
  explicit Timers(std::shared_ptr<std::vector<Seen>> seen) : seen(std::move(seen)) {}
  std::shared_ptr<std::vector<Seen>> seen;  // parallelism 1: one thread appends
  ValueState<int64_t>* count = nullptr;
  void open() override { count = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count", 0)); }
  void processElement(const Event& e, Context& ctx, Collector<int64_t>&) override {
    count->update(*count->value() + 1);
    ctx.timerService().registerEventTimeTimer(e.time + 10);
    ctx.timerService().registerProcessingTimeTimer(kIn2096);
    seen->push_back({false, true, e.key, e.time, ctx.timerService().currentWatermark(), *count->value()});
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<int64_t>&) override {
    const bool eventTime = ctx.timeDomain() == TimeDomain::EVENT_TIME;
    seen->push_back({true, eventTime, ctx.getCurrentKey(), time, ctx.timerService().currentWatermark(), *count->value()});
    if (!eventTime) {
      ctx.timerService().registerProcessingTimeTimer(time + 1);  // would fire forever
      ctx.timerService().registerEventTimeTimer(kLast);          // fires, for this key
    }
  }
};

// Flink's batch rules for a keyed process function: its input comes grouped by key, one
// key after another, each key's in timestamp order, with no watermark (Long.MIN_VALUE);
// once a key's records are done its timers fire: the event-time ones in time order with
// the watermark at Long.MAX_VALUE, then its processing-time ones (processing time jumps
// to the end of time too), whose own new processing-time timers do not fire and whose
// event-time ones do. Its keyed state is there for them.
TEST_P(BatchOn, EachKeysTimersFireOnceItsInputIsDone) {
  const auto events = disordered(5000, 5);
  StreamExecutionEnvironment env;
  env.setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
  auto seen = std::make_shared<std::vector<Seen>>();
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
      .keyBy([](const Event& e) { return e.key; })
      .process(Timers(seen))
      .sinkTo(DiscardingSink<int64_t>());
  env.execute();
  std::map<int64_t, int64_t> records;                 // per key
  std::map<int64_t, std::set<int64_t>> timerTimes;  // per key: one timer per distinct time
  for (const auto& e : events) {
    ++records[e.key];
    timerTimes[e.key].insert(e.time + 10);
  }
  std::set<int64_t> done;
  size_t i = 0;
  while (i < seen->size()) {
    const int64_t key = (*seen)[i].key;
    ASSERT_TRUE(done.insert(key).second) << "key " << key << " came back after another key";
    int64_t counted = 0, lastTime = INT64_MIN;
    for (; i < seen->size() && (*seen)[i].key == key && !(*seen)[i].timer; ++i) {
      EXPECT_EQ((*seen)[i].watermark, kMinWatermark) << "a watermark within a key";
      EXPECT_EQ((*seen)[i].counted, ++counted);
      EXPECT_GE((*seen)[i].time, lastTime) << "key " << key << "'s records out of timestamp order";
      lastTime = (*seen)[i].time;
    }
    EXPECT_EQ(counted, records[key]) << "key " << key << "'s records were not all given before its timers";
    std::vector<int64_t> eventTimers, afterProcessing;
    int processingTimers = 0;
    for (; i < seen->size() && (*seen)[i].key == key; ++i) {
      const Seen& t = (*seen)[i];
      ASSERT_TRUE(t.timer) << "a record of key " << key << " after its timers";
      EXPECT_EQ(t.counted, records[key]) << "the key's state is gone before its timers";
      EXPECT_EQ(t.watermark, kMaxWatermark);
      if (!t.eventTime) ++processingTimers;
      else (processingTimers == 0 ? eventTimers : afterProcessing).push_back(t.time);
    }
    EXPECT_TRUE(std::is_sorted(eventTimers.begin(), eventTimers.end())) << "out of time order";
    EXPECT_EQ(std::set<int64_t>(eventTimers.begin(), eventTimers.end()), timerTimes[key]);
    EXPECT_EQ(eventTimers.size(), timerTimes[key].size()) << "a timer fired twice";
    EXPECT_EQ(processingTimers, 1) << "one processing-time timer per key, and none it registered";
    EXPECT_EQ(afterProcessing, std::vector<int64_t>{Timers::kLast}) << "the event-time timer it registered";
  }
  EXPECT_EQ(done.size(), records.size());
}

// Keyed state holds one key at a time in BATCH: 400 keys of 1 MiB of state each, which
// would take 400 MiB at once, raise the peak resident memory by far less; on RocksDB
// too, whose instance the batch job does not use.
TEST_P(BatchOn, AKeysStateIsDroppedOnceItsInputIsDone) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator keeps freed memory: peak RSS shows nothing";
#endif
  struct Hold : KeyedProcessFunction<int64_t, int64_t, int64_t> {
    ValueState<std::string>* held = nullptr;
    void open() override { held = &getRuntimeContext().getState(ValueStateDescriptor<std::string>("held")); }
    void processElement(const int64_t& key, Context& ctx, Collector<int64_t>& out) override {
      if (!held->value()) held->update(std::string(1 << 20, static_cast<char>('a' + key % 26)));
      ctx.timerService().registerEventTimeTimer(kMaxWatermark);
    }
    void onTimer(int64_t, OnTimerContext& ctx, Collector<int64_t>& out) override {
      out.collect(static_cast<int64_t>(held->value()->size()));
    }
  };
  StreamExecutionEnvironment env;
  env.setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i % 400; }, 4000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "keys")
      .keyBy([](int64_t k) { return k; })
      .process(Hold{})
      .sinkTo(sink);
  const int64_t added = peakRssAddedBy(env);
  EXPECT_EQ(sink.getResults(), std::vector<int64_t>(400, 1 << 20));
  EXPECT_LT(added, int64_t{100} << 20) << "the peak memory rose by " << (added >> 20) << " MiB";
}

// The same for windows: 400 keys whose window function keeps 1 MiB in the key's state
// (globalState, shared by its windows), on both window operators.
TEST_P(BatchOn, AWindowsKeyStateIsDroppedOnceItsInputIsDone) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator keeps freed memory: peak RSS shows nothing";
#endif
  struct Hold : ProcessWindowFunction<Event, int64_t, int64_t> {
    void process(const int64_t&, Context& ctx, std::span<const Event> elements, Collector<int64_t>& out) override {
      ValueState<std::string>& held = ctx.globalState().getState(ValueStateDescriptor<std::string>("held"));
      if (!held.value()) held.update(std::string(1 << 20, 'h'));
      out.collect(static_cast<int64_t>(held.value()->size()));
    }
  };
  std::vector<Event> events;
  for (int64_t i = 0; i < 4000; ++i) events.push_back({i % 400, i, 1});
  for (bool viaTrigger : {false, true}) {
    SCOPED_TRACE(viaTrigger ? "with a trigger" : "without");
    StreamExecutionEnvironment env;
    env.setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
    CollectSink<int64_t> sink;
    auto windowed = env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
                        .keyBy([](const Event& e) { return e.key; })
                        .window(TumblingEventTimeWindows::of(std::chrono::milliseconds(100000)));
    if (viaTrigger) windowed.trigger(EventTimeTrigger::create()).process(Hold{}).sinkTo(sink);
    else windowed.process(Hold{}).sinkTo(sink);
    const int64_t added = peakRssAddedBy(env);
    EXPECT_EQ(sink.getResults(), std::vector<int64_t>(400, 1 << 20));
    EXPECT_LT(added, int64_t{100} << 20) << "the peak memory rose by " << (added >> 20) << " MiB";
  }
}

// A sum and a process function keep each key's state once, whatever the input's order:
// with a sort budget far below the input they spill sorted runs to io.tmp.dirs and merge
// them, and the results are still the brute force's; within the budget nothing spills.
TEST_P(BatchOn, KeyedInputBeyondItsSortBudgetSpillsAndStaysExact) {
  constexpr int64_t kRecords = 300000, kKeys = 20011;
  std::map<int64_t, int64_t> expected;
  for (int64_t i = 0; i < kRecords; ++i) expected[(i * 7919) % kKeys] += i % 13;
  const auto folder = std::filesystem::temp_directory_path() / ("weir-batch-spill-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  auto run = [&](int64_t budget, bool reduce) {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
    env.setSortedInputsMemory(budget).setTmpDirectory(folder.string());
    CollectSink<KeySum> sink;
    auto keyed = env.fromSource(DataGeneratorSource([](int64_t i) { return KeySum{(i * 7919) % kKeys, i % 13}; }, kRecords),
                                WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
                     .keyBy([](const KeySum& r) { return r.first; });
    if (reduce) {
      keyed.sum<1>().sinkTo(sink);
    } else {
      // The total of each key kept in keyed state, emitted by an event-time timer.
      keyed.process(ProcessWithState{}).sinkTo(sink);
    }
    const int64_t before = bytesWritten();
    env.execute();
    std::map<int64_t, int64_t> got;
    for (const auto& [k, v] : sink.getResults()) EXPECT_TRUE(got.emplace(k, v).second) << "key " << k << " twice";
    EXPECT_EQ(got, expected);
    return bytesWritten() - before;
  };
  constexpr int64_t kInputBytes = kRecords * 16;  // two int64 a record, before keys and framing
  for (bool reduce : {true, false}) {
    SCOPED_TRACE(reduce ? "sum" : "process");
    EXPECT_GT(run(64 << 10, reduce), kInputBytes) << "a 64 KiB budget did not spill";
    EXPECT_LT(run(int64_t{256} << 20, reduce), kInputBytes / 4) << "a 256 MiB budget spilled";
  }
  EXPECT_TRUE(std::filesystem::is_empty(folder)) << "spilled runs were left behind";
  std::filesystem::remove_all(folder);
}

// AUTOMATIC runs a job whose sources are all bounded in BATCH, and one with an unbounded
// source in STREAMING.
TEST(Batch, AutomaticRunsABoundedJobInBatchAndAnUnboundedOneStreaming) {
  auto job = [](StreamExecutionEnvironment& env, int64_t count, CollectSink<KeySum>& sink) {
    env.setRuntimeMode(RuntimeExecutionMode::AUTOMATIC);
    auto keySum = [](int64_t i) { return KeySum{i % 10, 1}; };
    env.fromSource(DataGeneratorSource(keySum, count,
                                       count == kUnboundedCount ? RateLimiterStrategy::perSecond(20000)
                                                                : RateLimiterStrategy::noOp()),
                   WatermarkStrategy<KeySum>::noWatermarks(), "numbers")
        .keyBy([](const KeySum& r) { return r.first; })
        .sum<1>()
        .sinkTo(sink);
  };
  StreamExecutionEnvironment bounded;
  CollectSink<KeySum> finals;
  job(bounded, 1000, finals);
  bounded.execute();
  auto results = finals.getResults();
  std::sort(results.begin(), results.end());
  std::vector<KeySum> expected;
  for (int64_t k = 0; k < 10; ++k) expected.push_back({k, 100});
  EXPECT_EQ(results, expected);

  StreamExecutionEnvironment unbounded;
  CollectSink<KeySum> rolling;
  job(unbounded, kUnboundedCount, rolling);
  auto client = unbounded.executeAsync();
  for (int i = 0; i < 500 && rolling.getResults().size() <= 10; ++i) std::this_thread::sleep_for(10ms);
  client.cancel();
  client.wait();
  EXPECT_GT(rolling.getResults().size(), 10u) << "no rolling values: it did not run in STREAMING";
}

// What BATCH cannot run is refused at execute(), one line naming why.
TEST(Batch, RefusesWhatItCannotRunNamingWhy) {
  auto refusal = [](auto build) {
    StreamExecutionEnvironment env;
    env.setRuntimeMode(RuntimeExecutionMode::BATCH);
    build(env);
    try {
      env.execute();
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto numbers = [](StreamExecutionEnvironment& env, int64_t count) {
    return env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, count), WatermarkStrategy<int64_t>::noWatermarks(),
                          "numbers");
  };
  EXPECT_EQ(refusal([&](auto& env) { numbers(env, kUnboundedCount).sinkTo(DiscardingSink<int64_t>()); }),
            "execution mode BATCH needs bounded sources, but source 'numbers' is unbounded");
  EXPECT_EQ(refusal([&](auto& env) {
              env.enableCheckpointing(100ms);
              numbers(env, 10).sinkTo(DiscardingSink<int64_t>());
            }),
            "execution mode BATCH takes no checkpoints, but checkpointing is enabled; leave it off, or run in STREAMING");
  // A savepoint of a streaming run of the job, which BATCH will not resume from.
  const auto folder = std::filesystem::temp_directory_path() / ("weir-batch-savepoint-" + std::to_string(::getpid()));
  std::filesystem::remove_all(folder);
  std::string savepoint;
  {
    StreamExecutionEnvironment env;
    env.enableCheckpointing(20ms);
    env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(1000)),
                   WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
        .sinkTo(DiscardingSink<int64_t>());
    auto client = env.executeAsync();
    // A savepoint is taken once the tasks run, which a completed checkpoint shows.
    for (int i = 0; i < 500 && client.getMetrics().numberOfCompletedCheckpoints < 1; ++i)
      std::this_thread::sleep_for(10ms);
    savepoint = client.stopWithSavepoint(false, folder.string()).get();
    client.wait();
  }
  EXPECT_EQ(refusal([&](auto& env) {
              env.setRestorePath(savepoint);
              numbers(env, 10).sinkTo(DiscardingSink<int64_t>());
            }),
            "execution mode BATCH starts from scratch, but it is set to restore '" + savepoint +
                "'; run in STREAMING to resume");
  std::filesystem::remove_all(folder);
  EXPECT_EQ(refusal([&](auto& env) {
              numbers(env, 10)
                  .keyBy([](int64_t i) { return i % 2; })
                  .window(TumblingProcessingTimeWindows::of(1s))
                  .reduce([](int64_t a, int64_t b) { return a + b; })
                  .name("per second")
                  .sinkTo(DiscardingSink<int64_t>());
            }),
            "execution mode BATCH cannot run operator 'per second': its windows are in processing time, which gives a "
            "batch job no repeatable result; use event-time windows");
  EXPECT_EQ(refusal([&](auto& env) {
              env.setTmpDirectory("/no/such");
              numbers(env, 10).sinkTo(DiscardingSink<int64_t>());
            }),
            "io.tmp.dirs '/no/such' is not a folder; batch execution spills sorted input there");
  // AUTOMATIC says why it chose BATCH.
  StreamExecutionEnvironment env;
  env.setRuntimeMode(RuntimeExecutionMode::AUTOMATIC).enableCheckpointing(100ms);
  numbers(env, 10).sinkTo(DiscardingSink<int64_t>());
  try {
    env.execute();
    ADD_FAILURE() << "AUTOMATIC ran a bounded job with checkpointing";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "execution mode AUTOMATIC runs this job in BATCH (every source is bounded), which takes no checkpoints, "
              "but checkpointing is enabled; leave it off, or run in STREAMING");
  }
}

}  // namespace
}  // namespace weir
