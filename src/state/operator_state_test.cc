// Operator state: snapshot, redistribution to another parallelism, restore.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "weir/checkpointed_function.h"

// An element type as two versions of a job declare it.
namespace v1 {
struct Offset {
  int64_t position = 0;
  std::string topic;
};
WEIR_STRUCT(Offset, position, topic);
}  // namespace v1
namespace v2 {
struct Offset {
  std::string topic;  // reordered
  int64_t position = 0;
  int32_t partition = -1;  // new
  bool operator==(const Offset&) const = default;
};
WEIR_STRUCT(Offset, topic, position, partition);
}  // namespace v2
namespace retyped {
struct Offset {
  double position = 0;  // was int64
  std::string topic;
};
WEIR_STRUCT(Offset, position, topic);
}  // namespace retyped

namespace weir {
namespace {

using detail::OperatorStateMode;
using detail::OperatorStateRegistry;
using detail::OperatorStateSnapshot;

// Instance i of `sizes.size()` holds sizes[i] consecutive numbers in "offsets" (a split
// list) and its index in "members" (a union list).
std::vector<std::vector<OperatorStateSnapshot>> snapshotsOf(const std::vector<int>& sizes) {
  std::vector<std::vector<OperatorStateSnapshot>> out;
  int next = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    OperatorStateRegistry registry;
    OperatorStateStore store(&registry);
    auto& offsets = store.getListState(ListStateDescriptor<int>("offsets"));
    for (int j = 0; j < sizes[i]; ++j) offsets.add(next++);
    store.getUnionListState(ListStateDescriptor<std::string>("members")).add("instance-" + std::to_string(i));
    out.push_back(registry.snapshot());
  }
  return out;
}

struct Restored {
  std::vector<int> offsets;
  std::vector<std::string> members;
};

Restored restore(std::vector<OperatorStateSnapshot> snapshot) {
  OperatorStateRegistry registry(std::move(snapshot));
  EXPECT_TRUE(registry.isRestored());
  OperatorStateStore store(&registry);
  return {store.getListState(ListStateDescriptor<int>("offsets")).get(),
          store.getUnionListState(ListStateDescriptor<std::string>("members")).get()};
}

TEST(OperatorState, ListStateIsSplitEvenlyInOrderAndUnionStateGoesToEveryInstance) {
  const std::vector<int> sizes{5, 0, 7};  // 12 offsets over 3 instances
  for (int parallelism : {1, 2, 4, 5, 13}) {
    auto parts = detail::redistributeOperatorState(snapshotsOf(sizes), parallelism);
    ASSERT_EQ(parts.size(), static_cast<size_t>(parallelism));
    std::vector<int> concatenated;
    size_t smallest = SIZE_MAX, largest = 0;
    for (auto& part : parts) {
      Restored r = restore(part);
      concatenated.insert(concatenated.end(), r.offsets.begin(), r.offsets.end());
      smallest = std::min(smallest, r.offsets.size());
      largest = std::max(largest, r.offsets.size());
      EXPECT_EQ(std::multiset<std::string>(r.members.begin(), r.members.end()),
                (std::multiset<std::string>{"instance-0", "instance-1", "instance-2"}))
          << "parallelism " << parallelism << ": every instance gets the whole union";
    }
    std::vector<int> all(12);
    for (int i = 0; i < 12; ++i) all[static_cast<size_t>(i)] = i;
    EXPECT_EQ(concatenated, all) << "parallelism " << parallelism << ": every offset once, in order";
    EXPECT_LE(largest - smallest, 1u) << "parallelism " << parallelism;
  }
}

// As in Flink: at the same parallelism every instance gets back exactly its own list.
TEST(OperatorState, AtTheSameParallelismEachInstanceKeepsItsOwnList) {
  const std::vector<int> sizes{5, 0, 7, 1};
  auto parts = detail::redistributeOperatorState(snapshotsOf(sizes), 4);
  int next = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int> own(static_cast<size_t>(sizes[i]));
    for (int& v : own) v = next++;
    Restored r = restore(parts[i]);
    EXPECT_EQ(r.offsets, own) << "instance " << i;
    EXPECT_EQ(r.members.size(), sizes.size()) << "a union list still goes whole to each";
  }
}

