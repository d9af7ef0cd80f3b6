// RuntimeExecutionMode::BATCH (docs/batch.md): a bounded job's final results, as a
// streaming run with a perfect watermark would end with, checked against brute forces
// computed here; and the jobs BATCH refuses, each with the reason.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "support/event_time_test_events.h"
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

using JoinedPair = std::tuple<int64_t, int64_t, int64_t>;  // key, left time, right time
struct JoinTimes : ProcessJoinFunction<Event, Event, JoinedPair> {
  void processElement(const Event& a, const Event& b, Context&, Collector<JoinedPair>& out) override {
    out.collect({a.key, a.time, b.time});
  }
};

// An interval join over disordered streams: every pair a brute force finds.
TEST_P(BatchOn, AnIntervalJoinFindsEveryPair) {
  const auto left = disordered(3000, 5), right = disordered(2000, 5);
  using Pair = JoinedPair;
  StreamExecutionEnvironment env;
  env.setParallelism(2).setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
  CollectSink<Pair> sink;
  auto byKey = [](const Event& e) { return e.key; };
  auto l = env.fromSource(detail::CollectionSource<Event>(left), punctuated(0), "left").keyBy(byKey);
  auto r = env.fromSource(detail::CollectionSource<Event>(right), punctuated(0), "right").keyBy(byKey);
  l.intervalJoin(r)
      .between(-5ms, 5ms)
      .process(JoinTimes{})
      .sinkTo(sink);
  env.execute();
  std::multiset<Pair> expected;
  for (const auto& a : left)
    for (const auto& b : right)
      if (a.key == b.key && b.time >= a.time - 5 && b.time <= a.time + 5) expected.insert({a.key, a.time, b.time});
  auto results = sink.getResults();
  EXPECT_EQ(std::multiset<Pair>(results.begin(), results.end()), expected);
}

// What a timer saw: its key, its time, the watermark then, and how many records the
// function had been given by then.
struct Fired {
  int64_t key = 0, time = 0, watermark = 0, recordsBefore = 0;
  bool eventTime = true;
  bool operator<(const Fired& o) const { return std::tie(key, time, eventTime) < std::tie(o.key, o.time, o.eventTime); }
};

// An event-time timer 10 ms after each record, and one processing-time timer per key (in
// 2096); a processing-time timer registers another.
struct Timers : KeyedProcessFunction<int64_t, Event, Fired> {
  static constexpr int64_t kIn2096 = 4'000'000'000'000;
  explicit Timers(std::shared_ptr<std::atomic<int64_t>> counter) : records(std::move(counter)) {}
  std::shared_ptr<std::atomic<int64_t>> records;
  void processElement(const Event& e, Context& ctx, Collector<Fired>&) override {
    records->fetch_add(1);
    ctx.timerService().registerEventTimeTimer(e.time + 10);
    ctx.timerService().registerProcessingTimeTimer(kIn2096);
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<Fired>& out) override {
    const bool eventTime = ctx.timeDomain() == TimeDomain::EVENT_TIME;
    out.collect({ctx.getCurrentKey(), eventTime ? time : 0, ctx.timerService().currentWatermark(), records->load(), eventTime});
    if (!eventTime) ctx.timerService().registerProcessingTimeTimer(time + 1);  // would fire forever
  }
};

// Every timer fires once the input has ended: the event-time ones in time order, with
// the watermark at Long.MAX_VALUE, then every processing-time one (the processing time
// jumps to the end of time too, as in Flink); one that a processing-time timer registers
// then does not fire.
TEST_P(BatchOn, TimersFireAtTheEndOfTheInput) {
  const auto events = disordered(5000, 5);
  StreamExecutionEnvironment env;
  env.setStateBackend(stateBackendFromName(GetParam())).setRuntimeMode(RuntimeExecutionMode::BATCH);
  auto records = std::make_shared<std::atomic<int64_t>>(0);
  CollectSink<Fired> sink;
  env.fromSource(detail::CollectionSource<Event>(events), punctuated(0), "events")
      .keyBy([](const Event& e) { return e.key; })
      .process(Timers(records))
      .sinkTo(sink);
  env.execute();
  std::set<std::pair<int64_t, int64_t>> expected;  // key, time: one timer per distinct time
  std::set<int64_t> keys;
  for (const auto& e : events) {
    expected.insert({e.key, e.time + 10});
    keys.insert(e.key);
  }
  const auto fired = sink.getResults();
  std::set<std::pair<int64_t, int64_t>> eventTimers;
  std::multiset<int64_t> processingTimers;
  int64_t lastTime = INT64_MIN;
  bool processingStarted = false;
  for (const auto& f : fired) {
    EXPECT_EQ(f.recordsBefore, static_cast<int64_t>(events.size())) << "a timer fired before the input ended";
    if (f.eventTime) {
      EXPECT_FALSE(processingStarted) << "an event-time timer after the processing-time ones";
      EXPECT_EQ(f.watermark, kMaxWatermark);
      EXPECT_GE(f.time, lastTime) << "out of time order";
      lastTime = f.time;
      EXPECT_TRUE(eventTimers.insert({f.key, f.time}).second) << "fired twice";
    } else {
      processingStarted = true;
      processingTimers.insert(f.key);
    }
  }
  EXPECT_EQ(eventTimers, expected);
  EXPECT_EQ(processingTimers, std::multiset<int64_t>(keys.begin(), keys.end()));  // one per key, none again
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
