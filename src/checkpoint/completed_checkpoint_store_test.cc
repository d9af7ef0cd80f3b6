// The record of completed checkpoints, and what `--restore latest` makes of it: the
// newest completed checkpoint or an error naming it, never an older one or a fresh
// start in its place (FLINK-22502); a checkpoint that never completed is passed over.
#include "checkpoint/completed_checkpoint_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint_storage.h"
#include "weir/error.h"

namespace weir::checkpoint {
namespace {

namespace fs = std::filesystem;
using Entry = CompletedCheckpointStore::Entry;

class CompletedCheckpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-completed-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "job");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A checkpoint of no state with a whole _metadata, chk-<id> in job folder `job`.
  std::string checkpoint(int64_t id, const std::string& job = "job") {
    fs::path folder = dir_ / job / ("chk-" + std::to_string(id));
    fs::create_directories(folder);
    CheckpointMetadata m;
    m.checkpointId = id;
    m.jobId = job;
    m.maxParallelism = 128;
    writeMetadata(folder.string(), m);
    return folder.string();
  }
  void record(const std::vector<Entry>& entries, const std::string& job = "job") {
    CompletedCheckpointStore((dir_ / job).string(), core::FileSystem::local()).write(entries);
  }
  // The error findLatestCheckpoint throws; fails the test when it throws none.
  std::string latestError() {
    try {
      ADD_FAILURE() << "no error; the latest is '" << findLatestCheckpoint(dir_.string()) << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCheckpoint) << e.what();
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(CompletedCheckpointsTest, WhatIsWrittenReadsBackAndDamageIsNamed) {
  const std::string job = (dir_ / "job").string();
  EXPECT_FALSE(CompletedCheckpointStore::read(job, *core::FileSystem::local())) << "no record yet";
  record({{4, 1000}, {5, 2000}});
  auto read = CompletedCheckpointStore::read(job, *core::FileSystem::local());
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, (std::vector<Entry>{{4, 1000}, {5, 2000}}));
  record({});
  EXPECT_EQ(CompletedCheckpointStore::read(job, *core::FileSystem::local()).value(), std::vector<Entry>{});

  record({{4, 1000}, {5, 2000}});
  const fs::path file = dir_ / "job" / std::string(CompletedCheckpointStore::kFileName);
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Every flipped byte and every truncation is found.
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (bool truncate : {false, true}) {
      std::string damaged = bytes;
      if (truncate)
        damaged.resize(at);
      else
        damaged[at] = static_cast<char>(damaged[at] ^ 0x04);
      std::ofstream(file, std::ios::binary | std::ios::trunc) << damaged;
      try {
        CompletedCheckpointStore::read(job, *core::FileSystem::local());
        ADD_FAILURE() << (truncate ? "truncated at " : "flipped at ") << at << " was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
      }
    }
  }
}

// The newest recorded checkpoint is the latest, across job folders; a chk-<n> with
// _metadata that the record does not list (the job died between the two) never
// completed and is passed over, as is one without _metadata.
TEST_F(CompletedCheckpointsTest, TheLatestIsTheNewestRecordedAsCompleted) {
  checkpoint(1);
  checkpoint(2);
  record({{1, 1000}, {2, 2000}});
  checkpoint(3);                                 // _metadata written, not recorded
  fs::create_directories(dir_ / "job" / "chk-4");  // never got its _metadata
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), (dir_ / "job" / "chk-2").string());

  // A later run of the job, in its own folder.
  fs::create_directories(dir_ / "job2");
  checkpoint(7, "job2");
  record({{7, 3000}}, "job2");
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), (dir_ / "job2" / "chk-7").string());

  // A run that started and completed none: an empty record changes nothing.
  fs::create_directories(dir_ / "job3" / "chk-1");
  record({}, "job3");
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), (dir_ / "job2" / "chk-7").string());
}

TEST_F(CompletedCheckpointsTest, NoCheckpointThatCompletedMeansAFreshStart) {
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), "");
  fs::create_directories(dir_ / "job" / "chk-1");  // killed before it completed
  record({});
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), "");
  EXPECT_THROW(findLatestCheckpoint((dir_ / "missing").string()), Error);
}

// The case: the newest completed checkpoint's _metadata is missing, not a
// regular file or corrupt, and an older one is whole. That is an error naming the
// newest, not a restore of the older one (whose output a sink committed past).
TEST_F(CompletedCheckpointsTest, ADamagedLatestIsAnErrorNotAFallBackToAnOlderOne) {
  checkpoint(1);
  const fs::path metadata = fs::path(checkpoint(2)) / "_metadata";
  record({{1, 1000}, {2, 2000}});
  const fs::path saved = dir_ / "saved";
  fs::rename(metadata, saved);
  auto expectRefused = [&](const std::string& why) {
    std::string error = latestError();
    EXPECT_NE(error.find("latest completed checkpoint '" + (dir_ / "job" / "chk-2").string() + "'"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
  };
  expectRefused("is missing");
  ASSERT_EQ(::mkfifo(metadata.c_str(), 0644), 0);
  expectRefused("not a regular file");
  fs::remove(metadata);
  fs::create_symlink("/dev/zero", metadata);
  expectRefused("not a regular file");
  fs::remove(metadata);
  std::ofstream(metadata) << "WEIR-CHECKPOINT\n{}";
  expectRefused("truncated");
  fs::remove(metadata);
  fs::copy_file(saved, metadata);
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), (dir_ / "job" / "chk-2").string()) << "whole again";

  // The whole checkpoint folder gone is as bad.
  fs::remove_all(dir_ / "job" / "chk-2");
  expectRefused("is missing");
}

// Checkpoints that no record lists as completed (written by a weir that kept no
// record, or whose record was removed) are not guessed at: an error, not a fresh start.
TEST_F(CompletedCheckpointsTest, CheckpointsWithoutARecordAreAnErrorNotAFreshStart) {
  checkpoint(1);
  std::string error = latestError();
  EXPECT_NE(error.find(std::string(CompletedCheckpointStore::kFileName)), std::string::npos) << error;
  EXPECT_NE(error.find("chk-1"), std::string::npos) << error;
  // A damaged record is an error naming it.
  std::ofstream(dir_ / "job" / std::string(CompletedCheckpointStore::kFileName)) << "garbage\n";
  error = latestError();
  EXPECT_NE(error.find(std::string(CompletedCheckpointStore::kFileName)), std::string::npos) << error;
}

}  // namespace
}  // namespace weir::checkpoint