// Several split lists whose sizes do not divide evenly: the extra elements of one state
// go on where the previous state's stopped (Flink's round-robin), so in total no new
// instance holds more than one element above another.
TEST(OperatorState, ExtraElementsOfSeveralListsAreSpreadRoundRobin) {
  std::vector<std::vector<OperatorStateSnapshot>> old(2);
  const std::vector<std::pair<std::string, int>> states{{"a", 4}, {"b", 7}, {"c", 1}, {"d", 9}, {"e", 5}};
  for (const auto& [name, n] : states) {
    OperatorStateSnapshot s{name, OperatorStateMode::kSplitDistribute, {}};
    for (int i = 0; i < n; ++i) s.elements.push_back(name + std::to_string(i));
    old[0].push_back(s);
  }
  for (int parallelism : {3, 4, 5, 7}) {
    auto parts = detail::redistributeOperatorState(old, parallelism);
    size_t smallest = SIZE_MAX, largest = 0;
    std::map<std::string, std::vector<std::string>> concatenated;
    for (const auto& instance : parts) {
      size_t total = 0;
      for (const auto& s : instance) {
        total += s.elements.size();
        concatenated[s.name].insert(concatenated[s.name].end(), s.elements.begin(), s.elements.end());
      }
      smallest = std::min(smallest, total);
      largest = std::max(largest, total);
    }
    EXPECT_LE(largest - smallest, 1u) << "parallelism " << parallelism;
    for (const auto& [name, n] : states)
      EXPECT_EQ(concatenated[name].size(), static_cast<size_t>(n)) << name << ": every element once";
  }
}

TEST(OperatorState, AStateRestoredAsTheOtherKindIsRefusedByName) {
  auto parts = detail::redistributeOperatorState(snapshotsOf({2}), 1);
  OperatorStateRegistry registry(parts[0]);
  OperatorStateStore store(&registry);
  try {
    store.getUnionListState(ListStateDescriptor<int>("offsets"));
    FAIL() << "a split list cannot come back as a union list";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "operator state 'offsets' was snapshotted as a list state and cannot be restored as a union list state");
  }
  OperatorStateRegistry fresh;
  OperatorStateStore freshStore(&fresh);
  EXPECT_FALSE(fresh.isRestored());
  freshStore.getListState(ListStateDescriptor<int>("x"));
  EXPECT_THROW(freshStore.getListState(ListStateDescriptor<std::string>("x")), Error);
}

// The schema of the elements goes with them through redistribution; a split and a union
// list restored as the next version of their struct get their elements migrated.
TEST(OperatorState, ElementsOfAChangedStructAreMigratedAtAnyParallelism) {
  std::vector<std::vector<OperatorStateSnapshot>> old;
  for (int i = 0; i < 2; ++i) {
    OperatorStateRegistry registry;
    OperatorStateStore store(&registry);
    auto& split = store.getListState(ListStateDescriptor<v1::Offset>("offsets"));
    for (int j = 0; j < 3; ++j) split.add({i * 10 + j, "t" + std::to_string(i)});
    store.getUnionListState(ListStateDescriptor<v1::Offset>("all")).add({i, "u"});
    old.push_back(registry.snapshot());
    ASSERT_TRUE(old.back()[0].schema.has_value());
  }
  std::vector<v2::Offset> offsets, all;
  for (auto& part : detail::redistributeOperatorState(old, 3)) {
    OperatorStateRegistry registry(part);
    OperatorStateStore store(&registry);
    for (const auto& o : store.getListState(ListStateDescriptor<v2::Offset>("offsets")).get()) offsets.push_back(o);
    all = store.getUnionListState(ListStateDescriptor<v2::Offset>("all")).get();
  }
  EXPECT_EQ(offsets, (std::vector<v2::Offset>{
                         {"t0", 0, -1}, {"t0", 1, -1}, {"t0", 2, -1}, {"t1", 10, -1}, {"t1", 11, -1}, {"t1", 12, -1}}));
  EXPECT_EQ(all, (std::vector<v2::Offset>{{"u", 0, -1}, {"u", 1, -1}}));
}

TEST(OperatorState, AnElementFieldOfAnotherTypeIsRefusedNamingTheStateAndTheField) {
  OperatorStateRegistry before;
  OperatorStateStore(&before).getListState(ListStateDescriptor<v1::Offset>("offsets")).add({1, "t"});
  OperatorStateRegistry registry(before.snapshot());
  OperatorStateStore store(&registry);
  try {
    store.getListState(ListStateDescriptor<retyped::Offset>("offsets"));
    FAIL() << "int64 positions restored as doubles";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kState);
    EXPECT_NE(std::string(e.what()).find("operator state 'offsets' does not have the type the restored checkpoint "
                                         "recorded for it: 'state.element.position' was int64, is now float64"),
              std::string::npos)
        << e.what();
  }
}

TEST(OperatorState, BytesThatDoNotDecodeNameTheState) {
  OperatorStateSnapshot corrupt{"offsets", OperatorStateMode::kSplitDistribute, {std::string("\x01", 1)}};
  OperatorStateRegistry registry({corrupt});
  OperatorStateStore store(&registry);
  try {
    store.getListState(ListStateDescriptor<int>("offsets"));
    FAIL() << "one byte is no int";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSerialization);
    EXPECT_NE(std::string(e.what()).find("state 'offsets'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir
