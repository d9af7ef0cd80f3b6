// Restart strategies; checkpoint files: what is written is read back, and any damage to
// any file is found before its state is used; the coordinator's concurrent checkpoints.
#include <gtest/gtest.h>
#include <xxhash.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "checkpoint/checkpoint_coordinator.h"
#include "checkpoint/checkpoint_storage.h"
#include "checkpoint/completed_checkpoint_store.h"
#include "weir/restart_strategy.h"

namespace weir::checkpoint {

using namespace weir::detail;
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(RestartStrategy, FixedDelayRestartsUpToItsAttempts) {
  RestartBackoff b(RestartStrategy::fixedDelayRestart(3, 250ms));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.onFailure(i * 1000), 250ms);
  EXPECT_EQ(b.onFailure(5000), std::nullopt);
  EXPECT_EQ(b.restarts(), 3);
}

TEST(RestartStrategy, NoRestartAndTheDefaults) {
  EXPECT_EQ(RestartBackoff(RestartStrategy::noRestart()).onFailure(0), std::nullopt);
  // Flink's defaults (1.19 on): none without checkpointing; with it exponential delay
  // from 1 s, times 1.5, at most 1 min, reset after 1 h, 10% jitter.
  EXPECT_EQ(RestartStrategy::fallback().resolve(false).kind(), RestartStrategy::Kind::kNone);
  auto withCheckpoints = RestartStrategy::fallback().resolve(true);
  EXPECT_EQ(withCheckpoints.kind(), RestartStrategy::Kind::kExponentialDelay);
  EXPECT_EQ(withCheckpoints.initialBackoff, 1s);
  EXPECT_EQ(withCheckpoints.maxBackoff, 60s);
  EXPECT_EQ(withCheckpoints.backoffMultiplier, 1.5);
  EXPECT_EQ(withCheckpoints.resetBackoffThreshold, 1h);
  EXPECT_EQ(withCheckpoints.jitterFactor, 0.1);
  // A strategy the user chose stays.
  EXPECT_EQ(RestartStrategy::noRestart().resolve(true).kind(), RestartStrategy::Kind::kNone);
}

// A cause that comes back on every attempt ends the job after the limit, whatever the
// strategy allows; numbers in the message (a checkpoint id) do not make causes differ,
// and another cause starts the count again.
TEST(RestartStrategy, IdenticalFailuresInARowStopTheRestarts) {
  RestartBackoff b(RestartStrategy::fixedDelayRestart(100, 5ms).stopAfterIdenticalFailures(3));
  EXPECT_EQ(b.onFailure(0, "checkpoint 4 failed: no space left"), 5ms);
  EXPECT_EQ(b.onFailure(10, "checkpoint 5 failed: no space left"), 5ms);
  EXPECT_EQ(b.onFailure(20, "operator 'x' failed: boom"), 5ms);
  EXPECT_EQ(b.onFailure(30, "checkpoint 6 failed: no space left"), 5ms);
  EXPECT_EQ(b.onFailure(40, "checkpoint 7 failed: no space left"), 5ms);
  EXPECT_EQ(b.onFailure(50, "checkpoint 12 failed: no space left"), std::nullopt);
  EXPECT_EQ(b.whyNot(), "it failed 3 times in a row with the same cause");
  // Without a limit (the default), the strategy alone decides.
  RestartBackoff unlimited(RestartStrategy::fixedDelayRestart(100, 5ms));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(unlimited.onFailure(i, "the same"), 5ms);
  EXPECT_THROW(RestartStrategy::noRestart().stopAfterIdenticalFailures(-1), Error);
}

TEST(RestartStrategy, FailureRateCountsFailuresWithinTheInterval) {
  RestartBackoff b(RestartStrategy::failureRateRestart(2, 1000ms, 50ms));
  EXPECT_EQ(b.onFailure(0), 50ms);
  EXPECT_EQ(b.onFailure(400), 50ms);
  EXPECT_EQ(b.onFailure(900), std::nullopt);  // three within one second
  RestartBackoff spaced(RestartStrategy::failureRateRestart(2, 1000ms, 50ms));
  EXPECT_EQ(spaced.onFailure(0), 50ms);
  EXPECT_EQ(spaced.onFailure(600), 50ms);
  EXPECT_EQ(spaced.onFailure(1200), 50ms);  // the first fell out of the interval
}

TEST(RestartStrategy, ExponentialDelayGrowsToItsMaximumAndResets) {
  RestartBackoff b(RestartStrategy::exponentialDelayRestart(100ms, 1000ms, 2.0, 10000ms, 0.0));
  std::vector<int64_t> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(b.onFailure(i * 100)->count());
  EXPECT_EQ(delays, (std::vector<int64_t>{100, 200, 400, 800, 1000, 1000}));
  EXPECT_EQ(b.onFailure(600 + 10000), 100ms);  // quiet for the reset threshold
}

