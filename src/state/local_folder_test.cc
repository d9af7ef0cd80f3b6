// RocksDB working folders that a killed process left are removed by the next one.
#include "state/local_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace weir::state {
namespace {

namespace fs = std::filesystem;

class LocalFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("weir-local-folders-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_);
  }
  void TearDown() override { fs::remove_all(base_); }
  // A folder as process `pid` leaves it (with a file inside, as RocksDB's would be),
  // with an owner file unless `withOwner` is false.
  fs::path leave(const std::string& name, bool withOwner) {
    fs::create_directories(base_ / name);
    std::ofstream(base_ / name / "000007.sst") << "data";
    if (withOwner) std::ofstream((base_ / name).string() + ".owner");
    return base_ / name;
  }
  fs::path base_;
};

TEST_F(LocalFolderTest, AFolderWhoseOwnerIsGoneIsRemovedAndALiveOneKept) {
  const long pid1 = 1;  // init: always alive
  fs::path killed = leave("weir-rocksdb-" + std::to_string(pid1) + "-0-op", true);      // owner file not locked
  fs::path noOwner = leave("weir-rocksdb-99999999-0-op", false);                       // no such pid
  fs::path alive = leave("weir-rocksdb-" + std::to_string(pid1) + "-1-op", true);       // locked below
  fs::path notOurs = leave("other-folder", false);
  int lock = ::open((alive.string() + ".owner").c_str(), O_RDWR);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0);

  auto removed = removeDeadLocalFolders(base_.string());
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected{killed.string(), noOwner.string()};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_FALSE(fs::exists(killed.string() + ".owner"));
  EXPECT_FALSE(fs::exists(noOwner));
  EXPECT_TRUE(fs::exists(alive / "000007.sst"));
  EXPECT_TRUE(fs::exists(notOurs));
  ::close(lock);
}

// A new folder sweeps first; its own folder and owner file go with it.
TEST_F(LocalFolderTest, ANewFolderRemovesDeadOnesAndItsOwnWhenItGoes) {
  fs::path killed = leave("weir-rocksdb-99999999-3-op", true);
  std::string path;
  {
    LocalFolder folder(base_.string(), "op/1");
    path = folder.path();
    EXPECT_FALSE(fs::exists(killed));
    EXPECT_TRUE(fs::is_directory(path));
    EXPECT_TRUE(fs::exists(path + ".owner"));
    // While it lives, another sweep keeps it (its owner file is locked; a sweep from
    // another process sees the lock, this one skips its own pid).
    EXPECT_TRUE(removeDeadLocalFolders(base_.string()).empty());
    EXPECT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".owner"));
  EXPECT_THROW(LocalFolder((base_ / "missing").string(), "x"), std::exception);
}

}  // namespace
}  // namespace weir::state
