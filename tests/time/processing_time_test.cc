// Processing time: timers and windows driven by the job's clock. The tests feed records
// while the job runs and move a ManualClock only once the operator has taken them, so
// what each record meets is decided by the test, not by thread timing; nothing sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "support/gated_source.h"
#include "checkpoint/checkpoint_storage.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

struct Event {
  int64_t key = 0;
  int64_t value = 0;
};
WEIR_STRUCT(Event, key, value);

using test::recordsIn;
using test::waitUntil;
using GatedSource = test::GatedSource<Event>;

// What a timer or window reports: key, its time (a timer's, or a window's start), a
// count, and the clock when it fired. When exactly a due timer fires depends on when
// the subtask next looks at the clock; that it never fires early does not.
struct Fired {
  int64_t key = 0;
  int64_t time = 0;
  int64_t count = 0;
  int64_t firedAt = 0;
  int64_t due = 0;  // the earliest the clock may read when it fires
  bool operator<(const Fired& o) const { return std::tie(key, time, count) < std::tie(o.key, o.time, o.count); }
};
WEIR_STRUCT(Fired, key, time, count, firedAt, due);

// Each record registers a processing-time timer `value` ms from now; a negative value
// deletes the timer −value ms from now instead.
struct TimerPerRecord : KeyedProcessFunction<int64_t, Event, Fired> {
  void processElement(const Event& e, Context& ctx, Collector<Fired>& out) override {
    int64_t now = ctx.timerService().currentProcessingTime();
    if (e.value >= 0) ctx.timerService().registerProcessingTimeTimer(now + e.value);
    else ctx.timerService().deleteProcessingTimeTimer(now - e.value);
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<Fired>& out) override {
    if (ctx.timeDomain() != TimeDomain::PROCESSING_TIME) throw std::logic_error("wrong time domain");
    if (ctx.timestamp() != time) throw std::logic_error("the context's timestamp is not the timer's");
    out.collect({ctx.getCurrentKey(), time, 1, ctx.timerService().currentProcessingTime(), time});
  }
};

// Whether the records reaching the sink carried timestamps, and which.
struct NoteTimestamp : ProcessFunction<Fired, Fired> {
  void processElement(const Fired& f, Context& ctx, Collector<Fired>& out) override {
    Fired noted = f;
    noted.count = ctx.timestamp() ? *ctx.timestamp() : -1;
    out.collect(noted);
  }
};

// Timers and windows live on the heap or in RocksDB, as the state backend says.
class ProcessingTimeOn : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Backends, ProcessingTimeOn, ::testing::Values("heap", "rocksdb"));

TEST_P(ProcessingTimeOn, TimersFireOnceWhenTheClockPassesThemNeverWhenDeletedNorAfterTheEnd) {
  auto clock = std::make_shared<ManualClock>(1000);
  StreamExecutionEnvironment env;
  env.setParallelism(2).setClock(clock);
  env.setStateBackend(stateBackendFromName(GetParam()));
  GatedSource source;
  CollectSink<Fired> sink;
  env.fromSource(source, WatermarkStrategy<Event>::noWatermarks(), "gated")
      .keyBy([](const Event& e) { return e.key; })
      .process(TimerPerRecord{})
      .process(NoteTimestamp{})
      .sinkTo(sink);
  auto client = env.executeAsync("processing-time timers");
  // At 1000: keys 0..5 ask for 1100 (key 0 twice: one timer), key 6 for 1050, key 7 for
  // 1200 and deletes it, key 8 for 5000 (never reached).
  std::vector<Event> first{{0, 100}, {0, 100}, {1, 100}, {2, 100}, {3, 100}, {4, 100}, {5, 100},
                           {6, 50},  {7, 200}, {7, -200}, {8, 4000}};
  source.push(first);
  waitUntil([&] { return recordsIn(client, "Keyed Process") == first.size(); }, "the first records");
  clock->setTime(1099);
  // At 1099 key 6's timer is due; then 1100 brings keys 0..5.
  waitUntil([&] { return sink.getResults().size() == 1; }, "key 6's timer");
  clock->setTime(1150);
  waitUntil([&] { return sink.getResults().size() == 7; }, "the timers at 1100");
  // A timer registered from a timer's time on: key 9 at 1150 + 10.
  source.push({{9, 10}});
  waitUntil([&] { return recordsIn(client, "Keyed Process") == first.size() + 1; }, "key 9's record");
  clock->setTime(1300);
  waitUntil([&] { return sink.getResults().size() == 8; }, "key 9's timer");
  source.close();
  client.wait();

  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  std::vector<std::pair<int64_t, int64_t>> timers;  // key, time
  for (const Fired& f : got) {
    timers.push_back({f.key, f.time});
    EXPECT_GE(f.firedAt, f.due) << "key " << f.key << " fired early";
    EXPECT_EQ(f.count, -1) << "a processing-time timer's output carries no timestamp";
  }
  std::vector<std::pair<int64_t, int64_t>> expected{{0, 1100}, {1, 1100}, {2, 1100}, {3, 1100},
                                                    {4, 1100}, {5, 1100}, {6, 1050}, {9, 1160}};
  EXPECT_EQ(timers, expected);
}