TEST(RestartStrategy, JitterStaysWithinItsFactor) {
  RestartBackoff b(RestartStrategy::exponentialDelayRestart(1000ms, 1000ms, 1.0, 100000ms, 0.1), 42);
  bool varied = false;
  for (int i = 0; i < 50; ++i) {
    auto d = b.onFailure(i)->count();
    EXPECT_GE(d, 900);
    EXPECT_LE(d, 1100);
    varied = varied || d != 1000;
  }
  EXPECT_TRUE(varied);
}

TEST(RestartStrategy, ParsesTheCliFormAndRejectsBadOnes) {
  EXPECT_EQ(RestartStrategy::parse("none").kind(), RestartStrategy::Kind::kNone);
  auto fixed = RestartStrategy::parse("fixed-delay:5:200");
  EXPECT_EQ(fixed.attempts, 5);
  EXPECT_EQ(fixed.delay, 200ms);
  auto rate = RestartStrategy::parse("failure-rate:3:60000:100");
  EXPECT_EQ(rate.maxFailuresPerInterval, 3);
  EXPECT_EQ(rate.failureInterval, 60000ms);
  EXPECT_EQ(RestartStrategy::parse("exponential-delay:10:1000").maxBackoff, 1000ms);
  for (const char* bad : {"", "sometimes", "fixed-delay:5", "fixed-delay:x:1", "fixed-delay:-1:5", "failure-rate:0:1:1"}) {
    EXPECT_THROW(RestartStrategy::parse(bad), Error) << bad;
  }
}

class CheckpointFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-chk-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Two subtasks of one keyed operator with 8 key groups, and metadata naming them.
  CheckpointMetadata writeCheckpoint() {
    CheckpointMetadata m;
    m.checkpointId = 7;
    m.jobId = "job";
    m.maxParallelism = 8;
    for (int subtask = 0; subtask < 2; ++subtask) {
      std::vector<OwnedStateEntry> entries;
      for (int g = 0; g < 8; ++g) entries.push_back({g, "key" + std::to_string(g), "value" + std::to_string(g)});
      OperatorSnapshot s;
      s.keyed["count"] = std::make_unique<MaterializedSnapshot>(entries);
      s.operatorState.push_back({"offsets", OperatorStateMode::kSplitDistribute, {"a" + std::to_string(subtask)}});
      StateFileInfo info;
      info.operatorId = "op";
      info.operatorName = "Count";
      info.subtask = subtask;
      info.parallelism = 2;
      info.keyGroups = KeyGroupRange{subtask * 4, subtask * 4 + 3};
      info.file = "op-" + std::to_string(subtask) + "-state";
      writeStateFile(CheckpointTarget{dir_.string(), "", 0, nullptr}, s, info);
      m.files.push_back(info);
    }
    writeMetadata(dir_.string(), m);
    return m;
  }

  // Writes `s` as the state file of one subtask holding key groups 0..7.
  StateFileInfo writeOneFile(OperatorSnapshot& s) {
    StateFileInfo info;
    info.keyGroups = KeyGroupRange{0, 7};
    info.file = "op-0-state";
    writeStateFile(CheckpointTarget{dir_.string(), "", 0, nullptr}, s, info);
    return info;
  }
  // Reads it back as a subtask owning `keyGroups` does.
  RestoredOperatorState readOneFile(const StateFileInfo& info, KeyGroupRange keyGroups) {
    RestoredOperatorState restored;
    std::vector<OperatorStateSnapshot> lists;
    readStateFile(dir_.string(), info, keyGroups, restored, lists);
    return restored;
  }

  fs::path dir_;
};

TEST_F(CheckpointFilesTest, WhatIsWrittenReadsBackPerKeyGroup) {
  writeCheckpoint();
  CheckpointMetadata m = readMetadata(dir_.string());
  EXPECT_EQ(m.checkpointId, 7);
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files[1].keyedStates, std::vector<std::string>{"count"});
  EXPECT_NO_THROW(verifyCheckpoint(dir_.string(), m));
  // Only key groups 4..7 of subtask 1's file (it wrote its own range only).
  RestoredOperatorState restored;
  std::vector<OperatorStateSnapshot> lists;
  readStateFile(dir_.string(), m.files[1], KeyGroupRange{0, 5}, restored, lists);
  auto count = restored.takeKeyed("count");
  ASSERT_EQ(count.size(), 2u);
  EXPECT_EQ(count[0].keyGroup, 4);
  EXPECT_EQ(count[1].value, "value5");
  EXPECT_TRUE(restored.takeKeyed("count").empty()) << "a state is taken once";
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].elements, std::vector<std::string>{"a1"});
}

