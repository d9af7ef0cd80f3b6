// Every operator's own numRecordsIn, numRecordsOut and watermarks (Flink's operator
// scope), for operators chained, fused and alone, as the REST API and /metrics show them,
// against counts worked out from the input.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "support/operator_metrics.h"
#include "support/promtool.h"
#include "weir/weir.h"

namespace weir {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kRecords = 30'000;
const OutputTag<int64_t> kOddEights("odd eights");

// Sends every record on, and the odd multiples of eight to a side output as well.
struct Split : ProcessFunction<int64_t, int64_t> {
  void processElement(const int64_t& v, Context& ctx, Collector<int64_t>& out) override {
    out.collect(v);
    if ((v / 8) % 2 == 1) ctx.output(kOddEights, v);
  }
};

// A map with a lifecycle: never fused with the filters around it.
struct RichDoubling : RichMapFunction<int64_t, int64_t> {
  int64_t map(const int64_t& v) override { return v * 2; }
};

// The REST id's value, summed over the subtasks that have it; -1 if none has.
double over(const std::map<std::string, double>& metrics, const std::string& op, const std::string& name) {
  const auto s = test::sumOf(metrics, "." + op + "." + name);
  return s.count == 0 ? -1 : s.sum;
}

// Flink's operator_id as weir derives it: XXH3-128 of the uid, as 32 hex digits.
std::string operatorIdOf(const std::string& uid) {
  const XXH128_hash_t h = XXH3_128bits(uid.data(), uid.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, h.high64, h.low64);
  return hex;
}

class OperatorMetrics : public ::testing::TestWithParam<bool> {};  // whether the filters and map fuse

// numbers -> not threes -> doubled -> eights -> split -> odd eights sink   (p = 1, one chain)
//                                                  \-> keyBy -> halved -> main sink   (p = 2)
TEST_P(OperatorMetrics, EachOperatorShowsWhatItReceivedAndEmitted) {
  const bool fused = GetParam();
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  CollectSink<int64_t> mainSink, sideSink;
  auto numbers = env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kRecords),
                                WatermarkStrategy<int64_t>::forMonotonousTimestamps().withTimestampAssigner(
                                    [](const int64_t& i) { return 1'000'000 + i; }),
                                "numbers")
                     .setParallelism(1);
  auto notThrees = numbers.filter([](const int64_t& i) { return i % 3 != 0; }).name("not threes").setParallelism(1);
  auto rest = [&](auto doubled) {
    auto split = doubled.filter([](const int64_t& v) { return v % 8 == 0; })
                     .name("eights")
                     .setParallelism(1)
                     .process(Split{})
                     .name("split")
                     .setParallelism(1);
    split.getSideOutput(kOddEights).sinkTo(sideSink).name("odd eights sink").setParallelism(1);
    split.keyBy([](const int64_t& v) { return v % 7; })
        .map([](int64_t v) { return v / 2; })
        .name("halved")
        .setParallelism(2)
        .sinkTo(mainSink)
        .name("main sink")
        .setParallelism(2);
  };
  if (fused) rest(notThrees.map([](int64_t v) { return v * 2; }).name("doubled").uid("doubled-uid").setParallelism(1));
  else rest(notThrees.map(RichDoubling{}).name("doubled").uid("doubled-uid").setParallelism(1));
  const auto wallMillis = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t started = wallMillis();
  auto job = env.executeAsync("operator metrics");
  job.wait();
  const int64_t ended = wallMillis();

  // Worked out from the input.
  int64_t notThreesOut = 0, eightsOut = 0, oddEights = 0;
  for (int64_t i = 0; i < kRecords; ++i) {
    if (i % 3 == 0) continue;
    ++notThreesOut;
    if ((i * 2) % 8 != 0) continue;
    ++eightsOut;
    oddEights += ((i * 2) / 8) % 2 == 1 ? 1 : 0;
  }
  ASSERT_EQ(static_cast<int64_t>(mainSink.getResults().size()), eightsOut);
  ASSERT_EQ(static_cast<int64_t>(sideSink.getResults().size()), oddEights);

  std::map<std::string, double> m;
  // The job ended: its operators' last counts are there once the REST API sampled them.
  ASSERT_TRUE([&] {
    for (int i = 0; i < 200; ++i) {
      m = test::operatorMetrics(job);
      if (over(m, "main sink", "numRecordsIn") == static_cast<double>(eightsOut)) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }()) << ::testing::PrintToString(m);
  const std::map<std::string, std::pair<int64_t, int64_t>> expected = {
      {"numbers", {kRecords, kRecords}},  // a source's in: what its reader produced (FLIP-33)
      {"not threes", {kRecords, notThreesOut}},
      {"doubled", {notThreesOut, notThreesOut}},
      {"eights", {notThreesOut, eightsOut}},
      {"split", {eightsOut, eightsOut + oddEights}},  // main and side output
      {"odd eights sink", {oddEights, oddEights}},    // a sink's out: what it wrote
      {"halved", {eightsOut, eightsOut}},             // the head of a chain: what its channels brought
      {"main sink", {eightsOut, eightsOut}},
  };
  for (const auto& [op, inOut] : expected) {
    EXPECT_EQ(over(m, op, "numRecordsIn"), static_cast<double>(inOut.first)) << op;
    EXPECT_EQ(over(m, op, "numRecordsOut"), static_cast<double>(inOut.second)) << op;
    // The end of the input passed the last watermark, Long.MAX_VALUE, through every operator.
    const auto out = test::sumOf(m, "." + op + ".currentOutputWatermark");
    EXPECT_EQ(out.sum, static_cast<double>(INT64_MAX) * out.count) << op;
    EXPECT_EQ(out.count, op == "halved" || op == "main sink" ? 2 : 1) << op;
    const auto in = test::sumOf(m, "." + op + ".currentInputWatermark");
    EXPECT_EQ(in.count, op == "numbers" ? 0 : out.count) << op << ": a source has no input watermark";
    EXPECT_EQ(in.sum, static_cast<double>(INT64_MAX) * in.count) << op;
  }

  // FLIP-33's currentEmitEventTimeLag: when the source's last batch left, less the event
  // time of its last record (1,000,000 + the index of one of them).
  ASSERT_EQ(m.count("0.numbers.currentEmitEventTimeLag"), 1u) << ::testing::PrintToString(m);
  const double lag = m["0.numbers.currentEmitEventTimeLag"];
  EXPECT_GE(lag, static_cast<double>(started - 1'000'000 - kRecords));
  EXPECT_LE(lag, static_cast<double>(ended - 1'000'000));
  EXPECT_EQ(test::sumOf(m, ".currentEmitEventTimeLag").count, 1);  // a source's alone

  // /metrics: the same counts, as counters with Flink's operator labels.
  const std::string url = job.getWebInterfaceURL();
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  auto page = client.Get("/metrics");
  ASSERT_TRUE(page);
  const auto [status, said] = test::promtoolCheck(page->body);
  EXPECT_EQ(status, 0) << said;
  EXPECT_NE(page->body.find("# TYPE weir_taskmanager_job_task_operator_num_records_out_total counter"), std::string::npos);
  const std::string doubledOut = "weir_taskmanager_job_task_operator_num_records_out_total{";
  size_t at = page->body.find(doubledOut);
  bool seen = false;
  for (; at != std::string::npos; at = page->body.find(doubledOut, at + 1)) {
    const std::string line = page->body.substr(at, page->body.find('\n', at) - at);
    if (line.find("operator_name=\"doubled\"") == std::string::npos) continue;
    seen = true;
    EXPECT_NE(line.find("operator_id=\"" + operatorIdOf("doubled-uid") + "\""), std::string::npos) << line;
    EXPECT_EQ(std::stod(line.substr(line.rfind(' ') + 1)), static_cast<double>(notThreesOut)) << line;
  }
  EXPECT_TRUE(seen) << page->body;
  EXPECT_NE(page->body.find("weir_taskmanager_job_task_operator_current_output_watermark{"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(FusedOrNot, OperatorMetrics, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "fused" : "chained"; });

// Each operator's records per second, from its own counts, as the subtask's rates are:
// a chained map between a source and a sink passes on what the source sends.
TEST(OperatorMetricsOfARunningJob, EachOperatorShowsItsRates) {
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  env.setParallelism(1);
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kUnboundedCount, RateLimiterStrategy::perSecond(5000)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .map([](int64_t v) { return v + 1; })
      .name("plus one")
      .sinkTo(DiscardingSink<int64_t>())
      .name("nowhere");
  auto job = env.executeAsync("rates");
  std::map<std::string, double> m;
  bool measured = false;
  for (int i = 0; i < 200 && !measured; ++i) {
    std::this_thread::sleep_for(50ms);
    m = test::operatorMetrics(job);
    measured = m["0.numbers.numRecordsOutPerSecond"] > 2000 && m.count("0.nowhere.numRecordsInPerSecond");
  }
  ASSERT_TRUE(measured) << ::testing::PrintToString(m);
  const double sent = m["0.numbers.numRecordsOutPerSecond"];
  EXPECT_LT(sent, 10'000);  // about 5,000
  for (const char* id : {"0.plus one.numRecordsInPerSecond", "0.plus one.numRecordsOutPerSecond",
                         "0.nowhere.numRecordsInPerSecond", "0.numbers.numRecordsInPerSecond"})
    EXPECT_NEAR(m[id], sent, 0.1 * sent + 50) << id;  // one batch apart at the most
  // In /metrics, gauges with the operator's labels.
  const std::string url = job.getWebInterfaceURL();
  httplib::Client client("127.0.0.1", std::stoi(url.substr(url.rfind(':') + 1)));
  auto page = client.Get("/metrics");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("# TYPE weir_taskmanager_job_task_operator_num_records_in_per_second gauge"),
            std::string::npos);
  EXPECT_NE(page->body.find("weir_taskmanager_job_task_operator_num_records_out_per_second{"), std::string::npos);
  job.cancel();
  job.wait();
}

// A watermark after every record that raises the highest timestamp (punctuated); the
// source sends it after the batch the record came in.
struct EveryRecordWatermarks : WatermarkGenerator<int64_t> {
  int64_t highest = INT64_MIN;
  void onEvent(const int64_t&, int64_t timestamp, WatermarkOutput& output) override {
    if (timestamp <= highest) return;
    highest = timestamp;
    output.emitWatermark(timestamp - 1);
  }
  void onPeriodicEmit(WatermarkOutput&) override {}
};

// A window's own numLateRecordsDropped: every record that reached it and was counted in
// no window.
TEST(OperatorMetricsOfWindows, AWindowCountsTheLateRecordsItDropped) {
  constexpr int64_t kCount = 5'000;
  auto env = StreamExecutionEnvironment::createLocalEnvironmentWithWebUI(test::restOnAnyPort());
  env.setParallelism(1);
  CollectSink<int64_t> sink;
  // Timestamps rise by 1 s a record; every tenth record is an hour older, behind the
  // watermark once the batch before it has passed.
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kCount),
                 WatermarkStrategy<int64_t>::forGenerator([] { return std::make_unique<EveryRecordWatermarks>(); })
                     .withTimestampAssigner([](const int64_t& i) { return i % 10 == 9 ? 0 : 3'600'000 + i * 1000; }),
                 "numbers")
      .map([](int64_t) { return int64_t{1}; })
      .keyBy([](const int64_t&) { return 0; })
      .window(TumblingEventTimeWindows::of(std::chrono::seconds(10)))
      .reduce([](int64_t a, int64_t b) { return a + b; })
      .name("counts")
      .sinkTo(sink);
  auto job = env.executeAsync("late records");
  job.wait();
  int64_t counted = 0;
  for (int64_t c : sink.getResults()) counted += c;
  const double dropped = static_cast<double>(kCount - counted);
  EXPECT_GT(dropped, 0);  // all but the first batch's old records
  std::map<std::string, double> m;
  EXPECT_TRUE([&] {
    for (int i = 0; i < 200; ++i) {
      m = test::operatorMetrics(job);
      if (over(m, "counts", "numLateRecordsDropped") == dropped) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }()) << "dropped " << dropped << ": " << ::testing::PrintToString(m);
  uint64_t bySubtasks = 0;  // the subtasks' count agrees
  for (const auto& v : job.getMetrics().vertices) bySubtasks += v.numLateRecordsDropped;
  EXPECT_EQ(static_cast<double>(bySubtasks), dropped);
}

}  // namespace
}  // namespace weir