// A checkpoint holds the processing-time timers; restored (on either backend, whichever
// took it), those whose time passed fire as soon as the job runs, the others wait for
// the clock.
void checkpointAndRestoreTimers(const std::string& backend, const std::string& restoreOn);

TEST_P(ProcessingTimeOn, ACheckpointKeepsTheTimersAndARestoreFiresThoseDue) {
  for (const std::string restoreOn : {"heap", "rocksdb"}) {
    SCOPED_TRACE(GetParam() + " to " + restoreOn);
    checkpointAndRestoreTimers(GetParam(), restoreOn);
  }
}

void checkpointAndRestoreTimers(const std::string& backend, const std::string& restoreOn) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("weir-ptimers-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto build = [](StreamExecutionEnvironment& env, const GatedSource& source, const CollectSink<Fired>& sink) {
    env.fromSource(source, WatermarkStrategy<Event>::noWatermarks(), "gated")
        .keyBy([](const Event& e) { return e.key; })
        .process(TimerPerRecord{})
        .uid("timers")
        .sinkTo(sink);
  };
  {
    StreamExecutionEnvironment env;
    env.setParallelism(2).setClock(std::make_shared<ManualClock>(1000));
    env.setStateBackend(stateBackendFromName(backend));
    env.enableCheckpointing(10ms);
    env.getCheckpointConfig().setCheckpointStorage(dir.string());
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
    GatedSource source;
    CollectSink<Fired> sink;
    build(env, source, sink);
    auto client = env.executeAsync("before");
    // Keys 0..4 at 1500, key 5 at 6000.
    source.push({{0, 500}, {1, 500}, {2, 500}, {3, 500}, {4, 500}, {5, 5000}});
    waitUntil([&] { return recordsIn(client, "Keyed Process") == 6; }, "the records");
    int64_t after = client.getMetrics().numberOfCompletedCheckpoints + 1;  // one that began after them
    waitUntil([&] { return client.getMetrics().numberOfCompletedCheckpoints > after; }, "a checkpoint");
    client.cancel();
    client.wait();
    EXPECT_TRUE(sink.getResults().empty());
  }
  StreamExecutionEnvironment env;
  env.setParallelism(3).setClock(std::make_shared<ManualClock>(2000));  // rescaled, too
  env.setStateBackend(stateBackendFromName(restoreOn));
  env.setRestorePath(checkpoint::findLatestCheckpoint(dir.string()));
  GatedSource source;
  CollectSink<Fired> sink;
  build(env, source, sink);
  auto client = env.executeAsync("after");
  waitUntil([&] { return sink.getResults().size() == 5; }, "the restored timers");
  source.close();
  client.wait();
  auto got = sink.getResults();
  std::sort(got.begin(), got.end());
  std::vector<std::pair<int64_t, int64_t>> timers;
  for (const Fired& f : got) timers.push_back({f.key, f.time});
  std::vector<std::pair<int64_t, int64_t>> expected{{0, 1500}, {1, 1500}, {2, 1500}, {3, 1500}, {4, 1500}};
  EXPECT_EQ(timers, expected);
  fs::remove_all(dir);
}