// Keyed states stay in the file until taken, and are read through a buffer of a few MB:
// entries across its boundaries and an entry larger than it come back whole; a state
// taken by name is not handed out again by takeAllKeyed.
TEST_F(CheckpointFilesTest, KeyedStatesAreReadFromTheFileWhenTaken) {
  OperatorSnapshot s;
  std::vector<OwnedStateEntry> big, small;
  for (int i = 0; i < 3000; ++i)
    big.push_back({i % 8, "key" + std::to_string(i), std::string(5000 + i % 7, static_cast<char>('a' + i % 26))});
  big.push_back({5, "huge", std::string(10u << 20, 'h')});
  for (int g = 0; g < 8; ++g) small.push_back({g, "s" + std::to_string(g), "v" + std::to_string(g)});
  s.keyed["big"] = std::make_unique<MaterializedSnapshot>(big);
  s.keyed["small"] = std::make_unique<MaterializedSnapshot>(small);
  StateFileInfo info = writeOneFile(s);
  RestoredOperatorState restored = readOneFile(info, KeyGroupRange{4, 7});
  ASSERT_TRUE(restored.hasKeyed());
  auto smallTaken = restored.takeKeyed("small");
  ASSERT_EQ(smallTaken.size(), 4u);
  EXPECT_EQ(smallTaken.front().key, "s4");
  EXPECT_TRUE(restored.hasKeyed()) << "'big' is not taken yet";
  std::vector<std::pair<std::string, std::string>> bigTaken;
  restored.takeAllKeyed([&](const std::string& state, const StateEntry& e) {
    ASSERT_EQ(state, "big");
    ASSERT_TRUE(e.keyGroup >= 4 && e.keyGroup <= 7);
    bigTaken.emplace_back(std::string(e.key), std::string(e.value));
  });
  std::vector<std::pair<std::string, std::string>> expected;
  for (const auto& e : big)
    if (e.keyGroup >= 4) expected.emplace_back(e.key, e.value);
  std::sort(bigTaken.begin(), bigTaken.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(bigTaken.size(), expected.size());
  EXPECT_TRUE(bigTaken == expected) << "an entry came back different, twice or not at all";
  EXPECT_FALSE(restored.hasKeyed());
}

// An operator that takes every state of a file by name (a window operator's windows
// and timers) has no keyed state left to restore, so it makes no keyed store for it.
TEST_F(CheckpointFilesTest, StatesTakenByNameLeaveNothingToRestore) {
  OperatorSnapshot s;
  s.keyed["_timers"] = std::make_unique<MaterializedSnapshot>(std::vector<OwnedStateEntry>{{1, "t", ""}});
  s.keyed["_windows"] = std::make_unique<MaterializedSnapshot>(std::vector<OwnedStateEntry>{{2, "w", "acc"}});
  StateFileInfo info = writeOneFile(s);
  RestoredOperatorState restored = readOneFile(info, KeyGroupRange{0, 7});
  EXPECT_EQ(restored.takeKeyed("_windows").size(), 1u);
  EXPECT_TRUE(restored.hasKeyed());
  EXPECT_EQ(restored.takeKeyed("_timers").size(), 1u);
  EXPECT_FALSE(restored.hasKeyed());
}

// Keyed entries that end early (a file cut short after its checksum was checked) are
// an error naming the file when they are taken, not a crash or a short restore.
TEST_F(CheckpointFilesTest, KeyedEntriesThatEndEarlyAreReportedWhenTaken) {
  OperatorSnapshot s;
  s.keyed["count"] = std::make_unique<MaterializedSnapshot>(
      std::vector<OwnedStateEntry>{{1, "k1", std::string(1000, 'a')}, {2, "k2", std::string(1000, 'b')}});
  StateFileInfo info = writeOneFile(s);
  fs::resize_file(dir_ / info.file, info.size - 500);
  RestoredOperatorState restored = readOneFile(info, KeyGroupRange{0, 7});
  int visited = 0;
  try {
    restored.takeAllKeyed([&](const std::string&, const StateEntry&) { ++visited; });
    FAIL() << "a cut keyed section was read without an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCheckpoint);
    EXPECT_NE(std::string(e.what()).find(info.file), std::string::npos) << e.what();
  }
  EXPECT_LE(visited, 1);
}

// A file none of whose key groups are wanted gives its operator state only, read from a
// prefix of the file however large that state is.
TEST_F(CheckpointFilesTest, AFileOutsideTheWantedKeyGroupsGivesItsOperatorStateOnly) {
  OperatorSnapshot s;
  s.keyed["count"] = std::make_unique<MaterializedSnapshot>(std::vector<OwnedStateEntry>{{1, "k", "v"}});
  std::string big(300 * 1024, 'x');  // larger than the first prefix read
  s.operatorState.push_back({"offsets", OperatorStateMode::kSplitDistribute, {big, "small"}});
  StateFileInfo info;
  info.keyGroups = KeyGroupRange{0, 3};
  info.file = "op-0-state";
  writeStateFile(CheckpointTarget{dir_.string(), "", 0, nullptr}, s, info);
  RestoredOperatorState restored;
  std::vector<OperatorStateSnapshot> lists;
  readStateFile(dir_.string(), info, KeyGroupRange{4, 7}, restored, lists);
  EXPECT_FALSE(restored.hasKeyed());
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].elements, (std::vector<std::string>{big, "small"}));
}

