#include "support/fault_injecting_file_system.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace weir::test {
namespace {

namespace fs = std::filesystem;
using Op = FaultInjectingFileSystem::Op;
using WriteMode = core::FileSystem::WriteMode;

class FaultInjectingFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("weir-fault-fs-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);  // made outside the file system: durable
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Writes `text` to a new file `name`; `sync`: and fsyncs it.
  void write(const std::string& name, const std::string& text, bool sync) {
    std::error_code ec;
    auto file = disk_.openForWrite(path(name), WriteMode::kTruncate, ec);
    ASSERT_TRUE(file) << ec.message();
    ASSERT_FALSE(file->append(text));
    if (sync) {
      ASSERT_FALSE(file->sync());
    }
    ASSERT_FALSE(file->close());
  }

  FaultInjectingFileSystem disk_;
  std::string dir_;
};

TEST_F(FaultInjectingFileSystemTest, AFileWrittenButNotSyncedLosesItsBytesOnACrash) {
  write("a", "never synced", false);
  std::error_code ec;
  auto b = disk_.openForWrite(path("b"), WriteMode::kTruncate, ec);
  ASSERT_TRUE(b);
  ASSERT_FALSE(b->append("synced "));
  ASSERT_FALSE(b->sync());
  ASSERT_FALSE(b->append("and not"));
  ASSERT_FALSE(disk_.syncDirectory(dir_));  // both names are durable, their bytes are not all
  EXPECT_EQ(contents(path("b")), "synced and not") << "until the crash the disk holds every byte";
  disk_.crash();
  EXPECT_TRUE(fs::exists(path("a")));
  EXPECT_EQ(contents(path("a")), "");
  EXPECT_EQ(contents(path("b")), "synced ");
}

TEST_F(FaultInjectingFileSystemTest, ASyncedFileInASyncedFolderKeepsItsBytes) {
  write("a", "durable", true);
  ASSERT_FALSE(disk_.syncDirectory(dir_));
  disk_.crash();
  EXPECT_EQ(contents(path("a")), "durable");
}

TEST_F(FaultInjectingFileSystemTest, AFileWhoseNameWasNeverSyncedVanishes) {
  write("synced-bytes", "x", true);
  write("nothing-synced", "y", false);
  disk_.crash();
  EXPECT_FALSE(fs::exists(path("synced-bytes"))) << "its folder was not synced";
  EXPECT_FALSE(fs::exists(path("nothing-synced")));
}

TEST_F(FaultInjectingFileSystemTest, ARenameNotMadeDurableIsUndone) {
  write("a.inprogress", "data", true);
  ASSERT_FALSE(disk_.syncDirectory(dir_));
  ASSERT_FALSE(disk_.rename(path("a.inprogress"), path("a")));
  EXPECT_TRUE(fs::exists(path("a")));
  disk_.crash();
  EXPECT_FALSE(fs::exists(path("a")));
  EXPECT_EQ(contents(path("a.inprogress")), "data") << "back under its old name, with its synced bytes";

  // Synced after the rename, it stays.
  disk_.restart();
  ASSERT_FALSE(disk_.rename(path("a.inprogress"), path("a")));
  ASSERT_FALSE(disk_.syncDirectory(dir_));
  disk_.crash();
  EXPECT_EQ(contents(path("a")), "data");
  EXPECT_FALSE(fs::exists(path("a.inprogress")));
}

TEST_F(FaultInjectingFileSystemTest, AnUndoneRenameBringsBackTheFileItReplaced) {
  write("a", "old", true);
  write("a.new", "new", true);
  ASSERT_FALSE(disk_.syncDirectory(dir_));
  ASSERT_FALSE(disk_.rename(path("a.new"), path("a")));
  EXPECT_EQ(contents(path("a")), "new");
  disk_.crash();
  EXPECT_EQ(contents(path("a")), "old");
  EXPECT_EQ(contents(path("a.new")), "new");
}

TEST_F(FaultInjectingFileSystemTest, AFolderMadeAndNotSyncedVanishesWithWhatItHolds) {
  ASSERT_FALSE(disk_.createDirectories(path("job/chk-1")));
  write("job/chk-1/_metadata", "m", true);
  ASSERT_FALSE(disk_.syncDirectory(path("job/chk-1")));
  ASSERT_FALSE(disk_.syncDirectory(path("job")));  // chk-1 is durable in job, job is not in dir_
  disk_.crash();
  EXPECT_FALSE(fs::exists(path("job")));

  disk_.restart();
  ASSERT_FALSE(disk_.createDirectories(path("job/chk-1")));
  write("job/chk-1/_metadata", "m", true);
  for (const char* folder : {"job/chk-1", "job", ""}) ASSERT_FALSE(disk_.syncDirectory(path(folder)));
  disk_.crash();
  EXPECT_EQ(contents(path("job/chk-1/_metadata")), "m");
}

TEST_F(FaultInjectingFileSystemTest, TheNthWriteFailsWithTheErrorGivenAndWritesNothing) {
  disk_.failNth(Op::kWrite, 3);
  std::error_code ec;
  auto file = disk_.openForWrite(path("a"), WriteMode::kTruncate, ec);
  ASSERT_TRUE(file);
  EXPECT_FALSE(file->append("1"));
  EXPECT_FALSE(file->append("2"));
  EXPECT_EQ(file->append("3"), std::errc::io_error);
  EXPECT_FALSE(file->append("4")) << "once";
  ASSERT_FALSE(file->close());
  EXPECT_EQ(contents(path("a")), "124");
  ASSERT_EQ(disk_.failures().size(), 1u);
  EXPECT_EQ(disk_.failures()[0].op, Op::kWrite);
  EXPECT_EQ(disk_.failures()[0].path, path("a"));
  EXPECT_EQ(disk_.calls(Op::kWrite), 4);
}

TEST_F(FaultInjectingFileSystemTest, FailuresCanBeAimedAtPathsAndEveryOperation) {
  disk_.failNth(Op::kSync, 1, std::errc::io_error, "_metadata");
  disk_.failNth(Op::kRename, 2, std::errc::read_only_file_system);
  disk_.failAlways(Op::kSyncDirectory, std::errc::io_error, "never");
  std::error_code ec;
  auto state = disk_.openForWrite(path("state"), WriteMode::kTruncate, ec);
  EXPECT_FALSE(state->sync()) << "not the path aimed at";
  auto metadata = disk_.openForWrite(path("_metadata.inprogress"), WriteMode::kTruncate, ec);
  EXPECT_EQ(metadata->sync(), std::errc::io_error);
  EXPECT_FALSE(metadata->sync());
  EXPECT_FALSE(disk_.rename(path("state"), path("state2")));
  EXPECT_EQ(disk_.rename(path("state2"), path("state3")), std::errc::read_only_file_system);
  EXPECT_TRUE(fs::exists(path("state2"))) << "a failed rename does nothing";
  ASSERT_FALSE(disk_.createDirectories(path("never")));
  EXPECT_EQ(disk_.syncDirectory(path("never")), std::errc::io_error);
  EXPECT_EQ(disk_.syncDirectory(path("never")), std::errc::io_error);
  EXPECT_FALSE(disk_.syncDirectory(dir_));
  disk_.clearFaults();
  EXPECT_FALSE(disk_.syncDirectory(path("never")));
  EXPECT_EQ(disk_.failures().size(), 4u);
}

TEST_F(FaultInjectingFileSystemTest, AnObserverSeesEveryCallWithItsPathAndHowItEnded) {
  std::vector<std::string> seen;
  disk_.setObserver([&](Op op, const std::string& path, std::error_code ec) {
    seen.push_back(std::string(FaultInjectingFileSystem::name(op)) + " " + fs::path(path).filename().string() + " " +
                   (ec ? "failed" : "ok"));
  });
  disk_.failNth(Op::kSync, 1);
  write("a.inprogress", "x", false);
  std::error_code ec;
  auto file = disk_.openForWrite(path("a.inprogress"), WriteMode::kAppend, ec);
  EXPECT_TRUE(file->sync());
  file.reset();
  ASSERT_FALSE(disk_.rename(path("a.inprogress"), path("a")));
  EXPECT_EQ(seen, (std::vector<std::string>{"open for write a.inprogress ok", "write a.inprogress ok",
                                            "open for write a.inprogress ok", "sync a.inprogress failed",
                                            "rename a ok"}));
}

TEST_F(FaultInjectingFileSystemTest, AFullDiskWritesWhatFitsThenFailsWithENOSPC) {
  disk_.setSpaceLeft(10);
  std::error_code ec;
  auto file = disk_.openForWrite(path("a"), WriteMode::kTruncate, ec);
  EXPECT_FALSE(file->append("123456"));
  EXPECT_EQ(file->append("789abc"), std::errc::no_space_on_device);
  EXPECT_EQ(file->append("d"), std::errc::no_space_on_device);
  EXPECT_EQ(contents(path("a")), "123456789a");
  disk_.clearFaults();  // room made
  EXPECT_FALSE(file->append("d"));
  ASSERT_FALSE(file->close());
  EXPECT_EQ(contents(path("a")), "123456789ad");
}

TEST_F(FaultInjectingFileSystemTest, AfterACrashNothingReachesTheDiskUntilTheRestart) {
  std::error_code ec;
  auto before = disk_.openForWrite(path("a"), WriteMode::kTruncate, ec);
  ASSERT_TRUE(before);
  disk_.crash();
  EXPECT_TRUE(disk_.crashed());
  EXPECT_EQ(before->append("x"), std::errc::io_error);
  EXPECT_EQ(before->sync(), std::errc::io_error);
  EXPECT_FALSE(disk_.openForWrite(path("b"), WriteMode::kTruncate, ec));
  EXPECT_EQ(ec, std::errc::io_error);
  EXPECT_EQ(disk_.createDirectories(path("c")), std::errc::io_error);
  EXPECT_EQ(disk_.removeAll(dir_), std::errc::io_error);
  EXPECT_TRUE(fs::exists(dir_));
  disk_.restart();
  EXPECT_EQ(before->append("x"), std::errc::io_error) << "a file opened before the crash stays dead";
  EXPECT_TRUE(disk_.openForWrite(path("b"), WriteMode::kTruncate, ec));
}

// Threads writing at once (the checkpoint coordinator's I/O thread and a test's): the
// books stay right (and ThreadSanitizer sees no race).
TEST_F(FaultInjectingFileSystemTest, ThreadsWriteAtOnceAndACrashKeepsExactlyWhatEachSynced) {
  constexpr int kThreads = 4, kWrites = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::error_code ec;
      auto file = disk_.openForWrite(path("f" + std::to_string(t)), WriteMode::kTruncate, ec);
      for (int i = 0; i < kWrites; ++i) {
        file->append("0123456789");
        if (i == kWrites / 2) file->sync();
      }
      file->close();
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_FALSE(disk_.syncDirectory(dir_));
  EXPECT_EQ(disk_.calls(Op::kWrite), kThreads * kWrites);
  disk_.crash();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(fs::file_size(path("f" + std::to_string(t))), 10u * (kWrites / 2 + 1));
}

}  // namespace
}  // namespace weir::test
