// Event timestamps and watermarks through whole jobs.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <mutex>

#include "support/event_time_test_events.h"
#include "support/gated_source.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

struct Event {
  int64_t key = 0;
  int64_t time = 0;
};

// What a process function saw of each record: its timestamp and the watermark then.
struct Seen {
  int subtask;
  int64_t key;
  int64_t time;
  std::optional<int64_t> timestamp;
  int64_t watermark;
};

struct Observe : ProcessFunction<Event, Seen> {
  void processElement(const Event& e, Context& ctx, Collector<Seen>& out) override {
    out.collect({getRuntimeContext().getIndexOfThisSubtask(), e.key, e.time, ctx.timestamp(),
                 ctx.timerService().currentWatermark()});
  }
};

TEST(Watermarks, TimestampsFollowRecordsThroughKeyByAndWatermarksNeverPassThem) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  env.setAutoWatermarkInterval(1ms);
  CollectSink<Seen> sink;
  const int64_t n = 200000;
  // Per source subtask the times only grow (monotonous), by 1 ms per record.
  env.fromSource(DataGeneratorSource([](int64_t i) { return Event{i % 97, 1'000'000 + i}; }, n),
                 WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner(
                     [](const Event& e, int64_t) { return e.time; }),
                 "events")
      .map([](const Event& e) { return e; })
      .keyBy([](const Event& e) { return e.key; })
      .process(Observe{})
      .sinkTo(sink);
  env.execute();
  auto seen = sink.getResults();
  ASSERT_EQ(seen.size(), static_cast<size_t>(n));
  std::map<int, int64_t> lastWatermark;
  bool sawAWatermark = false;
  for (auto& s : seen) {
    ASSERT_TRUE(s.timestamp.has_value());
    EXPECT_EQ(*s.timestamp, s.time);  // the assigner's timestamp travelled with the record
    // Monotonous sources: no record is behind the watermark its operator had seen.
    EXPECT_LT(s.watermark, s.time);
    // An operator's watermark never goes back.
    auto [it, first] = lastWatermark.try_emplace(s.subtask, s.watermark);
    if (!first) {
      EXPECT_GE(s.watermark, it->second);
      it->second = s.watermark;
    }
    sawAWatermark = sawAWatermark || s.watermark > kMinWatermark;
  }
  EXPECT_TRUE(sawAWatermark);  // watermarks did flow during the job, not only at the end
}

