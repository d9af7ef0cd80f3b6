// Keyed windows on both state backends: on RocksDB their contents are RocksDB state, and
// every assigner and window function gives what a brute force computed here gives, late
// records included, as on the heap.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include <unistd.h>

#include <filesystem>

#include "support/event_time_test_events.h"
#include "support/gated_source.h"
#include "checkpoint/checkpoint_storage.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

using event_time_test::Event;
using event_time_test::punctuated;

using Result = std::tuple<int64_t, int64_t, int64_t>;  // key, the result's timestamp (window end - 1), sum

enum class Function { kReduce, kAggregate, kProcess };
const char* nameOf(Function f) {
  return f == Function::kReduce ? "reduce" : f == Function::kAggregate ? "aggregate" : "process";
}

struct SumAggregate : AggregateFunction<Event, Event, Event> {
  Event createAccumulator() override { return {-1, 0, 0}; }  // no key yet
  Event add(const Event& e, Event acc) override { return {e.key, 0, acc.value + e.value}; }
  Event getResult(const Event& acc) override { return acc; }
  Event merge(Event a, const Event& b) override { return {std::max(a.key, b.key), 0, a.value + b.value}; }
};

// Sees every record of the window (the contents are the records, not an accumulator).
struct SumRecords : ProcessWindowFunction<Event, Event, int64_t> {
  void process(const int64_t& key, Context&, std::span<const Event> records, Collector<Event>& out) override {
    int64_t sum = 0;
    for (const Event& e : records) sum += e.value;
    out.collect({key, 0, sum});
  }
};

struct Stamp : ProcessFunction<Event, Result> {
  void processElement(const Event& e, Context& ctx, Collector<Result>& out) override {
    out.collect({e.key, ctx.timestamp().value_or(-1), e.value});
  }
};

struct Outputs {
  std::vector<Result> results;
  std::vector<Event> late;
};

// The windows of `assigner` over `events` (watermarks `bound` behind the highest
// timestamp), summed by `function`, at parallelism 2 on `backend`.
template <class Assigner>
Outputs run(const std::string& backend, Assigner assigner, Function function, const std::vector<Event>& events,
            int64_t bound, std::chrono::milliseconds lateness = 0ms) {
  StreamExecutionEnvironment env;
  env.setParallelism(2).setStateBackend(stateBackendFromName(backend));
  CollectSink<Result> sink;
  CollectSink<Event> lateSink;
  OutputTag<Event> lateTag("late");
  auto windowed = env.fromSource(detail::CollectionSource<Event>(events), punctuated(bound), "events")
                      .keyBy([](const Event& e) { return e.key; })
                      .window(assigner)
                      .allowedLateness(lateness)
                      .sideOutputLateData(lateTag);
  auto sums = function == Function::kReduce
                  ? windowed.reduce([](const Event& a, const Event& b) { return Event{a.key, 0, a.value + b.value}; })
              : function == Function::kAggregate ? windowed.aggregate(SumAggregate{})
                                                 : windowed.process(SumRecords{});
  sums.process(Stamp{}).sinkTo(sink);
  sums.getSideOutput(lateTag).sinkTo(lateSink);
  env.execute();
  Outputs out{sink.getResults(), lateSink.getResults()};
  std::sort(out.results.begin(), out.results.end());
  std::sort(out.late.begin(), out.late.end());
  return out;
}

// Keys 0..4, values 1..9, timestamps out of order by up to 30 ms, and no record in the
// last 300 ms of every second (so sessions with a smaller gap end there).
std::vector<Event> disordered(int64_t n) {
  std::vector<Event> events;
  for (int64_t i = 0; i < n; ++i) {
    Event e{i % 5, 1000 + i - (i * 7919) % 30, 1 + (i * 31) % 9};
    if (e.time % 1000 < 700) events.push_back(e);
  }
  return events;
}

std::vector<Result> sorted(std::map<std::pair<int64_t, int64_t>, int64_t> sums) {
  std::vector<Result> out;
  for (const auto& [kw, sum] : sums) out.emplace_back(kw.first, kw.second, sum);
  return out;
}

