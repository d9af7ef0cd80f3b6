// Incremental RocksDB checkpoints at the storage level, with a real RocksDB instance:
// what each checkpoint stores, how shared files are counted and deleted, that damage
// to any kind of file is found, and that what was stored reads back.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include "checkpoint/checkpoint_storage.h"
#include "support/state_test_harness.h"
#include "weir/detail/state/operator_snapshot.h"
#include "weir/detail/state/rocksdb_state.h"

namespace weir::checkpoint {

using namespace weir::detail;
namespace {

namespace fs = std::filesystem;

constexpr int64_t kKeys = 100'000;
constexpr KeyGroupRange kAll{0, 127};

// 100 bytes that do not compress much, different per key and version.
std::string valueOf(int64_t key, int version) {
  std::string v = "v" + std::to_string(version) + "-" + std::to_string(key) + "-";
  std::minstd_rand rng(static_cast<uint32_t>(key * 31 + version));
  while (v.size() < 100) v += static_cast<char>('a' + rng() % 26);
  return v;
}

// Files in a folder, by name.
std::set<std::string> filesIn(const fs::path& folder) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) names.insert(e.path().filename().string());
  return names;
}

class IncrementalCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    job_ = fs::temp_directory_path() / ("weir-incremental-" + std::to_string(::getpid()));
    fs::remove_all(job_);
    fs::create_directories(job_);
    value_ = &h_.context().getState(ValueStateDescriptor<std::string>("value"));
  }
  void TearDown() override { fs::remove_all(job_); }

  void write(int64_t from, int64_t to, int64_t step, int version) {
    for (int64_t k = from; k < to; k += step) {
      h_.setKey(k);
      value_->update(valueOf(k, version));
    }
  }

  // Takes checkpoint `id` of the store and writes it to <job>/chk-<id>, metadata last.
  StateFileInfo store(int64_t id) { return storeInstances(id, {{&h_, kAll}}).at(0); }

  // Checkpoint `id` of a rescaled operator: one instance per store, with its key groups.
  std::vector<StateFileInfo> storeInstances(
      int64_t id, const std::vector<std::pair<test::StateHarness<int64_t>*, KeyGroupRange>>& instances) {
    std::vector<OperatorSnapshot> snapshots(instances.size());
    std::vector<std::pair<OperatorSnapshot*, KeyGroupRange>> parts;
    for (size_t i = 0; i < instances.size(); ++i) {
      instances[i].first->store().snapshot(id, snapshots[i]);
      EXPECT_TRUE(snapshots[i].rocksdb) << "incremental checkpoints take RocksDB's own files";
      parts.emplace_back(&snapshots[i], instances[i].second);
    }
    return writeCheckpoint(id, parts);
  }

  // Writes the snapshots of checkpoint `id`, taken on the "task thread" before, to
  // <job>/chk-<id> as the I/O thread does, metadata last.
  std::vector<StateFileInfo> writeCheckpoint(int64_t id,
                                             const std::vector<std::pair<OperatorSnapshot*, KeyGroupRange>>& parts) {
    const fs::path folder = chk(id);
    fs::create_directories(folder);
    CheckpointMetadata m;
    m.checkpointId = id;
    m.jobId = "job";
    m.maxParallelism = 128;
    for (const auto& [snapshot, keyGroups] : parts) {
      StateFileInfo& info = m.files.emplace_back();
      info.operatorId = "op";
      info.operatorName = "Keep";
      info.keyGroups = keyGroups;
      info.file = "op-" + std::to_string(m.files.size() - 1) + "-state";
      writeStateFile(CheckpointTarget{folder.string(), (job_ / "shared").string(), id, &shared_}, *snapshot, info);
    }
    writeMetadata(folder.string(), m);
    return m.files;
  }
  fs::path chk(int64_t id) const { return job_ / ("chk-" + std::to_string(id)); }

  static uint64_t fullSize(const StateFileInfo& info) {
    uint64_t size = info.size;
    for (const auto& f : info.rocksdb) size += f.size;
    return size;
  }
  static std::set<std::string> sharedOf(const StateFileInfo& info) {
    std::set<std::string> names;
    for (const auto& f : info.rocksdb)
      if (f.shared) names.insert(f.stored);
    return names;
  }

  // Restores the store from the checkpoint at `from`, its key groups `range`, after
  // verifying every checksum.
  template <class Harness>
  static void restore(Harness& h, const std::string& from, KeyGroupRange range) {
    CheckpointMetadata m = readMetadata(from);
    verifyCheckpoint(from, m);
    RestoredOperatorState restored;
    restored.keyGroups = range;
    std::vector<OperatorStateSnapshot> operatorState;
    for (const auto& file : m.files) readStateFile(from, file, range, restored, operatorState);
    h.store().setRestored(restored);
  }

  // The values a store restored from `from` (at `range`) has for keys 0, step, 2 step...
  template <class Harness>
  std::map<int64_t, std::string> restoredValues(Harness& h, const std::string& from, KeyGroupRange range,
                                                int64_t step) {
    restore(h, from, range);
    auto& value = h.context().getState(ValueStateDescriptor<std::string>("value"));
    std::map<int64_t, std::string> out;
    for (int64_t k = 0; k < kKeys; k += step) {
      h.setKey(k);
      if (auto v = value.value()) out[k] = *v;
    }
    return out;
  }

  test::StateHarness<int64_t> h_{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  ValueState<std::string>* value_ = nullptr;
  SharedFiles shared_;
  fs::path job_;
};

