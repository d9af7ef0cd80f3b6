#include "rest/metrics_query.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>

namespace weir::rest {
namespace {

using json = nlohmann::json;

TEST(MetricText, WholeNumbersAsIntegersOthersShortest) {
  EXPECT_EQ(metricText(7), "7");
  EXPECT_EQ(metricText(-3), "-3");
  EXPECT_EQ(metricText(0.25), "0.25");
  EXPECT_EQ(metricText(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(metricText(static_cast<double>(INT64_MIN)), "-9223372036854775808");  // no watermark yet
  EXPECT_EQ(metricText(1733500000123.0), "1733500000123");
  EXPECT_EQ(metricText(1e300), "1e+300");
  EXPECT_EQ(metricText(std::nan("")), "NaN");
  EXPECT_EQ(metricText(-INFINITY), "-Infinity");
}

TEST(MetricValues, IdsWithoutGetValuesInTheOrderAsked) {
  const std::map<std::string, double> all{{"0.a", 1}, {"0.b", 2.5}, {"1.a", 3}};
  EXPECT_EQ(metricValues(all, std::nullopt), json::parse(R"([{"id":"0.a"},{"id":"0.b"},{"id":"1.a"}])"));
  EXPECT_EQ(metricValues(all, "1.a,missing,,0.b"),
            json::parse(R"([{"id":"1.a","value":"3"},{"id":"0.b","value":"2.5"}])"));
  EXPECT_EQ(parseMetricValues(metricValues(all, "0.a,0.b,1.a")), all);
}

// Flink's AggregatingSubtasksMetricsHandler, worked by hand: 1, 2, 3 and 6 have mean 3
// and mean absolute deviation (2 + 1 + 0 + 3) / 4 = 1.5, a skew of 50%.
TEST(AggregatedSubtaskMetrics, MinMaxAvgSumAndSkewOverTheChosenSubtasks) {
  const std::map<std::string, double> all{{"0.n", 1}, {"1.n", 2}, {"2.n", 3}, {"3.n", 6},
                                          {"0.only0", 5}, {"2.op.x", 9}, {"junk", 4}};
  EXPECT_EQ(aggregatedSubtaskMetrics(all, {}), json::parse(R"([{"id":"n"},{"id":"only0"},{"id":"op.x"}])"));
  EXPECT_EQ(aggregatedSubtaskMetrics(all, {"n", std::nullopt, std::nullopt}),
            json::parse(R"([{"id":"n","min":1.0,"max":6.0,"avg":3.0,"sum":12.0,"skew":50.0}])"));
  EXPECT_EQ(aggregatedSubtaskMetrics(all, {"n,nothing", "MAX,avg", std::nullopt}),
            json::parse(R"([{"id":"n","max":6.0,"avg":3.0}])"));
  // Subtasks 0 and 2-3: 1, 3, 6.
  EXPECT_EQ(aggregatedSubtaskMetrics(all, {"n,only0", "sum", "0,2-3"}),
            json::parse(R"([{"id":"n","sum":10.0},{"id":"only0","sum":5.0}])"));
  EXPECT_EQ(aggregatedSubtaskMetrics(all, {std::nullopt, std::nullopt, "1"}), json::parse(R"([{"id":"n"}])"));
  // Skew: none when every subtask is alike or the mean is 0; at most 100.
  EXPECT_EQ(aggregatedSubtaskMetrics({{"0.z", 0}, {"1.z", 0}}, {"z", "skew", std::nullopt})[0]["skew"], 0.0);
  EXPECT_EQ(aggregatedSubtaskMetrics({{"0.z", 0}, {"1.z", 0}, {"2.z", 0}, {"3.z", 100}}, {"z", "skew", std::nullopt})[0]["skew"],
            100.0);  // mean 25, deviation (25 * 3 + 75) / 4 = 37.5: 150%, capped
}

TEST(AggregatedSubtaskMetrics, ABadAggregationOrSubtaskRangeIsNamed) {
  const std::map<std::string, double> all{{"0.n", 1}};
  for (const auto& [agg, subtasks, named] : {std::tuple{"median", "0", "'median'"}, {"min", "2-1", "'2-1'"},
                                             {"min", "x", "'x'"}, {"min", "-1", "'-1'"}, {"min", "0-99999999", "'0-99999999'"}}) {
    try {
      aggregatedSubtaskMetrics(all, {"n", agg, subtasks});
      ADD_FAILURE() << agg << " " << subtasks << " was taken";
    } catch (const BadMetricsQuery& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace weir::rest