// The schema of an operator state's elements is written beside it (format 3) and read
// back with it; a state without one (weir's own) stays without.
TEST_F(CheckpointFilesTest, OperatorStateSchemasAreReadBackWithTheirStates) {
  OperatorSnapshot s;
  const TypeSchema schema = Serializer<std::pair<int64_t, std::string>>::schema();
  s.operatorState.push_back({"offsets", OperatorStateMode::kSplitDistribute, {"a", "b"}, schema});
  s.operatorState.push_back({"internal", OperatorStateMode::kUnion, {"c"}});
  StateFileInfo info;
  info.keyGroups = KeyGroupRange{0, 3};
  info.file = "op-0-state";
  writeStateFile(CheckpointTarget{dir_.string(), "", 0, nullptr}, s, info);
  RestoredOperatorState restored;
  std::vector<OperatorStateSnapshot> lists;
  readStateFile(dir_.string(), info, KeyGroupRange{0, 3}, restored, lists);
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[0].name, "offsets");
  ASSERT_TRUE(lists[0].schema.has_value());
  EXPECT_EQ(*lists[0].schema, schema);
  EXPECT_EQ(lists[0].schema->toString(), "pair<int64, string>");
  EXPECT_FALSE(lists[1].schema.has_value());
}

TEST_F(CheckpointFilesTest, NoMetadataMeansNoCheckpoint) {
  auto m = writeCheckpoint();
  fs::remove(dir_ / "_metadata");
  try {
    readMetadata(dir_.string());
    FAIL() << "a checkpoint without _metadata was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCheckpoint);
    EXPECT_NE(std::string(e.what()).find("_metadata"), std::string::npos) << e.what();
  }
}

// A checkpoint of an older format version (intact, its checksum right) is refused with
// both versions named: its timers are keyed another way.
// Rewrites _metadata through `edit` (on its JSON text) and signs it again.
void rewriteMetadata(const fs::path& dir, const std::function<void(std::string&)>& edit) {
  const fs::path file = dir / "_metadata";
  std::string text;
  {
    std::ifstream in(file, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  edit(text);
  const size_t first = text.find('\n') + 1, last = text.rfind("\nchecksum ");
  char checksum[17];
  std::snprintf(checksum, sizeof checksum, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(text.data() + first, last - first)));
  text = text.substr(0, last) + "\nchecksum " + checksum + "\n";
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

TEST_F(CheckpointFilesTest, AnOlderFormatVersionIsRefusedNamingIt) {
  writeCheckpoint();
  rewriteMetadata(dir_, [](std::string& text) {
    const std::string current = "\"formatVersion\":" + std::to_string(CheckpointMetadata::kFormatVersion);
    ASSERT_NE(text.find(current), std::string::npos) << text;
    replaceAll(text, current, "\"formatVersion\":2");
  });
  try {
    readMetadata(dir_.string());
    FAIL() << "a version 2 checkpoint was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCheckpoint);
    const std::string what = e.what();
    EXPECT_NE(what.find("has format version 2; this weir reads versions 3 to " +
                        std::to_string(CheckpointMetadata::kFormatVersion)),
              std::string::npos)
        << what;
  }
}

// Version 4 names each state file's max parallelism; a version 3 checkpoint (without
// them) gives every file the job's, and a value out of range is refused as corrupt.
TEST_F(CheckpointFilesTest, AVersion3CheckpointGivesEveryFileTheJobsMaxParallelism) {
  writeCheckpoint();
  for (const auto& f : readMetadata(dir_.string()).files) EXPECT_EQ(f.maxParallelism, 8);  // written as the job's
  rewriteMetadata(dir_, [](std::string& text) {
    replaceAll(text, "\"formatVersion\":4", "\"formatVersion\":3");
    // The files' (nlohmann's JSON keeps keys in order: a file's comes before "operatorId").
    replaceAll(text, "\"maxParallelism\":8,\"operatorId\"", "\"operatorId\"");
  });
  CheckpointMetadata m = readMetadata(dir_.string());
  EXPECT_EQ(m.maxParallelism, 8);
  ASSERT_EQ(m.files.size(), 2u);
  for (const auto& f : m.files) EXPECT_EQ(f.maxParallelism, 8);

  writeCheckpoint();
  rewriteMetadata(dir_, [](std::string& text) {
    replaceAll(text, "\"maxParallelism\":8,\"operatorId\"", "\"maxParallelism\":40000,\"operatorId\"");
  });
  try {
    readMetadata(dir_.string());
    FAIL() << "a state file's max parallelism of 40000 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("names max parallelism 40000 for a state file of operator 'op'"),
              std::string::npos)
        << e.what();
  }
}

// 50 trials: a byte flipped in, or a truncation of, one of the files; every one is found
// by readMetadata or verifyCheckpoint, with the file named.
TEST_F(CheckpointFilesTest, EveryFlippedByteOrTruncationIsDetected) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 50; ++trial) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    writeCheckpoint();
    std::vector<std::string> files = {"_metadata", "op-0-state", "op-1-state"};
    std::string file = files[static_cast<size_t>(trial) % files.size()];
    std::string path = (dir_ / file).string();
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    bool truncate = trial % 2 == 1;
    if (truncate) {
      bytes.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
    } else {
      size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    try {
      auto m = readMetadata(dir_.string());
      verifyCheckpoint(dir_.string(), m);
      FAIL() << "trial " << trial << ": damaged " << file << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCheckpoint) << e.what();
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << "trial " << trial << ": " << e.what();
    }
  }
}

