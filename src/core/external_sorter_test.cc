#include "weir/detail/core/external_sorter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "weir/error.h"

namespace weir::detail {

void setExternalSorterHashForTesting(uint64_t (*hash)(const void*, size_t));  // external_sorter.cc

namespace {

// What the sorter must give: each key's records together, in their order and, of equal
// order, in the order they were added. Checked against a map built from the same input.
void expectGroupedAsAdded(ExternalSorter& sorter, const std::map<std::string, std::vector<std::string>>& expected) {
  std::map<std::string, std::vector<std::string>> got;
  std::set<std::string> ended;
  std::string current;
  bool any = false;
  std::string_view key, record;
  while (sorter.next(key, record)) {
    if (!any || key != current) {
      if (any) ended.insert(current);
      ASSERT_EQ(ended.count(std::string(key)), 0u) << "key '" << key << "' came back in two groups";
      current.assign(key);
      any = true;
    }
    got[std::string(key)].emplace_back(record);
  }
  EXPECT_EQ(got, expected);
  EXPECT_FALSE(sorter.next(key, record)) << "the end stays the end";
}

struct Record {
  std::string key;
  int64_t order;
  std::string value;
};
struct Input {
  std::vector<Record> records;
  std::map<std::string, std::vector<std::string>> byKey;  // each key's values, as they must come back
};

// `count` records over `keys` keys, of orders 0 to 9 (many equal), `size` bytes or so.
Input randomInput(size_t count, size_t keys, uint32_t seed, size_t size = 40) {
  std::mt19937 random(seed);
  Input in;
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> ordered;
  for (size_t i = 0; i < count; ++i) {
    std::string key = "key-" + std::to_string(random() % keys);
    const int64_t order = random() % 10;
    std::string value(random() % size, 'a' + static_cast<char>(i % 26));
    value += std::to_string(i);  // every record distinct, so order shows
    in.records.push_back({key, order, value});
    ordered[key].emplace_back(order, value);
  }
  for (auto& [key, list] : ordered) {
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [order, value] : list) in.byKey[key].push_back(value);
  }
  return in;
}

TEST(ExternalSorter, GroupsKeysInMemoryWithinItsBudget) {
  Input in = randomInput(20000, 700, 1);
  ExternalSorter sorter(64 << 20, std::filesystem::temp_directory_path().string(), "op (1/1)");
  for (auto& r : in.records) sorter.add(r.key, r.order, r.value);
  sorter.finish();
  EXPECT_EQ(sorter.spilledRuns(), 0u);
  expectGroupedAsAdded(sorter, in.byKey);
}

// 64 KiB reads two runs at once: some 60 runs are merged in six passes.
TEST(ExternalSorter, SpillsRunsBeyondItsBudgetAndMergesThemInPasses) {
  Input in = randomInput(50000, 3000, 2);
  size_t inputBytes = 0;
  for (auto& r : in.records) inputBytes += r.key.size() + r.value.size();
  ExternalSorter sorter(64 << 10, std::filesystem::temp_directory_path().string(), "op (1/1)");
  for (auto& r : in.records) {
    sorter.add(r.key, r.order, r.value);
    ASSERT_LE(sorter.bufferedBytes(), size_t{64} << 10);
  }
  sorter.finish();
  EXPECT_GT(sorter.spilledRuns(), 32u);
  EXPECT_GE(sorter.spilledBytes(), 5 * inputBytes) << "fewer merge passes than 64 runs two at a time take";
  expectGroupedAsAdded(sorter, in.byKey);
}

// 1 MiB reads 16 runs at once through 64 KiB each: some ten runs of about 1 MiB are
// read back in many refills of their buffers, in one pass.
TEST(ExternalSorter, ReadsRunsLargerThanItsReadBuffersInOnePass) {
  Input in = randomInput(60000, 5000, 3, 300);
  size_t inputBytes = 0;
  for (auto& r : in.records) inputBytes += r.key.size() + r.value.size();
  ASSERT_GT(inputBytes, size_t{8} << 20);
  ExternalSorter sorter(1 << 20, std::filesystem::temp_directory_path().string(), "op (1/1)");
  for (auto& r : in.records) sorter.add(r.key, r.order, r.value);
  sorter.finish();
  EXPECT_GE(sorter.spilledRuns(), 8u);
  EXPECT_LT(sorter.spilledRuns(), 16u);
  EXPECT_LT(sorter.spilledBytes(), 2 * inputBytes) << "merged in more than one pass";
  expectGroupedAsAdded(sorter, in.byKey);
}

// Keys whose hashes collide (a hash of their length's parity: 700 keys share two, keys
// of 5 and 7 bytes one) still come back one key at a time, in memory and through spilled
// runs; so do they with XXH3 again.
TEST(ExternalSorter, GroupsKeysWhoseHashesCollide) {
  struct Colliding {
    Colliding() { setExternalSorterHashForTesting([](const void*, size_t size) -> uint64_t { return size % 2; }); }
    ~Colliding() { setExternalSorterHashForTesting(nullptr); }
  };
  std::optional<Colliding> colliding(std::in_place);
  for (size_t budget : {size_t{64} << 20, size_t{64} << 10}) {
    SCOPED_TRACE(budget);
    Input in = randomInput(20000, 700, 4);
    ExternalSorter sorter(budget, std::filesystem::temp_directory_path().string(), "op (1/1)");
    for (auto& r : in.records) sorter.add(r.key, r.order, r.value);
    sorter.finish();
    EXPECT_EQ(sorter.spilledRuns() > 0, budget < (size_t{1} << 20));
    expectGroupedAsAdded(sorter, in.byKey);
  }
  colliding.reset();
  Input in = randomInput(20000, 700, 5);
  ExternalSorter sorter(64 << 20, std::filesystem::temp_directory_path().string(), "op (1/1)");
  for (auto& r : in.records) sorter.add(r.key, r.order, r.value);
  expectGroupedAsAdded(sorter, in.byKey);
}

TEST(ExternalSorter, KeepsARecordLargerThanItsBudget) {
  ExternalSorter sorter(1024, std::filesystem::temp_directory_path().string(), "op (1/1)");
  std::string big(300000, 'x');
  sorter.add("a", 0, "small");
  sorter.add("b", 0, big);
  sorter.add("a", 0, "again");
  expectGroupedAsAdded(sorter, {{"a", {"small", "again"}}, {"b", {big}}});
}

TEST(ExternalSorter, GivesNothingForNoInput) {
  ExternalSorter sorter(1 << 20, "/nonexistent-is-never-opened", "op (1/1)");
  std::string_view key, record;
  EXPECT_FALSE(sorter.next(key, record));
}

TEST(ExternalSorter, NamesTheFolderItCannotSpillTo) {
  ExternalSorter sorter(1024, "/nonexistent/weir-spill", "Keyed Reduce (2/4)");
  try {
    for (int i = 0; i < 1000; ++i) sorter.add(std::to_string(i), 0, std::string(100, 'r'));
    FAIL() << "spilling to a missing folder must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("Keyed Reduce (2/4): cannot spill sorted input to '/nonexistent/weir-spill'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace weir::detail