// Counts a window's records and notes when it fired.
struct CountWindow : ProcessWindowFunction<Event, Fired, int64_t> {
  void process(const int64_t& key, Context& ctx, std::span<const Event> events, Collector<Fired>& out) override {
    out.collect({key, ctx.window().start, static_cast<int64_t>(events.size()), ctx.currentProcessingTime(),
                 ctx.window().maxTimestamp()});
  }
};

// Phases of records: phase k arrives while the clock reads k·100 + 10, for keys with
// varying counts.
std::vector<std::vector<Event>> phases(int count) {
  std::vector<std::vector<Event>> out(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k)
    for (int64_t i = 0; i < 40 + 17 * k; ++i) out[static_cast<size_t>(k)].push_back({(i * i + k) % 7, i});
  return out;
}

// Runs `windowed` over the phases: before phase k the clock is set to k·100 + 10 and
// afterwards windows ending by then have fired; the last phase's records are pushed and
// the input closed without moving the clock again.
template <class Build>
std::vector<Fired> runPhases(const std::string& backend, const std::vector<std::vector<Event>>& input,
                             size_t expectedBeforeLast, Build build) {
  auto clock = std::make_shared<ManualClock>(10);
  StreamExecutionEnvironment env;
  env.setParallelism(2).setClock(clock);
  env.setStateBackend(stateBackendFromName(backend));
  GatedSource source;
  CollectSink<Fired> sink;
  build(env.fromSource(source, WatermarkStrategy<Event>::noWatermarks(), "gated")
            .keyBy([](const Event& e) { return e.key; }))
      .sinkTo(sink);
  auto client = env.executeAsync("processing-time windows");
  uint64_t pushed = 0;
  for (size_t k = 0; k < input.size(); ++k) {
    clock->setTime(static_cast<int64_t>(k) * 100 + 10);
    source.push(input[k]);
    pushed += input[k].size();
    waitUntil([&] { return recordsIn(client, "Window") == pushed; }, "a phase's records");
  }
  // Nothing may fire for the last phase: it is pushed, then the input ends.
  waitUntil([&] { return sink.getResults().size() == expectedBeforeLast; }, "the windows before the last phase");
  source.close();
  client.wait();
  auto got = sink.getResults();
  for (const Fired& f : got) EXPECT_GE(f.firedAt, f.due) << "a window fired before its end";
  std::sort(got.begin(), got.end());
  return got;
}

// Expected firings from counts per (key, window start), in Fired's order.
std::vector<Fired> firings(const std::map<std::pair<int64_t, int64_t>, int64_t>& counts) {
  std::vector<Fired> out;
  for (auto& [kw, n] : counts) out.push_back({kw.first, kw.second, n, 0});
  return out;
}

// Each window's key, start and count as expected (when they fired is checked apart).
void expectWindows(const std::vector<Fired>& got, const std::vector<Fired>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::tie(got[i].key, got[i].time, got[i].count), std::tie(expected[i].key, expected[i].time, expected[i].count));
}

TEST_P(ProcessingTimeOn, TumblingWindowsHoldWhatCameWhileTheClockWasInThemAndFireAfter) {
  auto input = phases(6);
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;  // (key, window start) -> records
  for (size_t k = 0; k + 1 < input.size(); ++k)
    for (const Event& e : input[k]) ++counts[{e.key, static_cast<int64_t>(k) * 100}];
  std::vector<Fired> expected = firings(counts);
  auto got = runPhases(GetParam(), input, expected.size(), [](auto keyed) {
    return keyed.window(TumblingProcessingTimeWindows::of(100ms)).process(CountWindow{});
  });
  expectWindows(got, expected);
  // The same through the general window operator (a trigger given explicitly).
  auto triggered = runPhases(GetParam(), input, expected.size(), [](auto keyed) {
    return keyed.window(TumblingProcessingTimeWindows::of(100ms))
        .trigger(ProcessingTimeTrigger::create())
        .process(CountWindow{});
  });
  expectWindows(triggered, expected);
}