// Checkpoint files that are not regular files (a FIFO, a folder, a link to a device)
// are refused by name without being read: nothing blocks on a FIFO or reads /dev/zero
// for ever. A state file whose size is not the metadata's is refused before it is read.
TEST_F(CheckpointFilesTest, AFileThatIsNotARegularFileIsRefusedWithoutReadingIt) {
  writeCheckpoint();
  const fs::path metadata = dir_ / "_metadata", state = dir_ / "op-1-state";
  const fs::path saved = dir_.parent_path() / ("weir-saved-metadata-" + std::to_string(::getpid()));
  fs::rename(metadata, saved);
  auto refusedNaming = [&](const fs::path& file, const std::string& why) {
    try {
      verifyCheckpoint(dir_.string(), readMetadata(dir_.string()));
      ADD_FAILURE() << file << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCheckpoint) << e.what();
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  ASSERT_EQ(::mkfifo(metadata.c_str(), 0644), 0);
  refusedNaming(metadata, "not a regular file");
  fs::remove(metadata);
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {
    fs::create_symlink(device, metadata);
    refusedNaming(metadata, "not a regular file");
    fs::remove(metadata);
  }
  fs::create_directory(metadata);
  refusedNaming(metadata, "not a regular file");
  fs::remove(metadata);
  fs::rename(saved, metadata);

  // The metadata is whole; a state file is not a regular one, or longer than it says.
  fs::rename(state, saved);
  fs::create_symlink("/dev/zero", state);
  refusedNaming(state, "not a regular file");
  fs::remove(state);
  fs::copy_file(saved, state);
  std::ofstream(state, std::ios::app) << "more";
  refusedNaming(state, "bytes, the checkpoint's metadata says");
  fs::remove(saved);
}

// A _metadata larger than any weir writes is refused by its size, not read whole.
TEST_F(CheckpointFilesTest, AnOversizedMetadataIsRefusedBeforeItIsRead) {
  writeCheckpoint();
  fs::resize_file(dir_ / "_metadata", kMaxMetadataBytes + 1);  // sparse: nothing is written
  try {
    readMetadata(dir_.string());
    FAIL() << "a metadata of " << kMaxMetadataBytes + 1 << " bytes was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCheckpoint) << e.what();
    EXPECT_NE(std::string(e.what()).find("holds more than 64 MiB"), std::string::npos) << e.what();
  }
}

class ConcurrentCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-coordinator-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Waits (up to 10 s) until `done` holds under the lock.
  template <class Done>
  bool waitFor(Done done) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, 10s, done);
  }

  // A coordinator on the test's clock, its attempt of one subtask started.
  std::unique_ptr<CheckpointCoordinator> start(const CheckpointConfig& config) {
    auto coordinator = std::make_unique<CheckpointCoordinator>(config, dir_.string(), "job", 8, 1, clock_);
    CheckpointCoordinator::Hooks hooks;
    hooks.triggerSources = [&](int64_t id, int64_t, SnapshotKind) {
      std::lock_guard lock(mutex_);
      triggered.push_back(id);
    };
    hooks.notifySubtasks = [&](int64_t id, bool ok) {
      std::lock_guard lock(mutex_);
      (ok ? completed : aborted).push_back(id);
      cv_.notify_all();
    };
    hooks.failJob = [&](const std::string& reason) {
      std::lock_guard lock(mutex_);
      jobFailed = true;
      failure = reason;
    };
    coordinator->startAttempt(1, hooks);
    return coordinator;
  }

  fs::path dir_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000'000);
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<int64_t> triggered, completed, aborted;  // guarded by mutex_
  bool jobFailed = false;                              // guarded by mutex_
  std::string failure;                                 // guarded by mutex_
};

