#include "weir/detail/core/metric_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

#include "weir/error.h"
#include "weir/metrics.h"

namespace weir::detail {
namespace {

std::map<std::string, double> byId(const MetricRegistry& registry) {
  std::map<std::string, double> out;
  for (const auto& v : registry.values()) out[v.identifier()] = v.value;
  return out;
}

TEST(MetricRegistry, CountersAreNamedByOperatorAndGroupsAndCountedOnce) {
  MetricRegistry registry;
  MetricGroup op(&registry, "Source: clicks");
  Counter a = op.counter("events");
  Counter again = op.counter("events");  // the same counter, as Flink's is per name
  Counter partition = op.addGroup("KafkaSourceReader").addGroup("topic", "t").addGroup("partition", "0").counter("n");
  a.inc();
  again.inc(2);
  partition.inc(5);
  EXPECT_EQ(a.getCount(), 3u);
  auto m = byId(registry);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m["Source: clicks.events"], 3);
  EXPECT_EQ(m["Source: clicks.KafkaSourceReader.topic.t.partition.0.n"], 5);
  EXPECT_EQ(op.addGroup("KafkaSourceReader").addGroup("topic", "t").getMetricIdentifier("x"),
            "Source: clicks.KafkaSourceReader.topic.t.x");
  auto values = registry.values();
  EXPECT_EQ(values[0].kind, MetricKind::kCounter);
  EXPECT_EQ(values[1].groups, (MetricGroups{{"KafkaSourceReader", ""}, {"topic", "t"}, {"partition", "0"}}));
}

TEST(MetricRegistry, GaugesAreReadOnlyWhenTheSubtaskUpdatesThem) {
  MetricRegistry registry;
  MetricGroup op(&registry, "map");
  int calls = 0;
  double queued = 7;
  op.gauge("queued", [&] {
    ++calls;
    return queued;
  });
  EXPECT_TRUE(registry.needsUpdates());
  EXPECT_TRUE(registry.values().empty());  // not read yet: no value
  registry.update();
  EXPECT_EQ(byId(registry)["map.queued"], 7);
  queued = 9;
  EXPECT_EQ(byId(registry)["map.queued"], 7);  // readers see the last update
  EXPECT_EQ(calls, 1);
  registry.update();
  EXPECT_EQ(byId(registry)["map.queued"], 9);
  queued = std::numeric_limits<double>::quiet_NaN();  // no value to show
  registry.update();
  EXPECT_TRUE(registry.values().empty());
}

TEST(MetricRegistry, AThrowingGaugeShowsNoValueUntilItWorksAgain) {
  MetricRegistry registry;
  bool fail = false;
  MetricGroup(&registry, "map").gauge("g", [&]() -> double {
    if (fail) throw std::runtime_error("boom");
    return 1;
  });
  registry.update();
  EXPECT_EQ(registry.values().size(), 1u);
  fail = true;
  testing::internal::CaptureStderr();
  registry.update();
  registry.update();  // said once, not at every update
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "weir: gauge 'map.g' failed: boom; it shows no value until it returns one\n");
  EXPECT_TRUE(registry.values().empty());
  fail = false;
  registry.update();
  EXPECT_EQ(registry.values().size(), 1u);
  // Anything thrown, not only std::exception.
  MetricGroup(&registry, "map").gauge("odd", []() -> double { throw 42; });
  testing::internal::CaptureStderr();
  registry.freeze();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "weir: gauge 'map.odd' failed: an exception that is not a std::exception; it shows no value until it "
            "returns one\n");
  EXPECT_EQ(registry.values().size(), 1u);
}

TEST(MetricRegistry, FreezeKeepsTheLastValueAndNeverCallsTheGaugeAgain) {
  MetricRegistry registry;
  int value = 1;
  bool closed = false;
  MetricGroup(&registry, "sink").gauge("open", [&] {
    EXPECT_FALSE(closed) << "a gauge was read after its operator closed";
    return value;
  });
  value = 4;
  registry.freeze();  // the last read happens here
  closed = true;
  registry.update();
  EXPECT_EQ(byId(registry)["sink.open"], 4);
  MetricGroup(&registry, "sink").gauge("late", [&] { return 1.0; });  // registered after: never read
  registry.update();
  EXPECT_EQ(byId(registry).count("sink.late"), 0u);

  // A failed subtask's operators may be half made: its gauges are not read again.
  MetricRegistry failed;
  MetricGroup(&failed, "sink").gauge("open", [&]() -> double {
    ADD_FAILURE() << "a failed subtask's gauge was read";
    return 0;
  });
  failed.freeze(/*lastRead=*/false);
  failed.update();
  EXPECT_TRUE(failed.values().empty());
}

