// Histogram statistics and the meter's rate against figures worked out by hand or in
// closed form, independent of how they are computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "weir/detail/core/histogram_window.h"
#include "weir/detail/core/meter_window.h"
#include "weir/error.h"
#include "weir/histogram.h"

namespace weir {
namespace {

// For the n consecutive integers a .. a + n - 1, in any order, Commons Math's legacy
// estimate of the q-quantile is a - 1 + q * (n + 1) wherever that position lies between
// the first and the last; the sample standard deviation is sqrt(n (n + 1) / 12).
TEST(HistogramStatistics, ConsecutiveIntegersGiveTheClosedForms) {
  const int64_t a = 49000, n = 1000;
  std::vector<int64_t> values(n);
  std::iota(values.begin(), values.end(), a);
  std::shuffle(values.begin(), values.end(), std::mt19937(7));
  const HistogramStatistics s(values);
  EXPECT_EQ(s.size(), 1000u);
  EXPECT_EQ(s.getMin(), a);
  EXPECT_EQ(s.getMax(), a + n - 1);
  EXPECT_DOUBLE_EQ(s.getMean(), a + 499.5);
  EXPECT_NEAR(s.getStdDev(), std::sqrt(n * (n + 1) / 12.0), 1e-9);
  for (double q : {0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.999})
    EXPECT_NEAR(s.getQuantile(q), static_cast<double>(a) - 1 + q * (n + 1), 1e-6) << q;
  EXPECT_EQ(s.getQuantile(0), a);    // before the first position: the smallest
  EXPECT_EQ(s.getQuantile(1), a + n - 1);
  EXPECT_TRUE(std::is_sorted(s.getValues().begin(), s.getValues().end()));
}

TEST(HistogramStatistics, NoValuesOneValueAndBadQuantiles) {
  const HistogramStatistics none;
  EXPECT_TRUE(std::isnan(none.getQuantile(0.5)));
  EXPECT_TRUE(std::isnan(none.getMean()));
  EXPECT_TRUE(std::isnan(none.getStdDev()));
  EXPECT_EQ(none.getMin(), 0);
  const HistogramStatistics one({-5});
  EXPECT_EQ(one.getQuantile(0.999), -5);
  EXPECT_EQ(one.getStdDev(), 0);
  EXPECT_EQ(one.getMean(), -5);
  for (double q : {-0.1, 1.5, std::nan("")}) {
    try {
      one.getQuantile(q);
      FAIL() << q;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

TEST(HistogramWindow, KeepsTheLastValuesAndCountsAndSumsEvery) {
  detail::HistogramWindow window(1000);
  double sum = 0;
  for (int64_t v = 1; v <= 2500; ++v) window.add(v), sum += static_cast<double>(v);
  EXPECT_EQ(window.count(), 2500u);
  EXPECT_EQ(window.sum(), sum);
  const HistogramStatistics s(window.values());
  ASSERT_EQ(s.size(), 1000u);
  EXPECT_EQ(s.getMin(), 1501);
  EXPECT_EQ(s.getMax(), 2500);
}

// 100 events a second for two minutes, then none: the rate over the last 60 s follows,
// within a second's worth of events (the meter remembers its count once a second).
TEST(MeterWindow, TheRateIsOverTheLastTimeSpan) {
  using std::chrono::seconds;
  const auto t0 = detail::MeterWindow::Clock::time_point{} + seconds(1000);
  detail::MeterWindow meter(seconds(60), t0);
  EXPECT_EQ(meter.rate(t0), 0);
  for (int s = 1; s <= 120; ++s) {
    meter.mark(100);
    const double rate = meter.rate(t0 + seconds(s));
    EXPECT_NEAR(rate, 100, 1e-9) << "second " << s;  // a steady rate, whatever the span covers
  }
  EXPECT_EQ(meter.count(), 12000u);
  // Events stop: 30 s later, half the span held events.
  for (int s = 121; s <= 150; ++s) meter.rate(t0 + seconds(s));
  EXPECT_NEAR(meter.rate(t0 + seconds(150)), 50, 100.0 / 60);
  EXPECT_EQ(meter.rate(t0 + seconds(181)), 0);
  // Events again, 2500 every 25 s, read only then: once they span a minute, the rate is
  // 100 a second over the last 60 s or up to 25 s more.
  meter.mark(2500);
  EXPECT_NEAR(meter.rate(t0 + seconds(200)), 2500.0 / 60, 1e-9);  // since the count at 140 s
  for (int s = 225; s <= 400; s += 25) {
    meter.mark(2500);
    const double rate = meter.rate(t0 + seconds(s));
    if (s >= 250) EXPECT_NEAR(rate, 100, 100 * 25.0 / 60) << s;
  }
}

}  // namespace
}  // namespace weir