TEST(WindowsOnBothBackends, EveryAssignerAndFunctionEqualsABruteForce) {
  const auto events = disordered(8000);
  std::map<std::pair<int64_t, int64_t>, int64_t> tumbling, sliding;  // (key, window end - 1) -> sum
  for (const Event& e : events) {
    tumbling[{e.key, e.time - e.time % 100 + 99}] += e.value;
    for (int64_t start = e.time - e.time % 25; start > e.time - 100; start -= 25) sliding[{e.key, start + 99}] += e.value;
  }
  // Sessions with a gap of 50 ms: a key's records (5 ms apart) until each second's hole.
  std::map<std::pair<int64_t, int64_t>, int64_t> sessions;
  std::map<int64_t, std::vector<Event>> byKey;
  for (const Event& e : events) byKey[e.key].push_back(e);
  for (auto& [key, list] : byKey) {
    std::sort(list.begin(), list.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
    int64_t sum = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      sum += list[i].value;
      if (i + 1 == list.size() || list[i + 1].time - list[i].time > 50) {  // windows that touch merge
        sessions[{key, list[i].time + 50 - 1}] = sum;
        sum = 0;
      }
    }
  }
  for (const std::string backend : {"heap", "rocksdb"}) {
    for (Function f : {Function::kReduce, Function::kAggregate, Function::kProcess}) {
      SCOPED_TRACE(backend + " " + nameOf(f));
      Outputs t = run(backend, TumblingEventTimeWindows::of(100ms), f, events, 30);
      EXPECT_EQ(t.results, sorted(tumbling));
      Outputs s = run(backend, SlidingEventTimeWindows::of(100ms, 25ms), f, events, 30);
      EXPECT_EQ(s.results, sorted(sliding));
      Outputs g = run(backend, EventTimeSessionWindows::withGap(50ms), f, events, 30);
      EXPECT_EQ(g.results, sorted(sessions));
      EXPECT_TRUE(t.late.empty() && s.late.empty() && g.late.empty());
    }
  }
}

// Records in time order but one batch, whose records are up to 300 ms behind the
// watermark, with 50 ms of allowed lateness: windows fire again for late records within
// it, and the rest go to the side output. RocksDB does exactly what the heap does (whose
// late-data behaviour the window tests check against brute force).
TEST(WindowsOnBothBackends, LateRecordsFireAgainOrGoAsideAsOnTheHeap) {
  const auto b = static_cast<int64_t>(detail::kBatchRecords<Event>);
  std::vector<Event> events;
  for (int64_t i = 0; i < 10 * b; ++i) {
    Event e{i % 5, 1000 + i, 1 + (i * 31) % 9};
    if (i >= 6 * b && i < 7 * b) e.time -= 1 + (i * 7919) % 300;
    events.push_back(e);
  }
  for (Function f : {Function::kReduce, Function::kProcess}) {
    SCOPED_TRACE(nameOf(f));
    Outputs heapTumbling = run("heap", TumblingEventTimeWindows::of(100ms), f, events, 0, 50ms);
    Outputs heapSliding = run("heap", SlidingEventTimeWindows::of(100ms, 25ms), f, events, 0, 50ms);
    ASSERT_FALSE(heapTumbling.late.empty()) << "nothing went aside: the test tests nothing";
    auto firedAgain = std::adjacent_find(heapTumbling.results.begin(), heapTumbling.results.end(),
                                         [](const Result& a, const Result& b) {
                                           return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b);
                                         });
    ASSERT_NE(firedAgain, heapTumbling.results.end()) << "no window fired again: the test tests nothing";
    Outputs rocksTumbling = run("rocksdb", TumblingEventTimeWindows::of(100ms), f, events, 0, 50ms);
    Outputs rocksSliding = run("rocksdb", SlidingEventTimeWindows::of(100ms, 25ms), f, events, 0, 50ms);
    EXPECT_EQ(rocksTumbling.results, heapTumbling.results);
    EXPECT_EQ(rocksTumbling.late, heapTumbling.late);
    EXPECT_EQ(rocksSliding.results, heapSliding.results);
    EXPECT_EQ(rocksSliding.late, heapSliding.late);
  }
}