TEST_F(ConcurrentCoordinatorTest, ANewerCheckpointCompletingSubsumesAnOlderOneWithoutAFailure) {
  CheckpointConfig config;
  config.setCheckpointInterval(1ms);
  config.setMaxConcurrentCheckpoints(2);  // tolerable failures stay 0
  auto coordinator = start(config);
  for (int i = 0; i < 10 && coordinator->pendingIds().size() < 2; ++i) {
    clock_->advance(1ms);
    coordinator->tick(true);
  }
  ASSERT_EQ(coordinator->pendingIds(), (std::vector<int64_t>{1, 2}));
  clock_->advance(5ms);
  coordinator->tick(true);  // two in progress: no third
  EXPECT_EQ(coordinator->pendingIds().size(), 2u);

  auto noFiles = [](const CheckpointTarget&) { return std::vector<StateFileInfo>{}; };
  coordinator->acknowledge(2, {}, noFiles, [] {});
  ASSERT_TRUE(waitFor([&] { return !completed.empty() && !aborted.empty(); }));
  EXPECT_EQ(completed, (std::vector<int64_t>{2}));
  EXPECT_EQ(aborted, (std::vector<int64_t>{1}));
  EXPECT_TRUE(coordinator->pendingIds().empty());
  auto stats = coordinator->stats();
  EXPECT_EQ(stats.completed, 1);
  EXPECT_EQ(stats.latestId, 2);
  EXPECT_NE(stats.history.at(1).failureMessage.find("subsumed by checkpoint 2"), std::string::npos);
  // The older one's late acknowledgement changes nothing.
  coordinator->acknowledge(1, {}, noFiles, [] {});
  coordinator->endAttempt();
  {
    std::lock_guard lock(mutex_);
    EXPECT_FALSE(jobFailed);
    EXPECT_EQ(completed, (std::vector<int64_t>{2}));
  }
  // Folders are removed on the I/O thread, which finishes its queue before it stops.
  coordinator.reset();
  EXPECT_TRUE(fs::exists(dir_ / "chk-2" / "_metadata"));
  EXPECT_FALSE(fs::exists(dir_ / "chk-1"));
  auto recorded = CompletedCheckpointStore::read(dir_.string(), *core::FileSystem::local());
  ASSERT_TRUE(recorded);
  EXPECT_EQ(*recorded, (std::vector<CompletedCheckpointStore::Entry>{{2, 1'000'002}}))
      << "the subsumed checkpoint is not recorded as completed";
}

// The record of completed checkpoints lists the retained ones, oldest first, as each
// completes; cancelled with DELETE_ON_CANCELLATION, the job leaves no folder.
TEST_F(ConcurrentCoordinatorTest, TheRecordOfCompletedCheckpointsListsTheRetainedOnes) {
  CheckpointConfig config;
  config.setCheckpointInterval(1ms);
  config.setNumRetainedCheckpoints(2);
  auto coordinator = start(config);
  auto recorded = [&] {
    auto entries = CompletedCheckpointStore::read(dir_.string(), *core::FileSystem::local());
    std::vector<int64_t> ids;
    for (const auto& e : entries.value()) ids.push_back(e.id);
    return ids;
  };
  EXPECT_EQ(recorded(), std::vector<int64_t>{}) << "an empty record is there before any checkpoint";
  auto noFiles = [](const CheckpointTarget&) { return std::vector<StateFileInfo>{}; };
  for (int64_t id = 1; id <= 3; ++id) {
    clock_->advance(1ms);
    coordinator->tick(true);
    ASSERT_EQ(coordinator->pendingIds(), std::vector<int64_t>{id});
    coordinator->acknowledge(id, {}, noFiles, [] {});
    ASSERT_TRUE(waitFor([&] { return completed.size() == static_cast<size_t>(id); }));
  }
  coordinator->endAttempt();
  EXPECT_EQ(recorded(), (std::vector<int64_t>{2, 3}));
  coordinator->shutdown(true);
  coordinator.reset();
  EXPECT_FALSE(fs::exists(dir_)) << "the job folder, its record included, is removed";
}