// The figure at small scale: with 1% of the keys changed, the second checkpoint
// writes a small fraction of what it holds, and refers to the first one's SST files.
TEST_F(IncrementalCheckpointTest, ASecondCheckpointStoresOnlyTheNewFiles) {
  write(0, kKeys, 1, 1);
  StateFileInfo first = store(1);
  EXPECT_GT(fullSize(first), 100u * kKeys / 2) << "the values are there, compressed or not";
  EXPECT_EQ(first.uploadedBytes + first.size, fullSize(first)) << "the first checkpoint writes every file";
  write(0, kKeys, 100, 2);  // 1% of the keys
  StateFileInfo second = store(2);
  EXPECT_LT(second.uploadedBytes + second.size, fullSize(second) / 20)
      << "written " << second.uploadedBytes + second.size << " of " << fullSize(second);
  std::set<std::string> firstShared = sharedOf(first), secondShared = sharedOf(second);
  ASSERT_FALSE(firstShared.empty());
  for (const auto& name : firstShared) EXPECT_TRUE(secondShared.contains(name)) << name << " was stored again";
  EXPECT_GT(secondShared.size(), firstShared.size()) << "the changed keys are in a new SST file";
  EXPECT_EQ(filesIn(job_ / "shared").size(), secondShared.size());
}

// A shared file lives while a checkpoint uses it: after a compaction replaced every SST
// file, releasing the first checkpoint deletes its files and the second stays whole.
TEST_F(IncrementalCheckpointTest, SharedFilesAreDeletedWhenNoCheckpointUsesThemAnyMore) {
  write(0, kKeys, 1, 1);
  StateFileInfo first = store(1);
  write(0, kKeys, 100, 2);
  h_.store().rocksdb()->compactAll();
  StateFileInfo second = store(2);
  std::set<std::string> firstShared = sharedOf(first), secondShared = sharedOf(second);
  for (const auto& name : firstShared) EXPECT_FALSE(secondShared.contains(name)) << "compacted away: " << name;
  std::set<std::string> both = firstShared;
  both.insert(secondShared.begin(), secondShared.end());
  EXPECT_EQ(filesIn(job_ / "shared"), both);

  shared_.release(1);
  EXPECT_EQ(filesIn(job_ / "shared"), secondShared);
  EXPECT_NO_THROW(verifyCheckpoint(chk(2).string(), readMetadata(chk(2).string())));
  shared_.release(1);  // twice: nothing more
  EXPECT_EQ(filesIn(job_ / "shared"), secondShared);
  shared_.release(2);
  EXPECT_TRUE(filesIn(job_ / "shared").empty());
}

// A file a checkpoint in progress refers to survives the release of the one that
// stored it; one that is gone from the registry is stored anew.
TEST_F(IncrementalCheckpointTest, AReleasedFileIsStoredAgainNotReferredTo) {
  write(0, kKeys, 1, 1);
  StateFileInfo first = store(1);
  shared_.release(1);  // e.g. checkpoint 1 was aborted
  EXPECT_TRUE(filesIn(job_ / "shared").empty());
  StateFileInfo second = store(2);
  EXPECT_EQ(second.uploadedBytes + second.size, fullSize(second)) << "nothing left to refer to";
  EXPECT_NO_THROW(verifyCheckpoint(chk(2).string(), readMetadata(chk(2).string())));
}

