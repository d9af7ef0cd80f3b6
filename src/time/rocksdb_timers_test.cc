// Timers in RocksDB against an ordered set of the same timers: the same earliest time,
// the same timers popped in the same order, across cache refills and a reopen.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>
#include <tuple>

#include "support/state_test_harness.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/detail/time/timer_queue.h"

namespace weir {
namespace {

using detail::RocksDBTimers;
using Timer = std::tuple<int64_t, int, std::string>;  // time, key group, rest: the firing order

class RocksDBTimersTest : public ::testing::Test {
 protected:
  detail::RocksDBInstance& db() { return *harness_.store().rocksdb(); }

  // Pops everything due by `upTo` from both and compares.
  void popAndCompare(RocksDBTimers& timers, std::set<Timer>& expected, int64_t upTo) {
    int keyGroup;
    int64_t time;
    std::string rest;
    while (timers.pop(upTo, keyGroup, time, rest)) {
      ASSERT_FALSE(expected.empty()) << "popped a timer at " << time << " that is not there";
      EXPECT_EQ(Timer(time, keyGroup, rest), *expected.begin());
      expected.erase(expected.begin());
    }
    if (!expected.empty()) {
      EXPECT_GT(std::get<0>(*expected.begin()), upTo);
    }
  }

  test::StateHarness<int> harness_{"rocksdb"};
};

TEST_F(RocksDBTimersTest, FiresInTheOrderOfAnOrderedSetThroughRefillsAndAReopen) {
  const KeyGroupRange range{10, 17};
  auto timers = std::make_unique<RocksDBTimers>(db(), "_timers", range);
  std::set<Timer> expected;
  std::mt19937_64 random(7);
  int64_t watermark = -500;
  // Far more timers per key group than the cache holds, with duplicates and removals of
  // cached, uncached and absent timers.
  for (int step = 0; step < 40000; ++step) {
    const int op = static_cast<int>(random() % 10);
    if (op < 6) {
      const int64_t time = watermark + static_cast<int64_t>(random() % 200000);
      const int keyGroup = range.start + static_cast<int>(random() % range.size());
      std::string rest = std::to_string(random() % 50);
      rest.insert(rest.begin(), 'k');  // not "k" + string: GCC 12 warns falsely (-Wrestrict)
      timers->add(keyGroup, time, rest);
      expected.emplace(time, keyGroup, rest);
    } else if (op < 8) {
      if (expected.empty()) continue;
      auto it = expected.begin();
      std::advance(it, static_cast<long>(random() % expected.size()));
      if (op == 7) {  // one that is not there
        timers->remove(std::get<1>(*it), std::get<0>(*it), std::get<2>(*it) + "x");
        continue;
      }
      timers->remove(std::get<1>(*it), std::get<0>(*it), std::get<2>(*it));
      expected.erase(it);
    } else {
      watermark += static_cast<int64_t>(random() % 40);
      ASSERT_NO_FATAL_FAILURE(popAndCompare(*timers, expected, watermark));
    }
    if (expected.empty()) EXPECT_EQ(timers->earliest(), std::nullopt);
    else ASSERT_EQ(timers->earliest(), std::get<0>(*expected.begin())) << "step " << step;
  }
  ASSERT_GT(expected.size(), 10 * RocksDBTimers::kCacheSize);
  // A restored operator opens the column again: its timers are all there, in order.
  timers = std::make_unique<RocksDBTimers>(db(), "_timers", range);
  ASSERT_EQ(timers->earliest(), std::get<0>(*expected.begin()));
  popAndCompare(*timers, expected, std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(expected.empty());
  EXPECT_EQ(timers->earliest(), std::nullopt);
}

TEST_F(RocksDBTimersTest, OrdersNegativeAndExtremeTimesAndKeepsOneOfEach) {
  RocksDBTimers timers(db(), "_timers", {0, 127});
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  for (int64_t t : {kMax, int64_t{5}, int64_t{-1}, kMin, int64_t{0}, int64_t{-300}, int64_t{5}}) timers.add(3, t, "a");
  int keyGroup;
  int64_t time;
  std::string rest;
  std::vector<int64_t> fired;
  while (timers.pop(kMax, keyGroup, time, rest)) fired.push_back(time);
  EXPECT_EQ(fired, (std::vector<int64_t>{kMin, -300, -1, 0, 5, kMax}));
}

TEST_F(RocksDBTimersTest, RefusesAKeyGroupOfAnotherSubtask) {
  RocksDBTimers timers(db(), "_timers", {0, 63});
  try {
    timers.add(64, 1, "a");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("key group 64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