TEST(MetricRegistry, OperatorsOfTheSameNameInAChainKeepTheirOwnMetrics) {
  MetricRegistry registry;
  MetricGroup first(&registry, registry.operatorScope("Map"));
  MetricGroup second(&registry, registry.operatorScope("Map"));
  MetricGroup other(&registry, registry.operatorScope("Filter"));
  first.counter("n").inc(1);
  second.counter("n").inc(2);
  other.counter("n").inc(3);
  auto m = byId(registry);
  EXPECT_EQ(m["Map.n"], 1);
  EXPECT_EQ(m["Map (2).n"], 2);
  EXPECT_EQ(m["Filter.n"], 3);
}

TEST(MetricRegistry, BadNamesAndCollisionsAreErrorsNamingTheMetric) {
  MetricRegistry registry;
  MetricGroup op(&registry, "map");
  op.counter("n");
  try {
    op.gauge("n", [] { return 1.0; });
    FAIL() << "a gauge took a counter's name";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "metric: 'map.n' is a counter already; a gauge needs another name");
  }
  op.gauge("g", [] { return 1.0; });
  EXPECT_THROW(op.counter("g"), Error);
  op.histogram("h");
  try {
    op.meter("h");
    FAIL() << "a meter took a histogram's name";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "metric: 'map.h' is a histogram already; a meter needs another name");
  }
  EXPECT_THROW(op.histogram("g"), Error);
  EXPECT_THROW(op.histogram("w", 0), Error);
  EXPECT_THROW(op.meter("s", std::chrono::seconds(0)), Error);
  EXPECT_THROW(op.histogram(""), Error);
  EXPECT_THROW(op.counter(""), Error);
  EXPECT_THROW(op.addGroup(""), Error);
  EXPECT_THROW(op.addGroup("topic", ""), Error);
  EXPECT_THROW(op.gauge("f", nullptr), Error);
}

TEST(MetricRegistry, ADetachedGroupCountsNothingAndShowsNothing) {
  MetricGroup detached;
  Counter c = detached.counter("n");
  c.inc(3);
  EXPECT_EQ(c.getCount(), 0u);
  detached.gauge("g", [] { return 1.0; });  // accepted, never read
  Histogram h = detached.histogram("h");
  h.update(5);
  EXPECT_EQ(h.getCount(), 0u);
  EXPECT_EQ(h.getStatistics().size(), 0u);
  Meter m = detached.meter("m");
  m.markEvent(4);
  EXPECT_EQ(m.getCount(), 0u);
  EXPECT_EQ(m.getRate(), 0);
}

// What Flink's REST API shows of a histogram, computed by hand for the values 1, 3, 5, 7
// (Commons Math's legacy estimate: the position q * (n + 1), interpolated).
TEST(MetricRegistry, AHistogramShowsItsFiguresOnceItHasAValue) {
  MetricRegistry registry;
  MetricGroup op(&registry, "map");
  Histogram h = op.addGroup("stage", "parse").histogram("latency", 4);
  EXPECT_TRUE(registry.needsUpdates());
  registry.update();
  EXPECT_TRUE(registry.values().empty());  // no value yet: nothing to show
  for (int64_t v : {100, 7, 3, 5, 1}) h.update(v);  // the window of 4 drops the 100
  EXPECT_EQ(op.addGroup("stage", "parse").histogram("latency", 99).getCount(), 5u);  // the same histogram
  EXPECT_TRUE(registry.values().empty());  // shown as of the subtask's last update
  registry.update();
  auto values = registry.values();
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].kind, MetricKind::kHistogram);
  EXPECT_EQ(values[0].identifier(), "map.stage.parse.latency");
  const HistogramFigures& f = values[0].histogram;
  EXPECT_EQ(f.count, 5u);     // every value given
  EXPECT_EQ(f.sum, 116);      // of every value given
  EXPECT_EQ(f.min, 1);
  EXPECT_EQ(f.max, 7);
  EXPECT_EQ(f.mean, 4);
  EXPECT_NEAR(f.stddev, std::sqrt(20.0 / 3), 1e-12);  // (9 + 1 + 1 + 9) / (4 - 1)
  EXPECT_EQ(f.p50, 4);     // position 2.5: 3 + 0.5 * (5 - 3)
  EXPECT_EQ(f.p75, 6.5);   // position 3.75: 5 + 0.75 * (7 - 5)
  EXPECT_EQ(f.p90, 7);     // position 4.5, past the last: the largest
  EXPECT_EQ(f.p999, 7);
}

TEST(MetricRegistry, AMeterShowsItsRateAsOfTheLastUpdate) {
  MetricRegistry registry;
  const auto t0 = MeterWindow::Clock::now();
  Meter m = MetricGroup(&registry, "map").meter("eventsPerSecond", std::chrono::seconds(10));
  m.markEvent(3000);
  m.markEvent();
  EXPECT_EQ(m.getCount(), 3001u);
  registry.update(t0 + std::chrono::seconds(100));  // 100 s in a span of 10: the rate since the first point
  auto values = registry.values();
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].kind, MetricKind::kMeter);
  // Registered at most a few ms after t0: 3001 events over a little under 100 s.
  EXPECT_GE(values[0].value, 30.01);
  EXPECT_LT(values[0].value, 30.02);
  registry.update(t0 + std::chrono::seconds(200));  // nothing marked within the span
  EXPECT_EQ(registry.values()[0].value, 0);
}

