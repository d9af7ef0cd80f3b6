#include "time/watermark_valve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace weir::time {
namespace {

// Records what the valve emits.
struct Recorder : detail::OutputBase {
  std::vector<int64_t> watermarks;
  std::vector<bool> idleness;
  void endInput() override {}
  void processWatermark(int64_t w) override { watermarks.push_back(w); }
  void processIdleness(bool idle) override { idleness.push_back(idle); }
};

TEST(WatermarkValve, EmitsTheMinimumOverInputsOnlyWhenItAdvances) {
  Recorder out;
  WatermarkValve valve(3, &out);
  valve.inputWatermark(0, 10);
  valve.inputWatermark(1, 20);
  EXPECT_TRUE(out.watermarks.empty());  // input 2 has said nothing yet
  valve.inputWatermark(2, 5);
  EXPECT_EQ(out.watermarks, (std::vector<int64_t>{5}));
  valve.inputWatermark(2, 30);
  EXPECT_EQ(out.watermarks, (std::vector<int64_t>{5, 10}));
  valve.inputWatermark(0, 8);  // a channel going back is ignored
  valve.inputWatermark(0, 25);
  EXPECT_EQ(out.watermarks, (std::vector<int64_t>{5, 10, 20}));
  EXPECT_EQ(valve.currentWatermark(), 20);
}

TEST(WatermarkValve, AnIdleInputDoesNotHoldTheWatermarkBack) {
  Recorder out;
  WatermarkValve valve(2, &out);
  valve.inputWatermark(0, 100);
  EXPECT_TRUE(out.watermarks.empty());
  valve.inputIdleness(1, true);
  EXPECT_EQ(out.watermarks, (std::vector<int64_t>{100}));
  valve.inputWatermark(0, 150);
  EXPECT_EQ(out.watermarks.back(), 150);
  // Input 1 comes back behind: it does not pull the output back, and it holds the output
  // again only once it has caught up with it (as Flink's StatusWatermarkValve does).
  valve.inputIdleness(1, false);
  valve.inputWatermark(1, 120);
  EXPECT_EQ(out.watermarks.back(), 150);
  valve.inputWatermark(0, 300);
  EXPECT_EQ(out.watermarks.back(), 300);  // input 1 has not caught up: it does not hold back
  valve.inputWatermark(1, 200);
  EXPECT_EQ(out.watermarks.back(), 300);
  valve.inputWatermark(1, 350);  // caught up: aligned again
  valve.inputWatermark(0, 400);
  EXPECT_EQ(out.watermarks.back(), 350);
  EXPECT_TRUE(out.idleness.empty());  // never all idle
}

TEST(WatermarkValve, AllIdleReleasesTheHighestWatermarkAndSaysSo) {
  Recorder out;
  WatermarkValve valve(2, &out);
  valve.inputWatermark(0, 10);
  valve.inputWatermark(1, 40);
  valve.inputIdleness(0, true);
  EXPECT_EQ(out.watermarks.back(), 40);
  valve.inputIdleness(1, true);
  EXPECT_EQ(out.idleness, (std::vector<bool>{true}));
  valve.inputIdleness(0, false);
  EXPECT_EQ(out.idleness, (std::vector<bool>{true, false}));
}

// Against a brute force: the output never regresses and equals the minimum over active
// inputs whenever all active inputs have caught up with it.
TEST(WatermarkValve, RandomSequencesNeverRegressAndFollowTheMinimum) {
  for (int inputs : {2, 3, 4}) {
    std::mt19937 rng(inputs);
    Recorder out;
    WatermarkValve valve(inputs, &out);
    std::vector<int64_t> wm(static_cast<size_t>(inputs), INT64_MIN);
    std::vector<bool> idle(static_cast<size_t>(inputs), false);
    for (int step = 0; step < 5000; ++step) {
      int i = static_cast<int>(rng() % static_cast<unsigned>(inputs));
      if (rng() % 10 == 0 && i == inputs - 1) {
        idle[static_cast<size_t>(i)] = !idle[static_cast<size_t>(i)];
        valve.inputIdleness(i, idle[static_cast<size_t>(i)]);
      } else {
        int64_t w = std::max<int64_t>(wm[static_cast<size_t>(i)] == INT64_MIN ? 0 : wm[static_cast<size_t>(i)],
                                      0) + static_cast<int64_t>(rng() % 50);
        wm[static_cast<size_t>(i)] = std::max(wm[static_cast<size_t>(i)], w);
        valve.inputWatermark(i, w);
      }
      for (size_t k = 1; k < out.watermarks.size(); ++k) ASSERT_LT(out.watermarks[k - 1], out.watermarks[k]);
      int64_t lowestActive = INT64_MAX;
      bool anyActive = false;
      for (size_t k = 0; k < wm.size(); ++k)
        if (!idle[k]) {
          anyActive = true;
          lowestActive = std::min(lowestActive, wm[k]);
        }
      if (anyActive && lowestActive >= valve.currentWatermark()) {
        bool allCaughtUp = true;
        for (size_t k = 0; k < wm.size(); ++k)
          if (!idle[k] && wm[k] < valve.currentWatermark()) allCaughtUp = false;
        if (allCaughtUp && lowestActive != INT64_MIN) {
          ASSERT_EQ(valve.currentWatermark(), lowestActive) << step;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weir::time