// Sessions (gap 20 ms) that break in a 50 ms hole every 200 ms, and a batch of records
// up to 600 ms late with 400 ms of allowed lateness (the watermark moves once a batch, a
// batch spans 1024 ms): late records merge into sessions that fired (which fire again),
// open sessions of their own in the holes, bridge two sessions, or go aside. RocksDB
// gives exactly what the heap gives.
TEST(WindowsOnBothBackends, LateRecordsMergeIntoSessionsAsOnTheHeap) {
  const auto b = static_cast<int64_t>(detail::kBatchRecords<Event>);
  std::vector<Event> events;
  for (int64_t i = 0; i < 10 * b; ++i) {
    Event e{i % 5, 1000 + i, 1 + (i * 31) % 9};
    if (e.time % 200 >= 150) continue;
    if (i >= 6 * b && i < 7 * b) e.time -= 1 + (i * 7919) % 600;
    events.push_back(e);
  }
  for (Function f : {Function::kReduce, Function::kAggregate, Function::kProcess}) {
    SCOPED_TRACE(nameOf(f));
    Outputs heap = run("heap", EventTimeSessionWindows::withGap(20ms), f, events, 0, 400ms);
    ASSERT_FALSE(heap.late.empty()) << "nothing went aside: the test tests nothing";
    auto firedAgain = std::adjacent_find(heap.results.begin(), heap.results.end(), [](const Result& a, const Result& b) {
      return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b);
    });
    ASSERT_NE(firedAgain, heap.results.end()) << "no session fired again: the test tests nothing";
    Outputs rocks = run("rocksdb", EventTimeSessionWindows::withGap(20ms), f, events, 0, 400ms);
    EXPECT_EQ(rocks.results, heap.results);
    EXPECT_EQ(rocks.late, heap.late);
  }
}

// A job restored with another allowed lateness than its checkpoint was taken with: the
// window's timers in the checkpoint were queued under the old lateness, and a record
// added after the restore must not take the window for a new one. Each window fires
// once, on both backends, whether its contents are an accumulator or the records.
TEST(WindowsOnBothBackends, ARestoreWithAnotherAllowedLatenessFiresEachWindowOnce) {
  namespace fs = std::filesystem;
  using std::chrono::milliseconds;
  const fs::path dir = fs::temp_directory_path() / ("weir-lateness-" + std::to_string(::getpid()));
  auto build = [](StreamExecutionEnvironment& env, const test::GatedSource<Event>& source, Function function,
                  milliseconds lateness, const CollectSink<Result>& sink) {
    auto windowed = env.fromSource(source,
                                   WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
                                       [](const Event& e) { return e.time; }),
                                   "gated")
                        .keyBy([](const Event& e) { return e.key; })
                        .window(TumblingEventTimeWindows::of(100ms))
                        .allowedLateness(lateness);
    auto sums = function == Function::kReduce
                    ? windowed.reduce([](const Event& a, const Event& b) { return Event{a.key, 0, a.value + b.value}; })
                    : windowed.process(SumRecords{});
    sums.uid("sums").process(Stamp{}).sinkTo(sink);
  };
  for (const std::string backend : {"heap", "rocksdb"}) {
    for (Function function : {Function::kReduce, Function::kProcess}) {
      for (auto [before, after] : {std::pair{milliseconds(50), milliseconds(0)}, std::pair{milliseconds(0), milliseconds(50)}}) {
        SCOPED_TRACE(backend + ", " + nameOf(function) + ", lateness " + std::to_string(before.count()) + " ms, then " +
                     std::to_string(after.count()) + " ms");
        fs::remove_all(dir);
        fs::create_directories(dir);
        {  // Keys 1 and 2 in window [0, 100), checkpointed before the watermark reaches its end.
          StreamExecutionEnvironment env;
          env.setParallelism(2).setStateBackend(stateBackendFromName(backend));
          env.enableCheckpointing(10ms);
          env.getCheckpointConfig().setCheckpointStorage(dir.string());
          env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
          test::GatedSource<Event> source;
          CollectSink<Result> sink;
          build(env, source, function, before, sink);
          auto client = env.executeAsync("before");
          source.push({{1, 10, 3}, {2, 20, 4}});
          test::waitUntil([&] { return test::recordsIn(client, "Window") == 2; }, "the records");
          const int64_t after = client.getMetrics().numberOfCompletedCheckpoints + 1;
          test::waitUntil([&] { return client.getMetrics().numberOfCompletedCheckpoints > after; }, "a checkpoint");
          client.cancel();
          client.wait();
          ASSERT_TRUE(sink.getResults().empty());
        }
        StreamExecutionEnvironment env;
        env.setParallelism(2).setStateBackend(stateBackendFromName(backend));
        env.setRestorePath(checkpoint::findLatestCheckpoint(dir.string()));
        test::GatedSource<Event> source;
        CollectSink<Result> sink;
        build(env, source, function, after, sink);
        auto client = env.executeAsync("after");
        source.push({{1, 30, 5}, {3, 250, 1}});  // one more for key 1's window, then past its end
        source.close();
        client.wait();
        auto got = sink.getResults();
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, (std::vector<Result>{{1, 99, 8}, {2, 99, 4}, {3, 299, 1}}));
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