TEST_P(ProcessingTimeOn, SlidingWindowsCountEachRecordInEveryWindowOfItsTime) {
  auto input = phases(6);
  // Windows of 200 ms every 100 ms: phase k's records are in the windows starting at
  // 100(k − 1) and 100k; a window fires once the clock passes its end, so those ending
  // after the last phase began never do.
  const int64_t lastStart = static_cast<int64_t>(input.size() - 1) * 100 + 10;
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;
  for (size_t k = 0; k < input.size(); ++k)
    for (int64_t start : {static_cast<int64_t>(k) * 100 - 100, static_cast<int64_t>(k) * 100})
      if (start + 199 < lastStart)
        for (const Event& e : input[k]) ++counts[{e.key, start}];
  std::vector<Fired> expected = firings(counts);
  auto got = runPhases(GetParam(), input, expected.size(), [](auto keyed) {
    return keyed.window(SlidingProcessingTimeWindows::of(200ms, 100ms)).process(CountWindow{});
  });
  expectWindows(got, expected);
  auto evicting = runPhases(GetParam(), input, expected.size(), [](auto keyed) {  // the general operator, nothing evicted
    return keyed.window(SlidingProcessingTimeWindows::of(200ms, 100ms))
        .evictor(CountEvictor::of(1'000'000))
        .process(CountWindow{});
  });
  expectWindows(evicting, expected);
}

TEST_P(ProcessingTimeOn, SessionWindowsCloseAfterAGapOfTheClock) {
  // A gap of 150 ms with phases 100 ms apart: a key seen in consecutive phases stays in
  // one session; key 6 appears only in phases 0 and 3, so it has two sessions.
  std::vector<std::vector<Event>> input{
      {{1, 0}, {6, 0}}, {{1, 0}, {1, 0}}, {{1, 0}}, {{6, 0}, {6, 0}}, {{2, 0}}, {{2, 0}}};
  // Key 1: [10, 210 + 150) = [10, 360). Key 6: [10, 160) and [310, 460). Key 2 (phases 4
  // and 5, [410, 660)) never fires: the clock stops at 510.
  std::vector<Fired> expected{{1, 10, 4}, {6, 10, 1}, {6, 310, 2}};
  auto got = runPhases(GetParam(), input, expected.size(), [](auto keyed) {
    return keyed.window(ProcessingTimeSessionWindows::withGap(150ms)).process(CountWindow{});
  });
  expectWindows(got, expected);
}

// As in Flink, a window [0, 100) fires once the clock has passed 99, not while it reads
// 99: records that come in that millisecond still belong to it, and it fires once.
TEST_P(ProcessingTimeOn, RecordsInAWindowsLastMillisecondJoinItAndItFiresOnce) {
  auto clock = std::make_shared<ManualClock>(99);
  StreamExecutionEnvironment env;
  env.setParallelism(1).setClock(clock);
  env.setStateBackend(stateBackendFromName(GetParam()));
  GatedSource source;
  CollectSink<Fired> sink;
  env.fromSource(source, WatermarkStrategy<Event>::noWatermarks(), "gated")
      .keyBy([](const Event& e) { return e.key; })
      .window(TumblingProcessingTimeWindows::of(100ms))
      .process(CountWindow{})
      .sinkTo(sink);
  auto client = env.executeAsync("last millisecond");
  source.push({{1, 0}});
  waitUntil([&] { return recordsIn(client, "Window") == 1; }, "the first record");
  source.push({{1, 1}});
  waitUntil([&] { return recordsIn(client, "Window") == 2; }, "the second record");
  clock->setTime(100);
  waitUntil([&] { return !sink.getResults().empty(); }, "the window");
  source.close();
  client.wait();
  auto got = sink.getResults();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::tie(got[0].key, got[0].time, got[0].count), std::make_tuple(int64_t{1}, int64_t{0}, int64_t{2}));
  EXPECT_EQ(got[0].firedAt, 100);
}

TEST(ProcessingTimeWindows, BadSizesAreClearErrorsNamingTheAssigner) {
  try {
    TumblingProcessingTimeWindows::of(0ms);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TumblingProcessingTimeWindows: the size must be positive"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(SlidingProcessingTimeWindows::of(100ms, 200ms), Error);
  EXPECT_THROW(ProcessingTimeSessionWindows::withGap(-1ms), Error);
}

}  // namespace
}  // namespace weir