// Flink's StatsSummary: min, max and an integer average over every value, percentiles
// (Commons Math's legacy estimate) over the last 10,000; a negative value is left out.
TEST(StatsSummary, SumsUpAsFlinksRestApiDoes) {
  StatsSummary empty;
  EXPECT_TRUE(std::isnan(empty.snapshot().p50));
  StatsSummary four;
  for (int64_t v : {40, 10, -1, 30, 20}) four.add(v);
  auto s = four.snapshot();
  EXPECT_EQ(s.min, 10);
  EXPECT_EQ(s.max, 40);
  EXPECT_EQ(s.avg, 25);
  EXPECT_DOUBLE_EQ(s.p50, 25);  // position 2.5 of 10 20 30 40
  EXPECT_DOUBLE_EQ(s.p90, 40);  // position 4.5: past the last
  StatsSummary many;
  for (int64_t v = 1; v <= 10'010; ++v) many.add(v);
  s = many.snapshot();
  EXPECT_EQ(s.min, 1);   // over every value
  EXPECT_EQ(s.avg, 5005);  // 5005.5, cut as Java's long division does
  EXPECT_DOUBLE_EQ(s.p50, 5010.5);  // over 11..10010: position 5000.5
  EXPECT_NEAR(s.p999, 10'000.999, 1e-6);  // position 9990.999: 10000 + 0.999
}

// The summary sums up the completed checkpoints; the latest failed and completed ones are
// kept after the history has dropped them; a restore is counted with its checkpoint.
TEST_F(ConcurrentCoordinatorTest, TheSummaryLatestFailedAndRestoredFollowFlink) {
  CheckpointConfig config;
  config.setCheckpointInterval(1ms);
  config.setTolerableCheckpointFailureNumber(20);
  auto coordinator = start(config);
  auto next = [&] {
    clock_->advance(1ms);
    coordinator->tick(true);
    return coordinator->pendingIds().at(0);
  };
  const int64_t refused = next();
  clock_->advance(7ms);
  coordinator->decline(refused, "snapshot refused");
  std::vector<int64_t> durations;
  for (int i = 1; i <= 12; ++i) {
    const int64_t id = next();
    clock_->advance(std::chrono::milliseconds(i * 10 % 37));
    durations.push_back(i * 10 % 37);
    coordinator->acknowledge(id, {}, [](const CheckpointTarget&) { return std::vector<StateFileInfo>{}; }, [] {});
    ASSERT_TRUE(waitFor([&] { return completed.size() == static_cast<size_t>(i); }));
  }
  coordinator->recordRestore(9, false, "/somewhere/chk-9");
  auto stats = coordinator->stats(true);
  EXPECT_EQ(stats.history.size(), CheckpointCoordinator::kHistorySize);
  EXPECT_NE(stats.history.back().id, refused);
  ASSERT_TRUE(stats.latestFailed);
  EXPECT_EQ(stats.latestFailed->id, refused);
  EXPECT_EQ(stats.latestFailed->failureMessage, "snapshot refused");
  EXPECT_EQ(stats.latestFailed->failureTimestampMillis - stats.latestFailed->triggerTimestampMillis, 7);
  ASSERT_TRUE(stats.summary);
  std::sort(durations.begin(), durations.end());
  EXPECT_EQ(stats.summary->duration.min, durations.front());
  EXPECT_EQ(stats.summary->duration.max, durations.back());
  int64_t sum = 0;
  for (int64_t d : durations) sum += d;
  EXPECT_EQ(stats.summary->duration.avg, sum / static_cast<int64_t>(durations.size()));
  // Position 6.5 of 12: halfway between the 6th and 7th smallest.
  EXPECT_DOUBLE_EQ(stats.summary->duration.p50, (durations[5] + durations[6]) / 2.0);
  EXPECT_EQ(stats.restored, 1);
  ASSERT_TRUE(stats.latestRestored);
  EXPECT_EQ(stats.latestRestored->id, 9);
  EXPECT_EQ(stats.latestRestored->path, "/somewhere/chk-9");
  EXPECT_EQ(stats.latestRestored->timestampMillis, clock_->currentTimeMillis());
  EXPECT_FALSE(coordinator->stats().summary) << "the summary only when asked for";
  // The latest completed checkpoint is kept too when failures after it push it out of
  // the history (the REST API's latest.completed).
  const int64_t lastCompleted = stats.history.front().id;
  for (size_t i = 0; i < CheckpointCoordinator::kHistorySize; ++i) coordinator->decline(next(), "refused again");
  stats = coordinator->stats();
  EXPECT_TRUE(std::none_of(stats.history.begin(), stats.history.end(), [](const auto& r) { return r.completed; }));
  ASSERT_TRUE(stats.latestCompleted);
  EXPECT_EQ(stats.latestCompleted->id, lastCompleted);
  EXPECT_TRUE(stats.latestCompleted->completed);
  coordinator->endAttempt();
}

// Flink's checkpointStartDelay runs from the trigger to the subtask's first barrier: a
// snapshot that began after 30 ms of alignment, 50 ms after the trigger, was 20 ms late.
TEST_F(ConcurrentCoordinatorTest, AStartDelayEndsAtTheFirstBarrierNotAfterTheAlignment) {
  CheckpointConfig config;
  config.setCheckpointInterval(10ms);
  auto coordinator = start(config);
  clock_->advance(10ms);
  coordinator->tick(true);
  ASSERT_EQ(coordinator->pendingIds(), (std::vector<int64_t>{1}));
  clock_->advance(50ms);
  CheckpointCoordinator::Ack ack;
  ack.alignmentNanos = 30'000'000;
  ack.vertex = 0;
  ack.subtask = 0;
  ack.startMillis = clock_->currentTimeMillis();
  coordinator->acknowledge(1, ack, [](const CheckpointTarget&) { return std::vector<StateFileInfo>{}; }, [] {});
  ASSERT_TRUE(waitFor([&] { return !completed.empty(); }));
  const auto stats = coordinator->stats();
  ASSERT_TRUE(stats.latestCompleted);
  ASSERT_EQ(stats.latestCompleted->subtasks.size(), 1u);
  EXPECT_EQ(stats.latestCompleted->subtasks[0].alignmentMillis, 30);
  EXPECT_EQ(stats.latestCompleted->subtasks[0].startDelayMillis, 20);
  coordinator->endAttempt();
}

// A checkpoint not acknowledged within the checkpoint timeout is aborted when the
// coordinator's clock passes it, not a millisecond earlier; with no tolerable failures it
// fails the job, naming the timeout (Flink's CheckpointFailureManager).
TEST_F(ConcurrentCoordinatorTest, ACheckpointThatOutlivesItsTimeoutIsAbortedAndFailsTheJob) {
  CheckpointConfig config;
  config.setCheckpointInterval(10ms);
  config.setCheckpointTimeout(100ms);
  auto coordinator = start(config);
  coordinator->tick(true);
  EXPECT_TRUE(coordinator->pendingIds().empty());  // the interval has not passed
  clock_->advance(10ms);
  coordinator->tick(true);
  ASSERT_EQ(coordinator->pendingIds(), (std::vector<int64_t>{1}));
  clock_->advance(99ms);
  EXPECT_EQ(coordinator->tick(true), clock_->currentTimeMillis() + 1);  // wakes for the timeout
  EXPECT_EQ(coordinator->pendingIds(), (std::vector<int64_t>{1}));
  clock_->advance(1ms);
  coordinator->tick(false);
  EXPECT_TRUE(coordinator->pendingIds().empty());
  ASSERT_TRUE(waitFor([&] { return !aborted.empty(); }));
  std::lock_guard lock(mutex_);
  EXPECT_EQ(aborted, (std::vector<int64_t>{1}));
  EXPECT_TRUE(jobFailed);
  EXPECT_NE(failure.find("checkpoint timeout 100 ms"), std::string::npos) << failure;
  EXPECT_EQ(coordinator->stats().failed, 1);
}

// The min pause counts from the end of the previous checkpoint: the next one is
// triggered no sooner, even when the interval has long passed.
TEST_F(ConcurrentCoordinatorTest, TheMinPauseCountsFromTheEndOfThePreviousCheckpoint) {
  CheckpointConfig config;
  config.setCheckpointInterval(10ms);
  config.setMinPauseBetweenCheckpoints(50ms);
  auto coordinator = start(config);
  clock_->advance(10ms);
  coordinator->tick(true);
  ASSERT_EQ(coordinator->pendingIds(), (std::vector<int64_t>{1}));
  clock_->advance(20ms);  // completes 20 ms after it started
  auto noFiles = [](const CheckpointTarget&) { return std::vector<StateFileInfo>{}; };
  coordinator->acknowledge(1, {}, noFiles, [] {});
  ASSERT_TRUE(waitFor([&] { return !completed.empty(); }));
  for (int i = 0; i < 49; ++i) {
    clock_->advance(1ms);
    coordinator->tick(true);
    ASSERT_TRUE(coordinator->pendingIds().empty()) << "triggered " << i + 1 << " ms after the last one completed";
  }
  clock_->advance(1ms);
  coordinator->tick(true);
  EXPECT_EQ(coordinator->pendingIds(), (std::vector<int64_t>{2}));
  coordinator->endAttempt();
}

}  // namespace
}  // namespace weir::checkpoint