TEST_F(IncrementalCheckpointTest, WhatWasStoredReadsBackAtTheSameOrOtherKeyGroupsAndIntoTheHeap) {
  write(0, kKeys, 1, 1);
  store(1);
  write(0, kKeys, 100, 2);
  store(2);
  const std::string from = chk(2).string();
  auto expected = [](int64_t k) { return valueOf(k, k % 100 == 0 ? 2 : 1); };

  // The same key groups: the database itself.
  test::StateHarness<int64_t> same{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  auto values = restoredValues(same, from, kAll, 7);
  ASSERT_EQ(values.size(), static_cast<size_t>((kKeys + 6) / 7));
  for (const auto& [k, v] : values) ASSERT_EQ(v, expected(k)) << "key " << k;

  // Half the key groups: entry by entry, only those keys.
  const KeyGroupRange half{0, 63};
  test::StateHarness<int64_t> rescaled{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  values = restoredValues(rescaled, from, half, 7);
  size_t inHalf = 0;
  for (int64_t k = 0; k < kKeys; k += 7) inHalf += half.contains(assignToKeyGroup(KeyHash<int64_t>{}(k), 128)) ? 1 : 0;
  EXPECT_EQ(values.size(), inHalf);
  for (const auto& [k, v] : values) {
    ASSERT_TRUE(half.contains(assignToKeyGroup(KeyHash<int64_t>{}(k), 128))) << "key " << k;
    ASSERT_EQ(v, expected(k)) << "key " << k;
  }

  // Another backend.
  test::StateHarness<int64_t> heap{"heap"};
  values = restoredValues(heap, from, kAll, 7);
  ASSERT_EQ(values.size(), static_cast<size_t>((kKeys + 6) / 7));
  for (const auto& [k, v] : values) ASSERT_EQ(v, expected(k)) << "key " << k;
}

// Rescaling as Flink does it: a new instance takes the predecessor with the most of its
// key groups as its database, clipped to them, and copies in the others' entries. Two
// instances made by clipping one (scale out) checkpoint again, and are merged back (scale
// in) and regrouped unevenly ([32, 95] from [0, 63] and [64, 127]), each with every key's
// latest value and no key it does not own.
TEST_F(IncrementalCheckpointTest, RescaledInstancesHoldExactlyTheirKeyGroups) {
  write(0, kKeys, 1, 1);
  store(1);
  const KeyGroupRange low{0, 63}, high{64, 127};
  auto groupOf = [](int64_t k) { return assignToKeyGroup(KeyHash<int64_t>{}(k), 128); };
  auto keysIn = [&](KeyGroupRange range) {
    size_t n = 0;
    for (int64_t k = 0; k < kKeys; ++k) n += range.contains(groupOf(k)) ? 1 : 0;
    return n;
  };
  test::StateHarness<int64_t> a{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  test::StateHarness<int64_t> b{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  EXPECT_EQ(restoredValues(a, chk(1).string(), low, 1).size(), keysIn(low));
  EXPECT_EQ(restoredValues(b, chk(1).string(), high, 1).size(), keysIn(high));
  // Each instance updates its own keys, as its subtask would.
  for (auto* h : {&a, &b}) {
    auto& value = h->context().getState(ValueStateDescriptor<std::string>("value"));
    for (int64_t k = 0; k < kKeys; k += 50) {
      if ((h == &a) != low.contains(groupOf(k))) continue;
      h->setKey(k);
      value.update(valueOf(k, 3));
    }
  }
  storeInstances(3, {{&a, low}, {&b, high}});
  auto expected = [](int64_t k) { return valueOf(k, k % 50 == 0 ? 3 : 1); };

  for (KeyGroupRange range : {kAll, KeyGroupRange{32, 95}}) {
    test::StateHarness<int64_t> merged{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
    auto values = restoredValues(merged, chk(3).string(), range, 1);
    EXPECT_EQ(values.size(), keysIn(range)) << "key groups " << range.start << "-" << range.end;
    for (const auto& [k, v] : values) {
      ASSERT_TRUE(range.contains(groupOf(k))) << "key " << k;
      ASSERT_EQ(v, expected(k)) << "key " << k;
    }
  }
}

// The synchronous part only closes the write buffers; the files are linked later, off
// the task thread, and hold nothing written after the barrier.
TEST_F(IncrementalCheckpointTest, WritesAfterTheBarrierStayOutOfTheFilesLinkedLater) {
  write(0, kKeys, 1, 1);
  OperatorSnapshot taken;
  h_.store().snapshot(1, taken);
  ASSERT_TRUE(taken.rocksdb);
  write(0, kKeys, 1, 2);  // after the barrier: 10 MB, in a write buffer of 64 MB
  StateFileInfo info = writeCheckpoint(1, {{&taken, kAll}}).at(0);
  EXPECT_FALSE(info.rocksdb.empty()) << "RocksDB's own files, not every entry";

  test::StateHarness<int64_t> restored{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  auto values = restoredValues(restored, chk(1).string(), kAll, 7);
  ASSERT_EQ(values.size(), static_cast<size_t>((kKeys + 6) / 7));
  for (const auto& [k, v] : values) ASSERT_EQ(v, valueOf(k, 1)) << "key " << k;
}

// Holds every thread of RocksDB's flush pool (one pool for every database in the
// process) until destroyed: write buffers closed meanwhile wait for their flush.
class FlushPoolHold {
 public:
  FlushPoolHold() : threads_(rocksdb::Env::Default()->GetBackgroundThreads(rocksdb::Env::HIGH)) {
    EXPECT_GT(threads_, 0) << "a database is open, so RocksDB has a flush pool";
    for (int i = 0; i < threads_; ++i) rocksdb::Env::Default()->Schedule(&FlushPoolHold::hold, this, rocksdb::Env::HIGH);
    std::unique_lock lock(mutex_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(30), [&] { return holding_ == threads_; }))
        << "the flush pool did not run the holds: a flush in progress never ended";
  }
  ~FlushPoolHold() {
    std::unique_lock lock(mutex_);
    released_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return holding_ == 0; });
  }

 private:
  static void hold(void* arg) {
    auto* self = static_cast<FlushPoolHold*>(arg);
    std::unique_lock lock(self->mutex_);
    ++self->holding_;
    self->cv_.notify_all();
    self->cv_.wait(lock, [&] { return self->released_; });
    --self->holding_;
    self->cv_.notify_all();
  }

  const int threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int holding_ = 0;
  bool released_ = false;
};

// Write buffers of 64 KB fill up with writes made after the barrier before the barrier's
// own were flushed (the flush pool is held): they would reach the files before the
// checkpoint's are linked, so the checkpoint stores every entry as it was at the barrier
// instead; the next one is incremental again.
TEST_F(IncrementalCheckpointTest, WhenLaterWritesReachTheFilesFirstTheCheckpointStoresEveryEntry) {
  EmbeddedRocksDBStateBackend::Options options;
  options.incrementalCheckpoints = true;
  options.writeBufferSize = 64 << 10;
  options.maxWriteBufferNumber = 64;  // writes go on while the flushes wait
  test::StateHarness<int64_t> small{std::make_shared<EmbeddedRocksDBStateBackend>(options)};
  auto& value = small.context().getState(ValueStateDescriptor<std::string>("value"));
  auto writeSmall = [&](int step, int version) {
    for (int64_t k = 0; k < kKeys; k += step) {
      small.setKey(k);
      value.update(valueOf(k, version));
    }
  };
  writeSmall(1, 1);
  small.store().rocksdb()->compactAll();  // no flush still to come when the pool is held
  writeSmall(1000, 1);                     // and 100 writes for the barrier to close
  OperatorSnapshot first;
  {
    FlushPoolHold hold;
    small.store().snapshot(1, first);
    writeSmall(50, 2);  // 2,000 writes of ~110 bytes: a few write buffers
  }
  StateFileInfo info = writeCheckpoint(1, {{&first, kAll}}).at(0);
  EXPECT_TRUE(info.rocksdb.empty()) << "RocksDB's files went past the barrier; stored " << info.rocksdb.size();
  EXPECT_EQ(info.keyedStates, std::vector<std::string>{"value"});

  test::StateHarness<int64_t> restored{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  auto values = restoredValues(restored, chk(1).string(), kAll, 10);
  ASSERT_EQ(values.size(), static_cast<size_t>(kKeys / 10));
  for (const auto& [k, v] : values) ASSERT_EQ(v, valueOf(k, 1)) << "key " << k;

  OperatorSnapshot second;
  small.store().snapshot(2, second);
  StateFileInfo next = writeCheckpoint(2, {{&second, kAll}}).at(0);
  EXPECT_FALSE(next.rocksdb.empty()) << "nothing was written after this barrier";
  test::StateHarness<int64_t> again{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  values = restoredValues(again, chk(2).string(), kAll, 10);
  ASSERT_EQ(values.size(), static_cast<size_t>(kKeys / 10));
  for (const auto& [k, v] : values) ASSERT_EQ(v, valueOf(k, k % 50 == 0 ? 2 : 1)) << "key " << k;
}

// When writes are stopped (here: a column's two write buffers wait for the flush pool,
// which is held), RocksDB refuses to close the next column's write buffer without
// waiting. The barrier then waits for the flushes instead of failing the checkpoint, and
// the checkpoint is RocksDB's own files, exact at the barrier.
TEST_F(IncrementalCheckpointTest, WhenWritesAreStoppedTheBarrierWaitsForTheFlushes) {
  EmbeddedRocksDBStateBackend::Options options;
  options.incrementalCheckpoints = true;
  options.writeBufferSize = 64 << 10;
  options.maxWriteBufferNumber = 2;  // writes stop at two write buffers waiting for their flush
  test::StateHarness<int64_t> h{std::make_shared<EmbeddedRocksDBStateBackend>(options)};
  // Columns close in name order: "a-full"'s second closed buffer stops the writes
  // before "b-small"'s is closed.
  auto& full = h.context().getState(ValueStateDescriptor<std::string>("a-full"));
  auto& small = h.context().getState(ValueStateDescriptor<std::string>("b-small"));
  auto writeBoth = [&](int64_t count, int version) {
    for (int64_t k = 0; k < count; ++k) {
      h.setKey(k);
      full.update(valueOf(k, version));
      if (k % 100 == 0) small.update(valueOf(k, version));
    }
  };
  writeBoth(1000, 0);
  h.store().rocksdb()->compactAll();  // no flush still to come when the pool is held
  OperatorSnapshot snapshot;
  {
    std::optional<FlushPoolHold> hold(std::in_place);
    std::thread release([&] {  // a second is ample for what follows
      std::this_thread::sleep_for(std::chrono::seconds(1));
      hold.reset();
    });
    writeBoth(750, 1);  // ~1.5 write buffers of "a-full": one closed, waiting for the pool
    EXPECT_NO_THROW(h.store().snapshot(1, snapshot));
    release.join();
  }
  writeBoth(100, 2);  // less than a write buffer: no buffer of later writes closes
  StateFileInfo info = writeCheckpoint(1, {{&snapshot, kAll}}).at(0);
  EXPECT_FALSE(info.rocksdb.empty()) << "the checkpoint is RocksDB's own files";
  test::StateHarness<int64_t> restored{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
  restore(restored, chk(1).string(), kAll);
  auto& fullAfter = restored.context().getState(ValueStateDescriptor<std::string>("a-full"));
  auto& smallAfter = restored.context().getState(ValueStateDescriptor<std::string>("b-small"));
  for (int64_t k = 0; k < 1000; ++k) {
    restored.setKey(k);
    ASSERT_EQ(fullAfter.value().value_or("none"), valueOf(k, k < 750 ? 1 : 0)) << "key " << k;
    if (k % 100 == 0) {
      ASSERT_EQ(smallAfter.value().value_or("none"), valueOf(k, k < 750 ? 1 : 0)) << "key " << k;
    }
  }
}

// Two checkpoints in flight (maxConcurrentCheckpoints > 1): the second's synchronous part
// links the first's files before it closes the write buffers again, so each checkpoint,
// written in any order, is RocksDB's own files and holds exactly its moment.
TEST_F(IncrementalCheckpointTest, TheNextCheckpointLinksTheFilesOfOneStillInFlightFirst) {
  write(0, kKeys, 1, 1);
  OperatorSnapshot first, second;
  h_.store().snapshot(1, first);
  write(0, kKeys, 100, 2);
  h_.store().snapshot(2, second);
  write(0, kKeys, 1, 3);
  StateFileInfo two = writeCheckpoint(2, {{&second, kAll}}).at(0);
  StateFileInfo one = writeCheckpoint(1, {{&first, kAll}}).at(0);
  EXPECT_FALSE(one.rocksdb.empty()) << "linked before the second barrier's flush";
  EXPECT_FALSE(two.rocksdb.empty());
  for (int64_t id : {1, 2}) {
    test::StateHarness<int64_t> restored{std::make_shared<EmbeddedRocksDBStateBackend>(true)};
    auto values = restoredValues(restored, chk(id).string(), kAll, 7);
    ASSERT_EQ(values.size(), static_cast<size_t>((kKeys + 6) / 7)) << "checkpoint " << id;
    for (const auto& [k, v] : values)
      ASSERT_EQ(v, valueOf(k, id == 2 && k % 100 == 0 ? 2 : 1)) << "checkpoint " << id << ", key " << k;
  }
}

// A job resumed from an incremental checkpoint on RocksDB with full checkpoints, whose
// state did not register again (yet): the restored column still goes into its full
// checkpoints, as the entries restored from a full checkpoint do.
TEST_F(IncrementalCheckpointTest, ARestoredStateThatDoesNotRegisterStaysInFullCheckpoints) {
  write(0, kKeys, 10, 1);
  store(1);
  test::StateHarness<int64_t> resumed{std::make_shared<EmbeddedRocksDBStateBackend>(false)};
  CheckpointMetadata m = readMetadata(chk(1).string());
  RestoredOperatorState restored;
  restored.keyGroups = kAll;
  std::vector<OperatorStateSnapshot> operatorState;
  readStateFile(chk(1).string(), m.files.at(0), kAll, restored, operatorState);
  resumed.store().setRestored(restored);
  auto snapshots = resumed.store().snapshot();
  ASSERT_TRUE(snapshots.contains("value")) << "the restored state was left out of the checkpoint";
  std::map<int64_t, std::string> values;
  snapshots.at("value")->readEntries(kAll, [&](const StateEntry& e) {
    DataInput key(e.key);
    int64_t k = key.read<int64_t>();
    values[k] = decodeState<std::string>(e.value, "value", e.keyGroup);
  });
  ASSERT_EQ(values.size(), static_cast<size_t>(kKeys / 10));
  for (const auto& [k, v] : values) ASSERT_EQ(v, valueOf(k, 1)) << "key " << k;
}

// Restored entries wait, packed, for their state to register on the heap backend: an
// entry larger than a chunk and many small ones across chunks all come back, in a
// checkpoint taken before the state registered and in the state itself.
TEST(RestoredEntries, TheHeapTakesEntriesOfAnySizeWhenTheStateRegisters) {
  std::map<int64_t, std::string> expected;
  for (int64_t k = 0; k < 60'000; ++k) expected[k] = valueOf(k, 3);
  expected[7] = std::string(6u << 20, 'x');  // larger than a 4 MB chunk
  RestoredOperatorState restored;
  restored.keyGroups = kAll;
  for (const auto& [k, v] : expected) {
    DataOutput key, value;
    Serializer<int64_t>::serialize(k, key);
    Serializer<std::string>::serialize(v, value);
    restored.keyed["value"].push_back({assignToKeyGroup(KeyHash<int64_t>{}(k), 128), key.data(), value.data()});
  }
  test::StateHarness<int64_t> heap{std::make_shared<HashMapStateBackend>()};
  heap.store().setRestored(restored);
  std::map<int64_t, std::string> checkpointed;
  heap.store().snapshot().at("value")->readEntries(kAll, [&](const StateEntry& e) {
    DataInput key(e.key);
    checkpointed[key.read<int64_t>()] = decodeState<std::string>(e.value, "value", e.keyGroup);
  });
  EXPECT_TRUE(checkpointed == expected) << "a checkpoint before the state registered lost or changed an entry";
  auto& value = heap.context().getState(ValueStateDescriptor<std::string>("value"));
  for (const auto& [k, v] : expected) {
    heap.setKey(k);
    ASSERT_EQ(value.value(), std::optional<std::string>(v)) << "key " << k;
  }
}

// What a process killed while uploading leaves — an SST file in shared/ that no
// checkpoint lists, a chk-<n> folder without _metadata — is what cleaning removes, and
// nothing else; a dry run only lists it, a running job's folder (its lock held) and a
// folder with a damaged _metadata are left alone.
TEST_F(IncrementalCheckpointTest, CleaningRemovesOnlyWhatNoCompleteCheckpointUses) {
  write(0, kKeys / 10, 1, 1);
  store(1);
  write(0, kKeys / 10, 7, 2);
  store(2);
  const std::set<std::string> used = filesIn(job_ / "shared");
  const fs::path orphan = job_ / "shared" / "left-behind.sst";
  std::ofstream(orphan) << "partial";
  fs::create_directories(chk(3));
  std::ofstream(chk(3) / "op-0-state") << "partial";

  auto dry = cleanCheckpoints(job_.string(), true);
  ASSERT_EQ(dry.size(), 1u);
  EXPECT_EQ(dry[0].sharedFiles, std::vector<std::string>{orphan.string()});
  EXPECT_EQ(dry[0].incomplete, std::vector<std::string>{chk(3).string()});
  EXPECT_EQ(dry[0].bytes, 14u);
  EXPECT_TRUE(fs::exists(orphan) && fs::exists(chk(3))) << "a dry run removes nothing";
  {
    JobFolderLock running(job_.string());
    ASSERT_TRUE(running.held());
    EXPECT_THROW(cleanCheckpoints(job_.string(), false), Error);
    EXPECT_TRUE(fs::exists(orphan));
  }
  cleanCheckpoints(job_.string(), false);
  EXPECT_EQ(filesIn(job_ / "shared"), used);
  EXPECT_FALSE(fs::exists(chk(3)));
  for (int64_t id : {1, 2}) EXPECT_NO_THROW(verifyCheckpoint(chk(id).string(), readMetadata(chk(id).string())));

  std::ofstream(orphan) << "partial";
  std::ofstream(chk(2) / "_metadata", std::ios::trunc) << "{";
  try {
    cleanCheckpoints(job_.string(), false);
    FAIL() << "cleaned beside a checkpoint whose metadata does not read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chk-2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(orphan));
}

// 50 trials: a byte flipped in, or a truncation of, one file of every kind an
// incremental checkpoint has (metadata, state file, RocksDB's private files, shared SST
// files); each is found before use, with the file named.
TEST_F(IncrementalCheckpointTest, EveryFlippedByteOrTruncationIsDetected) {
  write(0, kKeys / 10, 1, 1);
  store(1);
  write(0, kKeys / 10, 100, 2);
  store(2);
  const fs::path pristine = job_ / "pristine";
  fs::create_directories(pristine);
  fs::copy(chk(2), pristine / "chk-2", fs::copy_options::recursive);
  fs::copy(job_ / "shared", pristine / "shared", fs::copy_options::recursive);
  std::vector<fs::path> files;  // relative to a job folder
  for (const auto& name : filesIn(pristine / "chk-2")) files.push_back(fs::path("chk-2") / name);
  for (const auto& name : filesIn(pristine / "shared")) files.push_back(fs::path("shared") / name);
  std::set<std::string> kinds;
  for (const auto& f : files) {
    std::string kind = f.filename().string();
    if (kind.ends_with(".sst")) kind = "sst";
    if (kind.starts_with("op-0-state-")) kind = kind.substr(11);
    kinds.insert(kind.substr(0, kind.find('-', 1)));
  }
  for (const char* kind : {"_metadata", "op", "MANIFEST", "CURRENT", "OPTIONS", "sst"})
    EXPECT_TRUE(kinds.contains(kind)) << "no " << kind << " file";

  std::mt19937 rng(99);
  const fs::path trial = job_ / "trial";
  for (int t = 0; t < 50; ++t) {
    fs::remove_all(trial);
    fs::copy(pristine, trial, fs::copy_options::recursive);
    const fs::path victim = trial / files[static_cast<size_t>(t) % files.size()];
    std::string bytes;
    {
      std::ifstream in(victim, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    ASSERT_FALSE(bytes.empty()) << victim;
    if (t % 2 == 1) {
      bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
    } else {
      size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
    }
    std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes;
    const std::string folder = (trial / "chk-2").string();
    try {
      verifyCheckpoint(folder, readMetadata(folder));
      FAIL() << "trial " << t << ": damaged " << victim << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCheckpoint) << e.what();
      EXPECT_NE(std::string(e.what()).find(victim.filename().string()), std::string::npos)
          << "trial " << t << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace weir::checkpoint
