// Event-time timers of a KeyedProcessFunction, against a brute force.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

struct Event {
  int64_t key = 0;
  int64_t time = 0;
};

struct Fired {
  int subtask;
  int64_t key;
  int64_t timer;
  std::optional<int64_t> timestamp;  // of the emitted record
  int64_t watermark;                 // when it fired
};

// For every record: a timer at time + 100; records whose time is a multiple of 3 delete
// theirs again. Every second record registers the same timer twice.
struct Delay : KeyedProcessFunction<int64_t, Event, Fired> {
  void processElement(const Event& e, Context& ctx, Collector<Fired>&) override {
    ctx.timerService().registerEventTimeTimer(e.time + 100);
    if (e.time % 2 == 0) ctx.timerService().registerEventTimeTimer(e.time + 100);
    if (e.time % 3 == 0) ctx.timerService().deleteEventTimeTimer(e.time + 100);
    if (ctx.getCurrentKey() != e.key) throw std::logic_error("wrong current key");
  }
  void onTimer(int64_t timestamp, OnTimerContext& ctx, Collector<Fired>& out) override {
    out.collect({getRuntimeContext().getIndexOfThisSubtask(), ctx.getCurrentKey(), timestamp, std::nullopt,
                 ctx.timerService().currentWatermark()});
  }
};

struct StampOf : ProcessFunction<Fired, Fired> {
  void processElement(const Fired& f, Context& ctx, Collector<Fired>& out) override {
    Fired copy = f;
    copy.timestamp = ctx.timestamp();
    out.collect(copy);
  }
};

// On the heap and in RocksDB (where each key's 4,600 timers are far more than the 128
// cached per key group).
class EventTimeTimersOn : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Backends, EventTimeTimersOn, ::testing::Values("heap", "rocksdb"));

TEST_P(EventTimeTimersOn, FireOncePerKeyAndTimeInOrderAndNeverWhenDeleted) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.setStateBackend(stateBackendFromName(GetParam()));
  env.setAutoWatermarkInterval(1ms);
  const int64_t n = 60000;
  auto event = [](int64_t i) { return Event{(i * 31) % 13, 10'000 + i}; };
  CollectSink<Fired> sink;
  env.fromSource(DataGeneratorSource(event, n),
                 WatermarkStrategy<Event>::forBoundedOutOfOrderness(20ms).withTimestampAssigner(
                     [](const Event& e) { return e.time; }),
                 "events")
      .keyBy([](const Event& e) { return e.key; })
      .process(Delay{})
      .process(StampOf{})
      .sinkTo(sink);
  env.execute();

  // Brute force: every (key, time + 100) of a record whose time is not a multiple of 3.
  std::set<std::pair<int64_t, int64_t>> expected;
  for (int64_t i = 0; i < n; ++i) {
    Event e = event(i);
    if (e.time % 3 != 0) expected.insert({e.key, e.time + 100});
  }
  std::set<std::pair<int64_t, int64_t>> fired;
  std::map<int, int64_t> lastTimer;
  for (auto& f : sink.getResults()) {
    EXPECT_TRUE(fired.insert({f.key, f.timer}).second) << "fired twice: " << f.key << "@" << f.timer;
    ASSERT_TRUE(f.timestamp.has_value());
    EXPECT_EQ(*f.timestamp, f.timer);   // what onTimer emits carries the timer's time
    EXPECT_GE(f.watermark, f.timer);    // only once the watermark reached it
    auto [it, first] = lastTimer.try_emplace(f.subtask, f.timer);
    if (!first) {
      EXPECT_GE(f.timer, it->second);  // in time order
      it->second = f.timer;
    }
  }
  EXPECT_EQ(fired, expected);
}

struct KeyedNow : KeyedProcessFunction<int64_t, Event, int64_t> {
  void processElement(const Event&, Context& ctx, Collector<int64_t>& out) override {
    out.collect(ctx.timerService().currentProcessingTime());
  }
};
struct WindowNow : ProcessWindowFunction<Event, int64_t, int64_t> {
  void process(const int64_t&, Context& ctx, std::span<const Event>, Collector<int64_t>& out) override {
    out.collect(ctx.currentProcessingTime());
  }
};

// Processing time is the job's clock: a test injects one and every context reads it.
// A timer moved on every record (a session that grows) leaves removed entries behind
// in the queue; they are dropped once they outnumber the live ones, and the live timers
// still come out in time order.
TEST(EventTimeTimers, RemovedTimersDoNotPileUpInTheQueue) {
  detail::TimerQueue<int64_t> timers;
  for (int64_t i = 1; i <= 100000; ++i) {
    timers.add(i % 10, i);
    if (i > 10) timers.remove(i % 10, i - 10);  // each of 10 keys keeps only its newest timer
    ASSERT_LE(timers.queued(), 2 * 10 + 1024u) << "after " << i << " moves";
  }
  std::vector<std::pair<int64_t, int64_t>> fired;
  int64_t key, time;
  while (timers.pop(INT64_MAX, key, time)) fired.emplace_back(time, key);
  std::vector<std::pair<int64_t, int64_t>> expected;
  for (int64_t i = 99991; i <= 100000; ++i) expected.emplace_back(i, i % 10);
  EXPECT_EQ(fired, expected);
}

TEST(ProcessingTime, EveryContextReadsTheJobsClock) {
  StreamExecutionEnvironment env;
  env.setClock(std::make_shared<ManualClock>(1'234'567));
  CollectSink<int64_t> sink;
  auto events = env.fromElements(Event{1, 10}, Event{2, 20});
  auto timed = events.process<int64_t>([](const Event&, ProcessFunction<Event, int64_t>::Context& ctx,
                                          Collector<int64_t>& out) { out.collect(ctx.timerService().currentProcessingTime()); });
  auto keyed = events.keyBy([](const Event& e) { return e.key; }).process(KeyedNow{});
  auto windowed = env.fromSource(DataGeneratorSource([](int64_t i) { return Event{i % 2, i}; }, 10),
                                 WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
                                     [](const Event& e) { return e.time; }),
                                 "timed")
                      .keyBy([](const Event& e) { return e.key; })
                      .window(TumblingEventTimeWindows::of(1000ms))
                      .process(WindowNow{});
  timed.unionWith(keyed, windowed).sinkTo(sink);
  env.execute();
  auto results = sink.getResults();
  EXPECT_EQ(results.size(), 2u + 2u + 2u);
  for (int64_t t : results) EXPECT_EQ(t, 1'234'567);
}

}  // namespace
}  // namespace weir
