#include "rest/prometheus_exposition.h"

#include <gtest/gtest.h>

#include <climits>
#include <sstream>
#include <string>

#include "support/promtool.h"
#include "weir/error.h"

namespace weir::rest {
namespace {

using Scope = PrometheusExposition::Scope;

detail::MetricValue metric(detail::MetricKind kind, std::string name, detail::MetricGroups groups = {}) {
  detail::MetricValue m;
  m.operatorName = "counting map";
  m.kind = kind;
  m.name = std::move(name);
  m.groups = std::move(groups);
  m.value = 7;
  m.histogram.count = 4;
  m.histogram.sum = 16;
  m.histogram.p50 = 4;
  return m;
}

// A page with one of everything weir exports: a job's and a task's counters and gauges,
// an operator's counter, gauge, meter and histogram (one under a key-value group), and
// the process's figures.
std::string everything(const std::string& prefix) {
  PrometheusExposition out(prefix);
  const PrometheusExposition::Labels job{{"host", "h"}, {"job_id", "j1"}, {"job_name", "clicks"}};
  auto task = job;
  task.insert({{"tm_id", "embedded"}, {"task_id", "t1"}, {"task_name", "Source: clicks"}, {"subtask_index", "0"},
               {"task_attempt_num", "0"}, {"task_attempt_id", "j1_t1_0_0"}});
  out.counter(Scope::kJob, {"numRestarts", "num_restarts"}, "Restarts", job, 2);
  out.gauge(Scope::kJob, {"lastCheckpointDuration", "last_checkpoint_duration_seconds", 0.001}, "Duration", job, 1500);
  out.counter(Scope::kTask, {"numRecordsIn", "num_records_in"}, "Records in", task, 10);
  out.gauge(Scope::kTask, {"busyTimeMsPerSecond", "busy_time_ratio", 0.001}, "Busy", task, 250);
  out.add(task, metric(detail::MetricKind::kCounter, "evensSeen"));
  out.add(task, metric(detail::MetricKind::kCounter, "records", {{"parity", "odd"}}));
  out.add(task, metric(detail::MetricKind::kGauge, "maxSeen", {{"myGroup", ""}}));
  out.add(task, metric(detail::MetricKind::kMeter, "numbersPerSecond"));
  out.add(task, metric(detail::MetricKind::kHistogram, "values"));
  out.addProcess();
  return out.text();
}

bool has(const std::string& page, const std::string& line) { return page.find(line) != std::string::npos; }

TEST(PrometheusExposition, WeirSpellingIsCleanUnderPromtool) {
  const std::string page = everything("weir");
  auto [code, said] = test::promtoolCheck(page);
  EXPECT_EQ(code, 0) << said << page;
  EXPECT_EQ(said, "") << page;
}

TEST(PrometheusExposition, WeirSpellingIsSnakeCaseWithTotalsSecondsAndRatios) {
  const std::string page = everything("weir");
  EXPECT_TRUE(has(page, "# TYPE weir_jobmanager_job_num_restarts_total counter")) << page;
  EXPECT_TRUE(has(page, "weir_jobmanager_job_num_restarts_total{host=\"h\",job_id=\"j1\",job_name=\"clicks\"} 2\n"));
  EXPECT_TRUE(has(page, "weir_jobmanager_job_last_checkpoint_duration_seconds{host=\"h\",job_id=\"j1\",job_name=\"clicks\"} 1.5\n"));
  EXPECT_TRUE(has(page, "# TYPE weir_taskmanager_job_task_num_records_in_total counter"));
  // Flink's task scope variables, as labels.
  EXPECT_TRUE(has(page, "weir_taskmanager_job_task_busy_time_ratio{host=\"h\",job_id=\"j1\",job_name=\"clicks\","
                        "subtask_index=\"0\",task_attempt_id=\"j1_t1_0_0\",task_attempt_num=\"0\",task_id=\"t1\","
                        "task_name=\"Source: clicks\",tm_id=\"embedded\"} 0.25\n"));
  EXPECT_TRUE(has(page, "# TYPE weir_taskmanager_job_task_operator_evens_seen_total counter"));
  EXPECT_TRUE(has(page, "weir_taskmanager_job_task_operator_parity_records_total{"));
  EXPECT_TRUE(has(page, "parity=\"odd\""));
  EXPECT_TRUE(has(page, "# TYPE weir_taskmanager_job_task_operator_my_group_max_seen gauge"));
  EXPECT_TRUE(has(page, "# TYPE weir_taskmanager_job_task_operator_numbers_per_second gauge"));
  EXPECT_TRUE(has(page, "# TYPE weir_taskmanager_job_task_operator_values summary"));
  EXPECT_TRUE(has(page, "operator_name=\"counting map\""));
  EXPECT_TRUE(has(page, "# TYPE process_cpu_seconds_total counter"));
  EXPECT_TRUE(has(page, "# TYPE process_resident_memory_bytes gauge"));
}

// The names Flink's PrometheusReporter gives these metrics (Flink's metrics
// documentation): flink_<scope>_<name>, in Flink's units.
TEST(PrometheusExposition, FlinkSpellingIsFlinksReporters) {
  const std::string page = everything("flink");
  EXPECT_TRUE(has(page, "flink_jobmanager_job_numRestarts{host=\"h\",job_id=\"j1\",job_name=\"clicks\"} 2\n")) << page;
  EXPECT_TRUE(has(page, "flink_jobmanager_job_lastCheckpointDuration{host=\"h\",job_id=\"j1\",job_name=\"clicks\"} 1500\n"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_numRecordsIn{"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_busyTimeMsPerSecond{"));
  EXPECT_TRUE(has(page, "} 250\n"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_operator_evensSeen{"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_operator_parity_records{"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_operator_myGroup_maxSeen{"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_operator_numbersPerSecond{"));
  EXPECT_TRUE(has(page, "flink_taskmanager_job_task_operator_values{"));
  EXPECT_TRUE(has(page, "quantile=\"0.5\"} 4\n"));
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("flink_", 0) == 0) EXPECT_EQ(line.find("_total"), std::string::npos) << "Flink's names have none";
  EXPECT_FALSE(has(page, "weir_"));
}

TEST(PrometheusExposition, ANameTakenByAnotherKindOrASecondSeriesIsLeftOut) {
  PrometheusExposition out("weir");
  const PrometheusExposition::Labels labels{{"job_id", "j"}};
  // A user gauge "x_count" and a histogram "x" (whose samples include x_count).
  out.add(labels, metric(detail::MetricKind::kGauge, "x_count"));
  out.add(labels, metric(detail::MetricKind::kHistogram, "x"));
  // Two counters whose names filter alike, with the same labels: one series.
  out.add(labels, metric(detail::MetricKind::kCounter, "a.b"));
  out.add(labels, metric(detail::MetricKind::kCounter, "a-b"));
  // A counter and a gauge of one name.
  out.gauge(Scope::kJob, {"thing", "thing_total"}, "gauge", labels, 1);
  out.counter(Scope::kJob, {"thing", "thing"}, "counter", labels, 2);
  const std::string page = out.text();
  EXPECT_TRUE(has(page, "weir_taskmanager_job_task_operator_x_count{")) << page;
  EXPECT_FALSE(has(page, "# TYPE weir_taskmanager_job_task_operator_x summary"));
  EXPECT_EQ(page.find("weir_taskmanager_job_task_operator_a_b_total{"),
            page.rfind("weir_taskmanager_job_task_operator_a_b_total{"));
  EXPECT_TRUE(has(page, "weir_jobmanager_job_thing_total{job_id=\"j\"} 1\n"));
  EXPECT_FALSE(has(page, "} 2\n"));
}

// Flink's names are camelCase, which promtool flags: the check above can fail.
TEST(PrometheusExposition, FlinkSpellingIsNotCleanUnderPromtool) {
  auto [code, said] = test::promtoolCheck(everything("flink"));
  EXPECT_NE(code, 0);
  EXPECT_NE(said.find("flink_taskmanager_job_task_numRecordsIn metric names should be written in 'snake_case'"),
            std::string::npos)
      << said;
}

TEST(PrometheusExposition, APrefixOtherThanWeirOrFlinkIsRefused) {
  try {
    PrometheusExposition out("prom");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'prom'"), std::string::npos) << e.what();
  }
}

TEST(PrometheusExposition, AnOperatorsBuiltInsCarryItsIdAndAWatermarkShowsOnceThereIsOne) {
  PrometheusExposition out("weir");
  auto in = metric(detail::MetricKind::kCounter, "numRecordsIn");
  in.operatorId = "0123456789abcdef0123456789abcdef";
  out.add({{"job_id", "j1"}}, in);
  auto none = metric(detail::MetricKind::kWatermark, "currentInputWatermark");
  none.value = static_cast<double>(INT64_MIN);  // none yet
  out.add({{"job_id", "j1"}}, none);
  auto some = metric(detail::MetricKind::kWatermark, "currentOutputWatermark");
  some.value = 1'700'000'000'000;
  out.add({{"job_id", "j1"}}, some);
  const std::string page = out.text();
  EXPECT_TRUE(has(page, "weir_taskmanager_job_task_operator_num_records_in_total{job_id=\"j1\","
                        "operator_id=\"0123456789abcdef0123456789abcdef\",operator_name=\"counting map\"} 7"))
      << page;
  EXPECT_FALSE(has(page, "current_input_watermark")) << page;
  EXPECT_TRUE(has(page, "# TYPE weir_taskmanager_job_task_operator_current_output_watermark gauge")) << page;
  EXPECT_TRUE(has(page, "weir_taskmanager_job_task_operator_current_output_watermark{job_id=\"j1\","
                        "operator_name=\"counting map\"} 1700000000000"))
      << page;
}

}  // namespace
}  // namespace weir::rest
