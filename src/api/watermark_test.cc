// Event timestamps and watermarks through whole jobs.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

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

}  // namespace
}  // namespace weir
