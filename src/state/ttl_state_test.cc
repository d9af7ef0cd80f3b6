// State TTL on both backends, with a manual clock: every option of StateTtlConfig.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/state_test_harness.h"
#include "weir/detail/state/ttl_state.h"

namespace weir {
namespace {

using namespace std::chrono_literals;
using test::StateHarness;

class TtlTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool rocksdb() const { return GetParam() == "rocksdb"; }
  void at(int64_t millis) { clock_->setTime(millis); }
  template <class D>
  D withTtl(D descriptor, StateTtlConfig config) {
    descriptor.enableTimeToLive(config);
    return descriptor;
  }
  // Entries the store would snapshot, key group 0 to 127.
  size_t entries(const std::string& state) {
    size_t n = 0;
    h_.store().readEntries(state, KeyGroupRange{0, 127}, [&](const detail::StateEntry&) { ++n; });
    return n;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(0);
  StateHarness<std::string> h_{GetParam(), clock_};
  StateTtlConfig ttl100_ = StateTtlConfig::newBuilder(100ms).build();
};

TEST_P(TtlTest, AValueExpiresTtlAfterItWasWrittenNotRead) {
  auto& v = h_.context().getState(withTtl(ValueStateDescriptor<int>("v", -1), ttl100_));
  h_.setKey("a");
  at(1000);
  v.update(7);
  at(1050);
  EXPECT_EQ(v.value(), 7);  // reading does not refresh it (OnCreateAndWrite)
  at(1099);
  EXPECT_EQ(v.value(), 7);
  at(1100);
  EXPECT_EQ(v.value(), -1) << "expired: the default value";
  v.update(8);
  at(1150);
  EXPECT_EQ(v.value(), 8) << "a new write starts a new time to live";
}

TEST_P(TtlTest, OnReadAndWriteRefreshesOnEveryRead) {
  auto config = StateTtlConfig::newBuilder(100ms).updateTtlOnReadAndWrite().build();
  auto& v = h_.context().getState(withTtl(ValueStateDescriptor<int>("v"), config));
  h_.setKey("a");
  v.update(1);
  at(80);
  EXPECT_EQ(v.value(), 1);
  at(179);
  EXPECT_EQ(v.value(), 1);
  at(279);
  EXPECT_EQ(v.value(), std::nullopt);
}

TEST_P(TtlTest, ReturnExpiredIfNotCleanedUpShowsItOnceThenCleansUp) {
  auto config = StateTtlConfig::newBuilder(100ms).returnExpiredIfNotCleanedUp().disableCleanupInBackground().build();
  auto& v = h_.context().getState(withTtl(ValueStateDescriptor<int>("v"), config));
  h_.setKey("a");
  v.update(3);
  at(500);
  EXPECT_EQ(v.value(), 3);
  EXPECT_EQ(v.value(), std::nullopt) << "the read that returned it also cleaned it up";
}

TEST_P(TtlTest, ListElementsExpireOneByOne) {
  auto& list = h_.context().getListState(withTtl(ListStateDescriptor<std::string>("l"), ttl100_));
  h_.setKey("a");
  list.add("early");
  at(50);
  list.addAll({"middle", "late"});
  at(120);
  EXPECT_EQ(list.get(), (std::vector<std::string>{"middle", "late"}));
  list.add("latest");
  at(160);
  EXPECT_EQ(list.get(), std::vector<std::string>{"latest"});
  at(400);
  EXPECT_TRUE(list.get().empty());
}

TEST_P(TtlTest, MapEntriesExpireOneByOne) {
  auto& map = h_.context().getMapState(withTtl(MapStateDescriptor<std::string, int>("m"), ttl100_));
  h_.setKey("a");
  map.put("x", 1);
  at(60);
  map.put("y", 2);
  at(110);
  EXPECT_EQ(map.get("x"), std::nullopt);
  EXPECT_FALSE(map.contains("x"));
  EXPECT_EQ(map.get("y"), 2);
  std::map<std::string, int> seen;
  for (const auto& [k, v] : map.entries()) seen[k] = v;
  EXPECT_EQ(seen, (std::map<std::string, int>{{"y", 2}}));
  EXPECT_FALSE(map.isEmpty());
  at(160);
  EXPECT_TRUE(map.isEmpty());
  for ([[maybe_unused]] const auto& k : map.keys()) ADD_FAILURE() << "an expired key was listed";
}

// Iterating a TTL map checks each entry as get() does (Flink's TtlMapState): an expired
// entry is cleaned up on the way — returned once under ReturnExpiredIfNotCleanedUp, then
// gone — and it leaves the backend's entries.
TEST_P(TtlTest, MapIterationCleansUpTheExpiredEntriesItReaches) {
  auto config = StateTtlConfig::newBuilder(100ms).returnExpiredIfNotCleanedUp().disableCleanupInBackground().build();
  auto& map = h_.context().getMapState(withTtl(MapStateDescriptor<std::string, int>("m"), config));
  h_.setKey("a");
  map.put("x", 1);
  at(60);
  map.put("y", 2);
  at(110);
  EXPECT_EQ(entries("m"), 2u);
  std::map<std::string, int> first, second;
  for (const auto& [k, v] : map.entries()) first[k] = v;
  EXPECT_EQ(first, (std::map<std::string, int>{{"x", 1}, {"y", 2}})) << "the expired x is shown once";
  for (const auto& [k, v] : map.entries()) second[k] = v;
  EXPECT_EQ(second, (std::map<std::string, int>{{"y", 2}})) << "the first iteration cleaned x up";
  EXPECT_EQ(entries("m"), 1u);
}

// Under OnReadAndWrite every entry an iteration returns is read, so its time to live
// starts again, as a get() would.
TEST_P(TtlTest, MapIterationRefreshesWhatItReturnsUnderOnReadAndWrite) {
  auto config = StateTtlConfig::newBuilder(100ms).updateTtlOnReadAndWrite().build();
  auto& map = h_.context().getMapState(withTtl(MapStateDescriptor<std::string, int>("m"), config));
  h_.setKey("a");
  map.put("x", 1);
  at(90);
  std::vector<std::string> keys;
  for (const auto& k : map.keys()) keys.push_back(k);
  EXPECT_EQ(keys, std::vector<std::string>{"x"});
  at(150);  // 150 ms after the write, 60 after the iteration read it
  EXPECT_EQ(map.get("x"), 1) << "the iteration at 90 refreshed x";
  at(249);
  EXPECT_EQ(map.get("x"), 1) << "and so did the get at 150";
  at(349);
  std::vector<int> values;
  for (int v : map.values()) values.push_back(v);
  EXPECT_TRUE(values.empty()) << "expired 100 ms after the last read";
}

TEST_P(TtlTest, ReducingAndAggregatingStartOverAfterExpiry) {
  auto& sum = h_.context().getReducingState(
      withTtl(ReducingStateDescriptor<int64_t>("sum", [](const int64_t& a, const int64_t& b) { return a + b; }),
              ttl100_));
  struct Count : AggregateFunction<int, int64_t, int64_t> {
    int64_t createAccumulator() override { return 0; }
    int64_t add(const int&, int64_t acc) override { return acc + 1; }
    int64_t getResult(const int64_t& acc) override { return acc; }
    int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
  };
  auto& count = h_.context().getAggregatingState(withTtl(AggregatingStateDescriptor("count", Count{}), ttl100_));
  h_.setKey("a");
  sum.add(1);
  count.add(0);
  at(50);
  sum.add(2);  // the accumulator is written now: its time to live restarts
  count.add(0);
  at(140);
  EXPECT_EQ(sum.get(), 3);
  EXPECT_EQ(count.get(), 2);
  at(150);
  EXPECT_EQ(sum.get(), std::nullopt);
  EXPECT_EQ(count.get(), std::nullopt);
  sum.add(5);
  count.add(0);
  EXPECT_EQ(sum.get(), 5);
  EXPECT_EQ(count.get(), 1);
}

TEST_P(TtlTest, FullSnapshotsLeaveExpiredEntriesOut) {
  auto keep = StateTtlConfig::newBuilder(100ms).disableCleanupInBackground().build();
  auto clean = StateTtlConfig::newBuilder(100ms).disableCleanupInBackground().cleanupFullSnapshot().build();
  auto& kept = h_.context().getState(withTtl(ValueStateDescriptor<int>("kept"), keep));
  auto& cleaned = h_.context().getState(withTtl(ValueStateDescriptor<int>("cleaned"), clean));
  auto& list = h_.context().getListState(withTtl(ListStateDescriptor<int>("list"), clean));
  for (int i = 0; i < 20; ++i) {
    at(i < 10 ? 0 : 60);
    h_.setKey("k" + std::to_string(i));
    kept.update(i);
    cleaned.update(i);
    list.add(i);
    list.add(-i);
  }
  at(110);
  EXPECT_EQ(entries("kept"), 20u);
  EXPECT_EQ(entries("cleaned"), 10u);
  EXPECT_EQ(entries("list"), 10u);
}

TEST_P(TtlTest, IncrementalCleanupRemovesExpiredEntriesOfOtherKeys) {
  if (rocksdb()) GTEST_SKIP() << "incremental cleanup is the heap's; RocksDB cleans up in compactions";
  auto onAccess = StateTtlConfig::newBuilder(100ms).cleanupIncrementally(10, false).build();
  auto everyRecord = StateTtlConfig::newBuilder(100ms).cleanupIncrementally(10, true).build();
  auto& a = h_.context().getState(withTtl(ValueStateDescriptor<int>("a"), onAccess));
  auto& b = h_.context().getMapState(withTtl(MapStateDescriptor<int, int>("b"), everyRecord));
  for (int i = 0; i < 1000; ++i) {
    h_.setKey("k" + std::to_string(i));
    a.update(i);
    b.put(i, i);
    b.put(-i, i);
  }
  at(200);
  EXPECT_EQ(entries("a"), 1000u);
  h_.setKey("reader");
  for (int i = 0; i < 99; ++i) a.value();  // 99 accesses check 990 entries
  EXPECT_EQ(entries("a"), 10u);
  a.value();
  EXPECT_EQ(entries("a"), 0u);
  // b's cleanup runs per record, without touching the state.
  EXPECT_LT(entries("b"), 2000u);
  for (int i = 0; i < 100; ++i) h_.setKey("r" + std::to_string(i));
  EXPECT_EQ(entries("b"), 0u);
}

TEST(TtlRocksDB, CompactionRemovesExpiredEntriesFromTheFiles) {
  auto clock = std::make_shared<ManualClock>(0);
  StateHarness<int> h("rocksdb", clock);
  auto filtered = StateTtlConfig::newBuilder(100ms).cleanupInRocksdbCompactFilter(1).build();
  auto unfiltered = StateTtlConfig::newBuilder(100ms).disableCleanupInBackground().build();
  ValueStateDescriptor<std::string> vd("values");
  vd.enableTimeToLive(filtered);
  ListStateDescriptor<int> ld("lists");
  ld.enableTimeToLive(filtered);
  ValueStateDescriptor<std::string> kd("kept");
  kd.enableTimeToLive(unfiltered);
  auto& values = h.context().getState(vd);
  auto& lists = h.context().getListState(ld);
  auto& kept = h.context().getState(kd);
  for (int k = 0; k < 1500; ++k) {
    clock->setTime(k < 1000 ? 0 : 150);
    h.setKey(k);
    values.update(std::string(50, 'v'));
    kept.update("k");
    lists.add(k);  // each key: one element now and one at 150
  }
  clock->setTime(150);
  for (int k = 0; k < 1000; ++k) {
    h.setKey(k);
    lists.add(-k);
  }
  clock->setTime(200);  // the writes at 0 have expired, those at 150 have not
  h.store().clearCurrentKey();
  auto& db = *h.store().rocksdb();
  db.compactAll();

  EXPECT_EQ(db.entriesInFiles("values"), 500u);
  EXPECT_EQ(db.entriesInFiles("kept"), 1500u) << "without the filter, compaction keeps expired entries";
  // The raw files, read past the TTL logic: only unexpired list elements are left.
  size_t elements = 0;
  for (auto scan = db.column("lists").scan(std::string(), std::string()); scan->valid(); scan->next()) {
    DataInput in(scan->value());
    while (!in.atEnd()) {
      DataInput element(in.readStringView());
      EXPECT_EQ(element.read<int64_t>(), 150) << "an expired element survived the compaction";
      ++elements;
    }
  }
  EXPECT_EQ(elements, 1500u);
}

TEST(TtlConfig, BadValuesAreRefused) {
  EXPECT_THROW(StateTtlConfig::newBuilder(0ms).build(), Error);
  EXPECT_THROW(StateTtlConfig::newBuilder(10ms).cleanupIncrementally(-1, false), Error);
  auto defaults = StateTtlConfig::newBuilder(10ms).build();
  EXPECT_EQ(defaults.getUpdateType(), StateTtlConfig::UpdateType::OnCreateAndWrite);
  EXPECT_EQ(defaults.getStateVisibility(), StateTtlConfig::StateVisibility::NeverReturnExpired);
  EXPECT_EQ(defaults.getIncrementalCleanupSize(), 5);  // Flink's background defaults
  EXPECT_TRUE(defaults.isCleanupInRocksdbCompactFilter());
  EXPECT_EQ(StateTtlConfig::newBuilder(10ms).disableCleanupInBackground().build().getIncrementalCleanupSize(), 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, TtlTest, ::testing::Values("heap", "rocksdb"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace weir