TEST(MetricRegistry, ReadersRunConcurrentlyWithTheSubtask) {
  MetricRegistry registry;
  MetricGroup op(&registry, "map");
  Histogram hist = op.histogram("h");
  Meter meter = op.meter("m");
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      for (const auto& v : registry.values()) {
        ASSERT_FALSE(std::isnan(v.value));
        if (v.kind == MetricKind::kHistogram) {
          ASSERT_LE(v.histogram.min, v.histogram.max);
        }
      }
      (void)hist.getCount();
      (void)meter.getCount();
    }
  });
  uint64_t n = 0;
  for (int i = 0; i < 2000; ++i) {
    op.addGroup("k", std::to_string(i % 50)).counter("c").inc();
    // Every other read is no number: readers never see one.
    op.addGroup("k", std::to_string(i % 50)).gauge("g", [&n] {
      return n % 2 == 0 ? static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
    });
    ++n;
    hist.update(i);
    meter.markEvent();
    registry.update();
  }
  done = true;
  reader.join();
  auto m = byId(registry);
  EXPECT_EQ(m["map.k.7.c"], 40);
  EXPECT_EQ(m.size(), 102u);
  EXPECT_EQ(m["map.k.7.g"], 2000);  // the last read, a number
  EXPECT_EQ(hist.getCount(), 2000u);
}

TEST(MetricRegistry, BuiltInsReadTheRuntimesCountsUntilFrozenAndKeepTheirLastValues) {
  MetricRegistry registry;
  std::atomic<uint64_t> main{3}, side{4};
  std::atomic<int64_t> first{INT64_MIN}, second{INT64_MIN};
  registry.builtInCounter("split", "numRecordsOut", {&main, &side});
  registry.builtInWatermark("split", "currentInputWatermark", {&first, &second});
  registry.setOperatorId("split", "0123456789abcdef0123456789abcdef");
  EXPECT_FALSE(registry.needsUpdates());  // read when asked, not by the subtask
  auto m = byId(registry);
  EXPECT_EQ(m["split.numRecordsOut"], 7);
  EXPECT_EQ(m["split.currentInputWatermark"], static_cast<double>(INT64_MIN));  // none yet, as Flink shows it
  first = 10;
  EXPECT_EQ(byId(registry)["split.currentInputWatermark"], static_cast<double>(INT64_MIN));  // the least of the two
  second = 12;
  main = 5;
  m = byId(registry);
  EXPECT_EQ(m["split.currentInputWatermark"], 10);
  EXPECT_EQ(m["split.numRecordsOut"], 9);
  for (const auto& v : registry.values()) EXPECT_EQ(v.operatorId, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(registry.values()[1].kind, MetricKind::kWatermark);
  registry.freeze();
  main = 1000;  // what they pointed to may be gone after freeze()
  first = 1000;
  m = byId(registry);
  EXPECT_EQ(m["split.numRecordsOut"], 9);
  EXPECT_EQ(m["split.currentInputWatermark"], 10);
}

TEST(MetricRegistry, ABuiltInGaugeShowsNoValueUntilItHasOne) {
  MetricRegistry registry;
  std::atomic<int64_t> lag{INT64_MIN};
  registry.builtInGauge("source", "currentEmitEventTimeLag", &lag);
  EXPECT_FALSE(registry.needsUpdates());
  EXPECT_TRUE(registry.values().empty());
  lag = 250;
  EXPECT_EQ(byId(registry)["source.currentEmitEventTimeLag"], 250);
  EXPECT_EQ(registry.values()[0].kind, MetricKind::kGauge);
  registry.freeze();
  lag = 9;
  EXPECT_EQ(byId(registry)["source.currentEmitEventTimeLag"], 250);
}

TEST(MetricRegistry, AUserMetricCannotTakeTheNameOfABuiltIn) {
  MetricRegistry registry;
  std::atomic<uint64_t> in{0};
  registry.builtInCounter("map", "numRecordsIn", {&in});
  MetricGroup op(&registry, "map");
  try {
    op.counter("numRecordsIn");
    FAIL() << "a user counter took a built-in's name";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "metric: 'map.numRecordsIn' is a metric weir keeps for every operator; a counter needs another name");
  }
  EXPECT_EQ(op.addGroup("mine").counter("numRecordsIn").getCount(), 0u);  // in a group of its own it may
}

}  // namespace
}  // namespace weir::detail
