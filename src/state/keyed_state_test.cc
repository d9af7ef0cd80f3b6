// Every keyed state operation, checked the same way on the heap and on RocksDB.
#include <filesystem>
#include <fstream>
#include <thread>

#include <signal.h>
#include <sys/resource.h>

#include <csignal>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/state_test_harness.h"
#include "weir/detail/core/metric_registry.h"

namespace weir {
namespace {

using detail::KeyedStateBackend;
using test::StateHarness;

struct Average : AggregateFunction<int, std::pair<int64_t, int64_t>, double> {
  std::pair<int64_t, int64_t> createAccumulator() override { return {0, 0}; }
  std::pair<int64_t, int64_t> add(const int& v, std::pair<int64_t, int64_t> acc) override {
    return {acc.first + v, acc.second + 1};
  }
  double getResult(const std::pair<int64_t, int64_t>& acc) override {
    return static_cast<double>(acc.first) / static_cast<double>(acc.second);
  }
  std::pair<int64_t, int64_t> merge(std::pair<int64_t, int64_t> a, const std::pair<int64_t, int64_t>& b) override {
    return {a.first + b.first, a.second + b.second};
  }
};

class KeyedStateTest : public ::testing::TestWithParam<std::string> {
 protected:
  bool rocksdb() const { return GetParam() == "rocksdb"; }
  StateHarness<std::string> h_{GetParam()};
};

TEST_P(KeyedStateTest, ValueStateIsPerKeyWithAnOptionalDefault) {
  auto& count = h_.context().getState(ValueStateDescriptor<int64_t>("count"));
  auto& name = h_.context().getState(ValueStateDescriptor<std::string>("name", "nobody"));
  h_.setKey("a");
  EXPECT_EQ(count.value(), std::nullopt);
  EXPECT_EQ(name.value(), "nobody");
  count.update(1);
  name.update("alice");
  h_.setKey("b");
  EXPECT_EQ(count.value(), std::nullopt);
  count.update(7);
  count.update(8);
  h_.setKey("a");
  EXPECT_EQ(count.value(), 1);
  EXPECT_EQ(name.value(), "alice");
  count.clear();
  name.clear();
  EXPECT_EQ(count.value(), std::nullopt);
  EXPECT_EQ(name.value(), "nobody");
  h_.setKey("b");
  EXPECT_EQ(count.value(), 8);
}

// Flink's ValueState#update(null) clears the state: here an empty std::optional.
TEST_P(KeyedStateTest, UpdatingAValueStateWithNothingClearsIt) {
  auto& count = h_.context().getState(ValueStateDescriptor<int64_t>("count"));
  auto& name = h_.context().getState(ValueStateDescriptor<std::string>("name", "nobody"));
  h_.setKey("a");
  count.update(std::optional<int64_t>(3));
  name.update(std::optional<std::string>("alice"));
  EXPECT_EQ(count.value(), 3);
  EXPECT_EQ(name.value(), "alice");
  h_.setKey("b");
  count.update(4);
  count.update(std::optional<int64_t>());
  name.update(std::nullopt);
  EXPECT_EQ(count.value(), std::nullopt);
  EXPECT_EQ(name.value(), "nobody");
  h_.setKey("a");
  std::optional<int64_t> none;
  count.update(none);
  EXPECT_EQ(count.value(), std::nullopt);
  EXPECT_EQ(name.value(), "alice");
}

TEST_P(KeyedStateTest, ListStateAddsUpdatesAndClears) {
  auto& list = h_.context().getListState(ListStateDescriptor<std::string>("list"));
  h_.setKey("a");
  EXPECT_TRUE(list.get().empty());
  list.add("x");
  list.addAll({"y", "z"});
  list.addAll({});
  h_.setKey("b");
  list.add("only b");
  h_.setKey("a");
  EXPECT_EQ(list.get(), (std::vector<std::string>{"x", "y", "z"}));
  list.update({"p", "q"});
  EXPECT_EQ(list.get(), (std::vector<std::string>{"p", "q"}));
  list.update({});
  EXPECT_TRUE(list.get().empty());
  list.add("again");
  list.clear();
  EXPECT_TRUE(list.get().empty());
  h_.setKey("b");
  EXPECT_EQ(list.get(), std::vector<std::string>{"only b"});
}

TEST_P(KeyedStateTest, MapStateSupportsEveryOperation) {
  auto& map = h_.context().getMapState(MapStateDescriptor<std::string, int>("map"));
  h_.setKey("a");
  EXPECT_TRUE(map.isEmpty());
  EXPECT_EQ(map.get("x"), std::nullopt);
  map.put("x", 1);
  map.putAll({{"y", 2}, {"z", 3}});
  map.put("x", 10);
  EXPECT_FALSE(map.isEmpty());
  EXPECT_TRUE(map.contains("y"));
  EXPECT_FALSE(map.contains("w"));
  EXPECT_EQ(map.get("x"), 10);
  map.remove("y");
  map.remove("never there");
  EXPECT_FALSE(map.contains("y"));

  std::map<std::string, int> entries;
  for (const auto& [k, v] : map.entries()) entries[k] = v;
  EXPECT_EQ(entries, (std::map<std::string, int>{{"x", 10}, {"z", 3}}));
  std::multiset<std::string> keys;
  for (const auto& k : map.keys()) keys.insert(k);
  EXPECT_EQ(keys, (std::multiset<std::string>{"x", "z"}));
  std::multiset<int> values;
  for (int v : map.values()) values.insert(v);
  EXPECT_EQ(values, (std::multiset<int>{3, 10}));

  h_.setKey("b");
  EXPECT_TRUE(map.isEmpty());
  map.put("x", 99);
  h_.setKey("a");
  map.clear();
  EXPECT_TRUE(map.isEmpty());
  EXPECT_EQ(map.get("x"), std::nullopt);
  h_.setKey("b");
  EXPECT_EQ(map.get("x"), 99);
}

TEST_P(KeyedStateTest, MapIterationStaysValidWhileOtherKeysChange) {
  auto& map = h_.context().getMapState(MapStateDescriptor<int, int>("map"));
  h_.setKey("iterated");
  for (int i = 0; i < 100; ++i) map.put(i, i * i);
  std::map<int, int> seen;
  auto entries = map.entries();
  int step = 0;
  for (const auto& [k, v] : entries) {
    seen[k] = v;
    // Between steps, other keys grow and shrink their maps (new slots, new chunks).
    h_.setKey("other-" + std::to_string(step++));
    for (int i = 0; i < 50; ++i) map.put(i, -i);
    map.remove(3);
    map.clear();
  }
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i * i);
}

TEST_P(KeyedStateTest, ChangingTheIteratedMapIsSafe) {
  auto& map = h_.context().getMapState(MapStateDescriptor<int, int>("map"));
  h_.setKey("a");
  for (int i = 0; i < 10; ++i) map.put(i, i);
  std::set<int> seen;
  for (int k : map.keys()) {  // the keys present when the iteration began
    seen.insert(k);
    map.put(100 + k, 0);
    if (k < 5) map.remove(k + 5);  // heap: skipped if not reached yet; RocksDB: still seen
  }
  EXPECT_TRUE(seen.size() >= 5 && seen.size() <= 10) << seen.size();
  for (int k : seen) EXPECT_LT(k, 10) << "a key added during the iteration was listed";
  EXPECT_EQ(map.get(100), 0);
}

TEST_P(KeyedStateTest, ReducingStateReducesAsValuesArrive) {
  auto& sum = h_.context().getReducingState(
      ReducingStateDescriptor<int64_t>("sum", [](const int64_t& a, const int64_t& b) { return a + b; }));
  h_.setKey("a");
  EXPECT_EQ(sum.get(), std::nullopt);
  for (int64_t i = 1; i <= 10; ++i) sum.add(i);
  h_.setKey("b");
  sum.add(-5);
  h_.setKey("a");
  EXPECT_EQ(sum.get(), 55);
  sum.clear();
  EXPECT_EQ(sum.get(), std::nullopt);
  h_.setKey("b");
  EXPECT_EQ(sum.get(), -5);
}

TEST_P(KeyedStateTest, AggregatingStateHasItsOwnAccumulatorAndResultTypes) {
  auto& avg = h_.context().getAggregatingState(AggregatingStateDescriptor("avg", Average{}));
  h_.setKey("a");
  EXPECT_EQ(avg.get(), std::nullopt);
  avg.add(1);
  avg.add(2);
  h_.setKey("b");
  avg.add(10);
  h_.setKey("a");
  avg.add(6);
  EXPECT_DOUBLE_EQ(*avg.get(), 3.0);
  avg.clear();
  EXPECT_EQ(avg.get(), std::nullopt);
  h_.setKey("b");
  EXPECT_DOUBLE_EQ(*avg.get(), 10.0);
}

// Window state is scoped to a namespace (the window) as well as to the key.
TEST_P(KeyedStateTest, NamespacesSeparateEntriesOfOneKey) {
  auto& store = h_.store();
  ValueStateDescriptor<std::string> d("per-window");
  using namespace detail;
  auto& state = keyedState<ValueState<std::string>, HeapValueState<int64_t, std::string>,
                           RocksDBValueState<int64_t, std::string>, true, std::string>(
      store, "ValueState", stateLayout<int64_t, std::string>({"value"}), d);
  auto setNamespace = [&](int64_t ns) {
    if (rocksdb()) {
      dynamic_cast<RocksDBValueState<int64_t, std::string>&>(state).setCurrentNamespace(ns);
    } else {
      dynamic_cast<HeapValueState<int64_t, std::string>&>(state).setCurrentNamespace(ns);
    }
  };
  h_.setKey("a");
  setNamespace(1);
  state.update("a1");
  setNamespace(2);
  state.update("a2");
  h_.setKey("b");
  setNamespace(1);
  state.update("b1");
  h_.setKey("a");
  EXPECT_EQ(state.value(), "a1");
  setNamespace(2);
  EXPECT_EQ(state.value(), "a2");
  state.clear();
  EXPECT_EQ(state.value(), std::nullopt);
  setNamespace(1);
  EXPECT_EQ(state.value(), "a1");
  h_.setKey("b");
  EXPECT_EQ(state.value(), "b1");
}

TEST_P(KeyedStateTest, MegabyteValuesRoundTrip) {
  auto& value = h_.context().getState(ValueStateDescriptor<std::string>("big"));
  auto& list = h_.context().getListState(ListStateDescriptor<std::string>("big-list"));
  std::string mb(1 << 20, '\0');
  for (size_t i = 0; i < mb.size(); ++i) mb[i] = static_cast<char>(i * 131 % 251);
  h_.setKey("k");
  value.update(mb);
  list.add(mb);
  list.add(mb + "!");
  EXPECT_EQ(value.value(), mb);
  auto elements = list.get();
  ASSERT_EQ(elements.size(), 2u);
  EXPECT_EQ(elements[0], mb);
  EXPECT_EQ(elements[1], mb + "!");
}

TEST_P(KeyedStateTest, AMillionKeysKeepTheirOwnValues) {
  StateHarness<int64_t> h(GetParam());
  auto& state = h.context().getState(ValueStateDescriptor<int64_t>("v"));
  constexpr int64_t kKeys = 1'000'000;
  for (int64_t k = 0; k < kKeys; ++k) {
    h.setKey(k);
    state.update(k * 3 + 1);
  }
  for (int64_t k = kKeys - 1; k >= 0; k -= 7) {  // another order than the writes
    h.setKey(k);
    ASSERT_EQ(state.value(), k * 3 + 1) << "key " << k;
  }
  h.setKey(kKeys);
  EXPECT_EQ(state.value(), std::nullopt);
}

TEST_P(KeyedStateTest, ReadsEveryEntryOfAKeyGroupRange) {
  auto& state = h_.context().getState(ValueStateDescriptor<int>("v"));
  auto& map = h_.context().getMapState(MapStateDescriptor<int, int>("m"));
  std::map<std::string, int> expected;  // key -> value, for keys in the range
  const KeyGroupRange range{10, 40};
  for (int i = 0; i < 2000; ++i) {
    std::string key = "key-" + std::to_string(i);
    h_.setKey(key);
    state.update(i);
    map.put(1, i);
    map.put(2, -i);
    if (i % 10 == 0) {
      state.clear();  // cleared entries are not read
    } else if (range.contains(assignToKeyGroup(KeyHash<std::string>{}(key), 128))) {
      expected[key] = i;
    }
  }
  std::map<std::string, int> read;
  int lastGroup = -1;
  h_.store().readEntries("v", range, [&](const detail::StateEntry& e) {
    EXPECT_GE(e.keyGroup, lastGroup) << "entries come grouped by key group";
    lastGroup = e.keyGroup;
    DataInput key(e.key);
    std::string k = Serializer<std::string>::deserialize(key);
    EXPECT_TRUE(key.atEnd());
    EXPECT_EQ(assignToKeyGroup(KeyHash<std::string>{}(k), 128), e.keyGroup);
    DataInput value(e.value);
    read[k] = Serializer<int>::deserialize(value);
  });
  EXPECT_EQ(read, expected);
  ASSERT_GT(expected.size(), 300u);

  size_t mapEntries = 0;
  h_.store().readEntries("m", range, [&](const detail::StateEntry& e) {
    DataInput key(e.key);
    std::string k = Serializer<std::string>::deserialize(key);
    int userKey = Serializer<int>::deserialize(key);
    DataInput value(e.value);
    int v = Serializer<int>::deserialize(value);
    int i = std::stoi(k.substr(4));
    EXPECT_EQ(v, userKey == 1 ? i : -i);
    ++mapEntries;
  });
  size_t keysInRange = 0;
  for (int i = 0; i < 2000; ++i)
    keysInRange += range.contains(assignToKeyGroup(KeyHash<std::string>{}("key-" + std::to_string(i)), 128));
  EXPECT_EQ(mapEntries, 2 * keysInRange);
}

TEST_P(KeyedStateTest, TheSameNameGivesTheSameStateAndAnotherTypeIsRefused) {
  auto& a = h_.context().getState(ValueStateDescriptor<int>("s"));
  auto& b = h_.context().getState(ValueStateDescriptor<int>("s"));
  EXPECT_EQ(&a, &b);
  try {
    h_.context().getState(ValueStateDescriptor<std::string>("s"));
    FAIL() << "a second type under one name must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kState);
    EXPECT_NE(std::string(e.what()).find("state 's' is already registered as a ValueState"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(h_.context().getListState(ListStateDescriptor<int>("s")), Error);
}

TEST_P(KeyedStateTest, StateOutsideAKeyedContextIsAnErrorNamingIt) {
  auto& state = h_.context().getState(ValueStateDescriptor<int>("lonely"));
  h_.setKey("a");
  state.update(1);
  h_.store().clearCurrentKey();
  try {
    state.value();
    FAIL() << "no current key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kState);
    EXPECT_NE(std::string(e.what()).find("state 'lonely' was used outside a keyed context"), std::string::npos);
  }
  RuntimeContext unkeyed("my-map", 0, 1, 128);
  try {
    unkeyed.getState(ValueStateDescriptor<int>("lonely"));
    FAIL() << "no keyed store";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kState);
    EXPECT_NE(std::string(e.what()).find("state 'lonely' is keyed state, but operator 'my-map' is not on a keyed stream"),
              std::string::npos);
  }
}

// Snapshots: what a checkpoint's synchronous part takes and its asynchronous part reads.
class StateSnapshotTest : public ::testing::TestWithParam<std::string> {
 protected:
  using Entries = std::set<std::tuple<std::string, int, std::string, std::string>>;  // state, group, key, value

  static void read(const std::string& name, detail::StateSnapshot& snapshot, Entries& out) {
    snapshot.readEntries(KeyGroupRange{0, 127}, [&](const detail::StateEntry& e) {
      out.emplace(name, e.keyGroup, std::string(e.key), std::string(e.value));
    });
  }
  static Entries readAll(std::map<std::string, std::unique_ptr<detail::StateSnapshot>>& snapshots) {
    Entries out;
    for (auto& [name, snapshot] : snapshots) read(name, *snapshot, out);
    return out;
  }

  void SetUp() override {
    value_ = &h_.context().getState(ValueStateDescriptor<int64_t>("value"));
    list_ = &h_.context().getListState(ListStateDescriptor<std::string>("list"));
    map_ = &h_.context().getMapState(MapStateDescriptor<int, int64_t>("map"));
    for (int64_t k = 0; k < 3000; ++k) write(k, k);
  }
  void write(int64_t key, int64_t v) {
    h_.setKey(key);
    value_->update(v);
    list_->add(std::to_string(v));
    map_->put(static_cast<int>(v % 5), v);
  }
  // Changes every kind of entry: updates, removals, new keys, new map keys.
  void mutate(int round) {
    for (int64_t k = 0; k < 4000; ++k) {
      write(k, k * 7 + round);
      h_.setKey(k);
      if (k % 3 == 0) value_->clear();
      if (k % 5 == 0) list_->clear();
      if (k % 7 == 0) map_->clear();
    }
  }

  StateHarness<int64_t> h_{GetParam()};
  ValueState<int64_t>* value_ = nullptr;
  ListState<std::string>* list_ = nullptr;
  MapState<int, int64_t>* map_ = nullptr;
};

TEST_P(StateSnapshotTest, ASnapshotKeepsTheMomentItWasTaken) {
  auto before = h_.store().snapshot();
  Entries expected = readAll(before);
  ASSERT_EQ(expected.size(), 3000u * 3);
  auto snapshot = h_.store().snapshot();
  before.clear();
  mutate(1);
  EXPECT_EQ(readAll(snapshot), expected);
  auto now = h_.store().snapshot();
  EXPECT_NE(readAll(now), expected) << "the live state did change";
}

TEST_P(StateSnapshotTest, ASnapshotIsReadOnAnotherThreadWhileTheTaskWrites) {
  auto first = h_.store().snapshot();
  Entries expected = readAll(first);
  first.clear();
  auto snapshot = h_.store().snapshot();
  std::vector<Entries> reads(3);
  std::thread reader([&] {
    for (auto& r : reads) r = readAll(snapshot);
  });
  for (int round = 0; round < 5; ++round) mutate(round);
  reader.join();
  for (auto& r : reads) EXPECT_EQ(r, expected);
}

INSTANTIATE_TEST_SUITE_P(Backends, StateSnapshotTest, ::testing::Values("heap", "rocksdb"),
                         [](const auto& info) { return info.param; });

TEST(HeapStateBackend, KeysWhoseStateIsGoneGiveTheirSlotBack) {
  StateHarness<int64_t> h("heap");
  auto& value = h.context().getState(ValueStateDescriptor<int64_t>("v"));
  auto& map = h.context().getMapState(MapStateDescriptor<int, int>("m"));
  for (int64_t k = 0; k < 100'000; ++k) {
    h.setKey(k);
    value.update(k);
    map.put(1, 1);
    if (k % 1000 != 0) {  // all but every thousandth key lose their state again
      value.clear();
      map.remove(1);
    }
    h.setKey(-1 - k);  // a key that is only read
    EXPECT_EQ(value.value(), std::nullopt);
  }
  h.setKey(0);
  EXPECT_LE(h.store().keySlots(), 101u);
  for (int64_t k = 0; k < 100'000; k += 1000) {
    h.setKey(k);
    EXPECT_EQ(value.value(), k) << "a kept key lost its state";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, KeyedStateTest, ::testing::Values("heap", "rocksdb"),
                         [](const auto& info) { return info.param; });

// Both backends write the same canonical entries, so a snapshot of one restores into
// the other.
TEST(KeyedStateCanonicalForm, HeapAndRocksDBReadTheSameEntries) {
  auto entries = [](const std::string& backend) {
    StateHarness<int64_t> h(backend);
    auto& list = h.context().getListState(ListStateDescriptor<std::string>("l"));
    for (int64_t k = 0; k < 500; ++k) {
      h.setKey(k);
      for (int64_t j = 0; j <= k % 4; ++j) list.add(std::to_string(k * j));
    }
    std::set<std::tuple<int, std::string, std::string>> out;
    h.store().readEntries("l", KeyGroupRange{0, 127}, [&](const detail::StateEntry& e) {
      out.emplace(e.keyGroup, std::string(e.key), std::string(e.value));
    });
    return out;
  };
  auto heap = entries("heap");
  EXPECT_EQ(heap.size(), 500u);
  EXPECT_EQ(heap, entries("rocksdb"));
}

TEST(RocksDBStateBackend, RemovesItsFolderOnShutdown) {
  StateHarness<int> h("rocksdb");
  std::string dir = h.store().rocksdb()->directory();
  h.context().getState(ValueStateDescriptor<int>("v"));
  h.setKey(1);
  h.context().getState(ValueStateDescriptor<int>("v")).update(5);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  h.destroy();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(RocksDBStateBackend, AMissingOrUnusableFolderIsAClearError) {
  EmbeddedRocksDBStateBackend::Options options;
  options.localDirectory = "/nonexistent/weir-state";
  EmbeddedRocksDBStateBackend missing(options);
  try {
    KeyedStateBackend<int> store(missing, 128, "op");
    FAIL() << "a missing folder must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("'/nonexistent/weir-state' does not exist"), std::string::npos) << e.what();
  }
  // A file where the folder should be (root may write anywhere, so permissions would
  // not test this when the suite runs as root).
  std::string file = ::testing::TempDir() + "/weir-not-a-folder";
  { std::ofstream(file) << "x"; }
  options.localDirectory = file;
  EmbeddedRocksDBStateBackend notFolder(options);
  EXPECT_THROW(KeyedStateBackend<int>(notFolder, 128, "op"), Error);
  std::filesystem::remove(file);
}

TEST(RocksDBStateBackend, BytesThatDoNotDecodeAreAnErrorNamingStateAndKeyGroup) {
  StateHarness<int> h("rocksdb");
  auto& state = h.context().getState(ValueStateDescriptor<std::string>("names"));
  h.setKey(42);
  state.update("fine");
  // Corrupt the stored value: a length prefix longer than the bytes that follow.
  h.store().rocksdb()->column("names").put(h.store().keyContext().keyBytes, std::string("\x10" "ab", 3));
  int keyGroup = assignToKeyGroup(KeyHash<int>{}(42), 128);
  try {
    state.value();
    FAIL() << "corrupt bytes must not decode";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSerialization);
    EXPECT_NE(std::string(e.what()).find("state 'names', key group " + std::to_string(keyGroup)), std::string::npos)
        << e.what();
  }
}

struct Opaque {
  int x = 0;
};

TEST(RocksDBStateBackend, ATypeWithoutSerializerIsRefusedByName) {
  StateHarness<int> h("rocksdb");
  try {
    h.context().getState(ValueStateDescriptor<Opaque>("opaque"));
    FAIL() << "RocksDB needs a serializer";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("state 'opaque' holds"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no weir::Serializer"), std::string::npos) << e.what();
  }
  StateHarness<int> heap("heap");  // the heap keeps live objects: no serializer needed
  auto& state = heap.context().getState(ValueStateDescriptor<Opaque>("opaque"));
  heap.setKey(1);
  state.update(Opaque{3});
  EXPECT_EQ(state.value()->x, 3);
}

TEST(StateBackendNames, UnknownNamesAreRefused) {
  EXPECT_EQ(stateBackendFromName("heap")->getName(), "hashmap");
  EXPECT_EQ(stateBackendFromName("rocksdb")->getName(), "rocksdb");
  try {
    stateBackendFromName("leveldb");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown state backend 'leveldb': use heap (or hashmap) or rocksdb");
  }
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// A full disk, made real with RLIMIT_FSIZE: RocksDB's flushes fail with EFBIG, and the
// next write reports it as an error naming the state, never a crash or a lost write.
// RocksDB's own figures show as gauges of the operator, one per state and property
// (Flink's state.backend.rocksdb.metrics.*). 1,000 keys written once each are 1,000
// entries in the memtable, which is what RocksDB's estimate-num-keys counts there.
TEST(RocksDBStateBackend, NativeMetricsAreGaugesOfEachState) {
  for (bool asVariable : {false, true}) {
    EmbeddedRocksDBStateBackend::Options options;
    options.nativeMetrics = {"estimate-num-keys", "cur-size-all-mem-tables", "num-running-compactions"};
    options.metricsColumnFamilyAsVariable = asVariable;
    EmbeddedRocksDBStateBackend backend(options);
    detail::MetricRegistry registry;
    auto metrics = std::map<std::string, double>{};
    {
      KeyedStateBackend<int64_t> store(backend, 128, "native-metrics", std::make_shared<SystemClock>(),
                                       MetricGroup(&registry, "counter"));
      RuntimeContext context("op", 0, 1, 128);
      context.setKeyedStateBackend(&store);
      auto& counts = context.getState(ValueStateDescriptor<int64_t>("counts"));
      auto& other = context.getState(ValueStateDescriptor<int64_t>("other"));
      for (int64_t key = 0; key < 1000; ++key) {
        store.setCurrentKey(key);
        counts.update(key);
        if (key < 10) other.update(key);
      }
      registry.update();
      for (const auto& v : registry.values()) metrics[v.identifier()] = v.value;
    }
    const std::string counts = asVariable ? "counter.column_family.counts." : "counter.counts.";
    const std::string other = asVariable ? "counter.column_family.other." : "counter.other.";
    EXPECT_EQ(metrics[counts + "rocksdb.estimate-num-keys"], 1000) << asVariable;
    EXPECT_EQ(metrics[other + "rocksdb.estimate-num-keys"], 10);
    EXPECT_GT(metrics[counts + "rocksdb.cur-size-all-mem-tables"], 1000 * 10);  // each entry takes 10 bytes or more
    EXPECT_EQ(metrics[counts + "rocksdb.num-running-compactions"], 0);
    EXPECT_EQ(metrics.size(), 6u);  // three per state: the default column family shows none
  }
  // A property it does not know is refused when the backend is made.
  EmbeddedRocksDBStateBackend::Options bad;
  bad.nativeMetrics = {"estimate-num-keyz"};
  try {
    EmbeddedRocksDBStateBackend backend(bad);
    ADD_FAILURE() << "an unknown native metric was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'estimate-num-keyz' is not one weir shows"), std::string::npos) << e.what();
  }
}

TEST(RocksDBStateBackend, AFullDiskIsAnErrorNamingTheState) {
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  EmbeddedRocksDBStateBackend::Options options;
  options.writeBufferSize = 64 << 10;  // flush early and often
  EmbeddedRocksDBStateBackend backend(options);
  detail::KeyedStateBackend<int64_t> store(backend, 128, "full-disk");
  RuntimeContext context("op", 0, 1, 128);
  context.setKeyedStateBackend(&store);
  auto& state = context.getState(ValueStateDescriptor<std::string>("big"));
  struct rlimit small = old;
  small.rlim_cur = 256 << 10;  // no file may grow past 256 KiB
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  int64_t key = 0;
  try {
    for (; key < 200'000; ++key) {
      store.setCurrentKey(key);
      state.update(std::string(1000, 'x'));
    }
  } catch (const Error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  ASSERT_FALSE(error.empty()) << "200 MB were written past a 256 KiB file limit without an error";
  EXPECT_NE(error.find("RocksDB could not write state 'big' (key group "), std::string::npos) << error;
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// A user function that throws fails the task; until then it must not leave half-made
// entries behind: a new key whose first add threw has no state.
TEST(HeapStateBackend, AThrowingFirstAddLeavesNoEntry) {
  struct Throwing : AggregateFunction<int, int64_t, int64_t> {
    int64_t createAccumulator() override { return 0; }
    int64_t add(const int& v, int64_t acc) override {
      if (v < 0) throw std::runtime_error("negative");
      return acc + v;
    }
    int64_t getResult(const int64_t& acc) override { return acc; }
    int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
  };
  StateHarness<int> h("heap");
  auto& sum = h.context().getAggregatingState(AggregatingStateDescriptor("sum", Throwing{}));
  h.setKey(1);
  EXPECT_THROW(sum.add(-1), std::runtime_error);
  EXPECT_EQ(sum.get(), std::nullopt);
  size_t entries = 0;
  h.store().readEntries("sum", KeyGroupRange{0, 127}, [&](const detail::StateEntry&) { ++entries; });
  EXPECT_EQ(entries, 0u);
}

}  // namespace
}  // namespace weir
