// State schema evolution on both backends: keyed value, list, map, reducing and
// aggregating state (and a value with a TTL) written with one version of a WEIR_STRUCT
// are checkpointed, restored into a store whose states declare the next version (a field
// added with a default, one removed, the others reordered), and read back as a
// conversion by hand gives them; a field whose type changed is refused, naming it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/state_test_harness.h"

namespace v1 {
struct Tally {
  int64_t count = 0;
  std::string label;
  int64_t scratch = 0;  // removed in v2
};
WEIR_STRUCT(Tally, count, label, scratch);
}  // namespace v1

namespace v2 {
struct Tally {
  std::string label;  // reordered
  int64_t count = 0;
  int32_t weight = 7;  // new
};
WEIR_STRUCT(Tally, label, count, weight);
bool operator==(const Tally& a, const Tally& b) {
  return a.label == b.label && a.count == b.count && a.weight == b.weight;
}
std::ostream& operator<<(std::ostream& out, const Tally& t) {
  return out << "{" << t.label << ", " << t.count << ", " << t.weight << "}";
}
}  // namespace v2

namespace retyped {
struct Tally {
  double count = 0;  // was int64
  std::string label;
  int64_t scratch = 0;
};
WEIR_STRUCT(Tally, count, label, scratch);
}  // namespace retyped

namespace weir {
namespace {

using test::StateHarness;

template <class Tally>
struct Add {
  Tally reduce(Tally a, const Tally& b) {
    a.count += b.count;
    return a;
  }
};

template <class Tally>
struct CountInto : AggregateFunction<int64_t, Tally, int64_t> {
  Tally createAccumulator() override { return Tally{}; }
  Tally add(const int64_t& v, Tally acc) override {
    acc.count += v;
    acc.label = "sum";
    return acc;
  }
  int64_t getResult(const Tally& acc) override { return acc.count; }
  Tally merge(Tally a, const Tally& b) override {
    a.count += b.count;
    return a;
  }
};

v1::Tally oldTally(int64_t key, int64_t i) { return {key * 10 + i, "k" + std::to_string(key), key * 1000}; }
v2::Tally newTally(int64_t key, int64_t i) { return {"k" + std::to_string(key), key * 10 + i, 7}; }

constexpr int64_t kKeys = 40;

class StateMigrationTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Writes every state with v1::Tally for kKeys keys, and returns the store's checkpoint.
  detail::RestoredOperatorState writeVersion1() {
    auto& c = h_.context();
    auto& value = c.getState(ValueStateDescriptor<v1::Tally>("value"));
    auto& list = c.getListState(ListStateDescriptor<v1::Tally>("list"));
    auto& map = c.getMapState(MapStateDescriptor<std::string, v1::Tally>("map"));
    auto& reducing = c.getReducingState(ReducingStateDescriptor<v1::Tally>("reducing", Add<v1::Tally>{}));
    auto& aggregating = c.getAggregatingState(
        AggregatingStateDescriptor<int64_t, v1::Tally, int64_t>("aggregating", CountInto<v1::Tally>{}));
    ValueStateDescriptor<v1::Tally> ttl("ttl");
    ttl.enableTimeToLive(StateTtlConfig::newBuilder(std::chrono::hours(1)).build());
    auto& withTtl = c.getState(ttl);
    for (int64_t k = 0; k < kKeys; ++k) {
      h_.setKey(k);
      value.update(oldTally(k, 0));
      for (int64_t i = 0; i <= k % 3; ++i) list.add(oldTally(k, i));
      map.put("a", oldTally(k, 1));
      map.put("b", oldTally(k, 2));
      reducing.add(oldTally(k, 0));
      aggregating.add(k);
      withTtl.update(oldTally(k, 5));
    }
    return h_.checkpoint();
  }

  StateHarness<int64_t> h_{GetParam()};
};

TEST_P(StateMigrationTest, EveryKindOfStateRestoresAddedRemovedAndReorderedFields) {
  auto restored = writeVersion1();
  h_.restore(restored);
  auto& c = h_.context();
  auto& value = c.getState(ValueStateDescriptor<v2::Tally>("value"));
  auto& list = c.getListState(ListStateDescriptor<v2::Tally>("list"));
  auto& map = c.getMapState(MapStateDescriptor<std::string, v2::Tally>("map"));
  auto& reducing = c.getReducingState(ReducingStateDescriptor<v2::Tally>("reducing", Add<v2::Tally>{}));
  auto& aggregating = c.getAggregatingState(
      AggregatingStateDescriptor<int64_t, v2::Tally, int64_t>("aggregating", CountInto<v2::Tally>{}));
  ValueStateDescriptor<v2::Tally> ttl("ttl");
  ttl.enableTimeToLive(StateTtlConfig::newBuilder(std::chrono::hours(1)).build());
  auto& withTtl = c.getState(ttl);
  for (int64_t k = 0; k < kKeys; ++k) {
    h_.setKey(k);
    EXPECT_EQ(value.value(), newTally(k, 0)) << "key " << k;
    std::vector<v2::Tally> expected;
    for (int64_t i = 0; i <= k % 3; ++i) expected.push_back(newTally(k, i));
    EXPECT_EQ(list.get(), expected) << "key " << k;
    EXPECT_EQ(map.get("a"), newTally(k, 1));
    EXPECT_EQ(map.get("b"), newTally(k, 2));
    EXPECT_EQ(reducing.get(), newTally(k, 0));
    reducing.add(v2::Tally{"", 1, 0});  // the migrated value goes on reducing
    EXPECT_EQ(reducing.get()->count, k * 10 + 1);
    EXPECT_EQ(reducing.get()->weight, 7);
    EXPECT_EQ(aggregating.get(), k);
    EXPECT_EQ(withTtl.value(), newTally(k, 5));
  }
  // What was migrated is checkpointed in the new schema, and restores as it is.
  auto again = h_.checkpoint();
  h_.restore(again);
  auto& valueAgain = h_.context().getState(ValueStateDescriptor<v2::Tally>("value"));
  h_.setKey(3);
  EXPECT_EQ(valueAgain.value(), newTally(3, 0));
}

TEST_P(StateMigrationTest, AFieldWhoseTypeChangedIsRefusedNamingTheStateAndTheField) {
  auto restored = writeVersion1();
  detail::RestoredOperatorState sameCheckpoint;
  sameCheckpoint.keyGroups = restored.keyGroups;
  sameCheckpoint.keyed = restored.keyed;
  sameCheckpoint.keyedSchemas = restored.keyedSchemas;
  h_.restore(restored);
  try {
    h_.context().getState(ValueStateDescriptor<retyped::Tally>("value"));
    FAIL() << "restored int64 counts as doubles";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kState);
    EXPECT_NE(std::string(e.what()).find("state 'value' of 'test' does not have the type the restored checkpoint "
                                         "recorded for it: 'state.value.count' was int64, is now float64"),
              std::string::npos)
        << e.what();
  }
  // A state whose key type changed is refused too: its entries could not be found.
  StateHarness<std::string> byName(GetParam());
  byName.restore(sameCheckpoint);
  try {
    byName.context().getState(ValueStateDescriptor<v1::Tally>("value"));
    FAIL() << "restored int64 keys as strings";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'state.key' was int64, is now string, and the keys of entries cannot migrate"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, StateMigrationTest, ::testing::Values("heap", "rocksdb"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace weir