TEST(Watermarks, BoundedOutOfOrdernessHoldsTheWatermarkBackByTheBound) {
  StreamExecutionEnvironment env;
  env.setAutoWatermarkInterval(1ms);
  CollectSink<Seen> sink;
  // Times jump around within 50 ms of the running maximum.
  env.fromSource(DataGeneratorSource([](int64_t i) { return Event{0, 10'000 + i - (i * 7919) % 50}; }, 100000),
                 WatermarkStrategy<Event>::forBoundedOutOfOrderness(50ms).withTimestampAssigner(
                     [](const Event& e) { return e.time; }),
                 "events")
      .rebalance()
      .process(Observe{})
      .sinkTo(sink);
  env.execute();
  int64_t maxTime = INT64_MIN;
  for (auto& s : sink.getResults()) {
    maxTime = std::max(maxTime, s.time);
    // Never ahead of (highest timestamp emitted so far − 50 ms − 1).
    EXPECT_LE(s.watermark, maxTime - 50 - 1) << s.time;
    EXPECT_LT(s.watermark, s.time);  // within the bound, nothing is late
  }
}

TEST(Watermarks, RecordsWithoutAnAssignerCarryNoTimestamp) {
  StreamExecutionEnvironment env;
  CollectSink<Seen> sink;
  env.fromElements(Event{1, 5}).process(Observe{}).sinkTo(sink);
  env.execute();
  ASSERT_EQ(sink.getResults().size(), 1u);
  EXPECT_FALSE(sink.getResults()[0].timestamp.has_value());
  EXPECT_EQ(sink.getResults()[0].watermark, kMinWatermark);
}

TEST(Watermarks, BadStrategiesAreClearErrorsWhenTheJobIsBuilt) {
  EXPECT_THROW(WatermarkStrategy<Event>::forBoundedOutOfOrderness(-1ms), Error);
  EXPECT_THROW(WatermarkStrategy<Event>::forMonotonousTimestamps().withIdleness(0ms), Error);
  StreamExecutionEnvironment env;
  EXPECT_THROW(env.setAutoWatermarkInterval(0ms), Error);
  try {
    env.fromSource(DataGeneratorSource([](int64_t i) { return Event{0, i}; }, 10),
                   WatermarkStrategy<Event>::forMonotonousTimestamps(), "no assigner");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("withTimestampAssigner"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no assigner"), std::string::npos) << e.what();
  }
}

TEST(Watermarks, AThrowingTimestampAssignerFailsTheJobNamingTheSource) {
  StreamExecutionEnvironment env;
  env.fromSource(DataGeneratorSource([](int64_t i) { return Event{0, i}; }, 1000),
                 WatermarkStrategy<Event>::forMonotonousTimestamps().withTimestampAssigner([](const Event& e) -> int64_t {
                   if (e.time == 500) throw std::runtime_error("no time for 500");
                   return e.time;
                 }),
                 "timed")
      .sinkTo(DiscardingSink<Event>());
  try {
    env.execute();
    FAIL();
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("operator 'timed'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no time for 500"), std::string::npos) << e.what();
  }
}

// One reader over splits it reads together, a batch of each in turn every millisecond,
// as a reader of several partitions would; it reports which records came from which
// split when `tellRuns` (with `miscount` added to each run's count, to test bad readers).
struct InterleavedSplit {
  std::string id;
  int64_t key = 0, start = 0, step = 1, count = 0;
  int64_t stallAfter = -1;  // stops after this many records until the other splits finished
};

class InterleavedSource final : public Source<Event> {
 public:
  InterleavedSource(std::vector<InterleavedSplit> splits, size_t batch, bool tellRuns, size_t miscount = 0)
      : splits_(std::move(splits)), batch_(batch), tellRuns_(tellRuns), miscount_(miscount) {}
  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override {
    return std::make_unique<SharedSplitEnumerator>(std::deque<std::unique_ptr<SourceSplit>>{});
  }
  std::unique_ptr<SourceReader<Event>> createReader(const SourceReaderContext&) const override {
    return std::make_unique<Reader>(splits_, batch_, tellRuns_, miscount_);
  }
  int maxParallelism() const override { return 1; }

 private:
  class Reader final : public SourceReader<Event> {
   public:
    Reader(std::vector<InterleavedSplit> splits, size_t batch, bool tellRuns, size_t miscount)
        : splits_(std::move(splits)), next_(splits_.size(), 0), batch_(batch), tellRuns_(tellRuns),
          miscount_(miscount) {}
    InputStatus pollNext(std::vector<Event>& out, size_t maxRecords) override {
      runs_.clear();
      if (std::chrono::steady_clock::now() < due_) return InputStatus::NOTHING_AVAILABLE;
      due_ = std::chrono::steady_clock::now() + 1ms;
      bool othersDone = true, allDone = true;
      for (size_t i = 0; i < splits_.size(); ++i) {
        const auto& s = splits_[i];
        bool done = next_[i] == s.count;
        allDone = allDone && done;
        if (s.stallAfter < 0) othersDone = othersDone && done;
      }
      if (allDone) return InputStatus::END_OF_INPUT;
      for (size_t i = 0; i < splits_.size(); ++i) {
        const auto& s = splits_[i];
        if (next_[i] == s.count) continue;
        int64_t limit = s.stallAfter >= 0 && !othersDone ? s.stallAfter : s.count;
        size_t n = 0;
        for (; n < batch_ && next_[i] < limit && out.size() < maxRecords; ++n, ++next_[i])
          out.push_back({s.key, s.start + next_[i] * s.step});
        const bool finished = next_[i] == s.count;
        if (tellRuns_ && (n > 0 || finished)) runs_.push_back({s.id, n + miscount_, finished});
      }
      return InputStatus::NOTHING_AVAILABLE;
    }
    std::chrono::steady_clock::time_point nextPollTime() const override { return due_; }
    std::span<const SplitRun> splitRuns() const override { return runs_; }

   private:
    std::vector<InterleavedSplit> splits_;
    std::vector<int64_t> next_;
    size_t batch_;
    bool tellRuns_;
    size_t miscount_;
    std::vector<SplitRun> runs_;
    std::chrono::steady_clock::time_point due_{};
  };

  std::vector<InterleavedSplit> splits_;
  size_t batch_;
  bool tellRuns_;
  size_t miscount_;
};

std::vector<Seen> observeInterleaved(const InterleavedSource& source, WatermarkStrategy<Event> strategy) {
  StreamExecutionEnvironment env;
  env.setParallelism(1).setAutoWatermarkInterval(1ms);
  CollectSink<Seen> sink;
  env.fromSource(source, strategy.withTimestampAssigner([](const Event& e) { return e.time; }), "interleaved")
      .process(Observe{})
      .sinkTo(sink);
  env.execute();
  return sink.getResults();
}

// Two splits read together, one ten times faster in event time than the other, each in
// order: with the reader saying which record came from which split, the watermark is the
// slower split's and no record is behind it (Flink's per-split watermarks); generated
// over the reader's records as a whole, the fast split's time runs ahead and the slow
// split's records fall behind the watermark.
TEST(Watermarks, PerSplitWatermarksFollowTheSlowestSplit) {
  const std::vector<InterleavedSplit> splits{{"fast", 1, 1000, 10, 2000}, {"slow", 2, 1000, 1, 4000}};
  auto strategy = WatermarkStrategy<Event>::forMonotonousTimestamps();
  auto seen = observeInterleaved(InterleavedSource(splits, 16, true), strategy);
  ASSERT_EQ(seen.size(), 6000u);
  int64_t lastWatermark = kMinWatermark;
  for (const Seen& s : seen) {
    ASSERT_LT(s.watermark, s.time) << "split of key " << s.key << ": record behind the watermark";
    ASSERT_GE(s.watermark, lastWatermark);
    lastWatermark = s.watermark;
  }
  EXPECT_GT(lastWatermark, 1000) << "watermarks flowed during the job";

  size_t behind = 0;
  for (const Seen& s : observeInterleaved(InterleavedSource(splits, 16, false), strategy))
    behind += s.watermark >= s.time ? 1 : 0;
  EXPECT_GT(behind, 1000u) << "per reader, the slow split's records would be behind the watermark";
}

// A split that stops sending holds the watermark back, as any split behind does, until
// the strategy's idleness timeout marks it idle; the split still running then moves it.
TEST(Watermarks, AnIdleSplitStopsHoldingTheWatermarkBack) {
  // "stalls" sends 5 records (times 1000-1004), then nothing until "runs" (one record a
  // millisecond for ~300 ms, times 1000-1299) is done.
  const std::vector<InterleavedSplit> splits{{"runs", 1, 1000, 1, 300}, {"stalls", 2, 1000, 1, 10, 5}};
  auto highestWhileRunning = [&](WatermarkStrategy<Event> strategy) {
    int64_t highest = kMinWatermark;
    for (const Seen& s : observeInterleaved(InterleavedSource(splits, 1, true), strategy))
      if (s.key == 1) highest = std::max(highest, s.watermark);
    return highest;
  };
  EXPECT_LE(highestWhileRunning(WatermarkStrategy<Event>::forMonotonousTimestamps()), 1003)
      << "the stalled split's watermark (its highest time 1004, minus 1) holds the source back";
  EXPECT_GT(highestWhileRunning(WatermarkStrategy<Event>::forMonotonousTimestamps().withIdleness(20ms)), 1100)
      << "idle after 20 ms, the stalled split no longer holds the source back";
}

TEST(Watermarks, SplitRunsThatDoNotMatchTheRecordsFailTheJob) {
  try {
    observeInterleaved(InterleavedSource({{"a", 1, 0, 1, 100}}, 16, true, 1),
                       WatermarkStrategy<Event>::forMonotonousTimestamps());
    FAIL() << "no error";
  } catch (const JobExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("splitRuns() cover 17 records, but its pollNext appended 16"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("interleaved"), std::string::npos) << e.what();
  }
}

struct CountEvents : AggregateFunction<event_time_test::Event, int64_t, int64_t> {
  int64_t createAccumulator() override { return 0; }
  int64_t add(const event_time_test::Event&, int64_t acc) override { return acc + 1; }
  int64_t getResult(const int64_t& acc) override { return acc; }
  int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
};

// assignTimestampsAndWatermarks applies withIdleness as Flink does: an input that sends
// nothing for the timeout (of the job's processing time) is marked idle, and the windows
// downstream follow the other input's watermark instead of waiting for it forever.
TEST(Watermarks, AssignTimestampsAndWatermarksMarksAQuietStreamIdle) {
  using event_time_test::punctuated;
  using ET = event_time_test::Event;
  for (bool idleness : {false, true}) {
    auto clock = std::make_shared<ManualClock>(0);
    StreamExecutionEnvironment env;
    env.setParallelism(1).setClock(clock);
    test::GatedSource<ET> busy, quiet;
    CollectSink<int64_t> counts;
    auto quietStrategy = idleness ? punctuated(0).withIdleness(1s) : punctuated(0);
    auto a = env.fromSource(busy, WatermarkStrategy<ET>::noWatermarks(), "busy").assignTimestampsAndWatermarks(punctuated(0));
    auto b = env.fromSource(quiet, WatermarkStrategy<ET>::noWatermarks(), "quiet").assignTimestampsAndWatermarks(quietStrategy);
    a.unionWith(b)
        .keyBy([](const ET& e) { return e.key; })
        .window(TumblingEventTimeWindows::of(10ms))
        .aggregate(CountEvents{})
        .sinkTo(counts);
    quiet.push({{7, 1, 0}});
    std::vector<ET> events;
    for (int64_t t = 1; t <= 50; ++t) events.push_back({7, t, t});
    busy.push(events);
    auto client = env.executeAsync("idle input");
    test::waitUntil([&] { return test::recordsIn(client, "Window") == 51; }, "every record at the window");
    // The quiet input's watermark is 0 (its record at 1, bound 0): nothing fires yet.
    EXPECT_TRUE(counts.getResults().empty());
    clock->advance(1500ms);  // past the idle timeout
    if (idleness) {
      test::waitUntil([&] { return counts.getResults().size() == 5; }, "the windows the busy input's watermark closes");
      // [0, 10) has the quiet record and the busy ones at 1-9, [10, 50) ten each: the busy
      // input's watermark (49) closes them all; [50, 60) stays open.
      EXPECT_EQ(counts.getResults(), (std::vector<int64_t>{10, 10, 10, 10, 10}));
    }
    quiet.close();
    busy.close();
    client.wait();
    // Without idleness every window waited for the end of both inputs.
    EXPECT_EQ(counts.getResults(), (std::vector<int64_t>{10, 10, 10, 10, 10, 1}));
  }
}

}  // namespace
}  // namespace weir
