#include "core/file_system.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace weir::core {
namespace {

namespace fs = std::filesystem;

class LocalFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-file-system-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  FileSystem& disk_ = *FileSystem::local();
  fs::path dir_;
};

TEST_F(LocalFileSystemTest, WritesAppendsAndReadsWholeOrARange) {
  std::error_code ec;
  auto file = disk_.openForWrite(path("a"), FileSystem::WriteMode::kTruncate, ec);
  ASSERT_TRUE(file) << ec.message();
  EXPECT_FALSE(file->append("hello "));
  EXPECT_FALSE(file->sync());
  EXPECT_FALSE(file->close());
  file = disk_.openForWrite(path("a"), FileSystem::WriteMode::kAppend, ec);
  ASSERT_TRUE(file);
  EXPECT_FALSE(file->append("world"));
  file.reset();  // closes
  EXPECT_EQ(contents(path("a")), "hello world");

  std::string bytes;
  EXPECT_FALSE(disk_.readFile(path("a"), bytes));
  EXPECT_EQ(bytes, "hello world");
  EXPECT_FALSE(disk_.readRange(path("a"), 6, 100, bytes));
  EXPECT_EQ(bytes, "world") << "a range past the end gives what there is";
  uint64_t size = 0;
  EXPECT_FALSE(disk_.fileSize(path("a"), size));
  EXPECT_EQ(size, 11u);

  // Truncating empties it.
  file = disk_.openForWrite(path("a"), FileSystem::WriteMode::kTruncate, ec);
  ASSERT_TRUE(file);
  EXPECT_FALSE(file->close());
  EXPECT_EQ(contents(path("a")), "");
}

TEST_F(LocalFileSystemTest, AFileLargerThanOneChunkReadsBackWhole) {
  std::string big(3u << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>('a' + i % 26);
  std::error_code ec;
  auto file = disk_.openForWrite(path("big"), FileSystem::WriteMode::kTruncate, ec);
  ASSERT_TRUE(file);
  ASSERT_FALSE(file->append(big));
  ASSERT_FALSE(file->close());
  std::string back;
  EXPECT_FALSE(disk_.readFile(path("big"), back));
  EXPECT_EQ(back, big);
}

TEST_F(LocalFileSystemTest, RenamesListsAndRemoves) {
  std::error_code ec;
  ASSERT_FALSE(disk_.createDirectories(path("x/y")));
  auto file = disk_.openForWrite(path("x/y/a.inprogress"), FileSystem::WriteMode::kTruncate, ec);
  ASSERT_TRUE(file);
  ASSERT_FALSE(file->close());
  EXPECT_FALSE(disk_.rename(path("x/y/a.inprogress"), path("x/y/a")));
  EXPECT_FALSE(disk_.syncDirectory(path("x/y")));
  std::vector<std::string> names;
  EXPECT_FALSE(disk_.list(path("x/y"), names));
  EXPECT_EQ(names, std::vector<std::string>{"a"});

  EXPECT_EQ(disk_.remove(path("x")), std::errc::directory_not_empty);
  EXPECT_FALSE(disk_.remove(path("x/y/a")));
  EXPECT_EQ(disk_.remove(path("x/y/a")), std::errc::no_such_file_or_directory);
  EXPECT_FALSE(disk_.removeAll(path("x")));
  EXPECT_FALSE(fs::exists(path("x")));
  EXPECT_FALSE(disk_.removeAll(path("x"))) << "removing what is gone is no error";
}

TEST_F(LocalFileSystemTest, WhatIsMissingIsReportedAsMissing) {
  std::error_code ec;
  EXPECT_FALSE(disk_.openForRead(path("none"), ec));
  EXPECT_EQ(ec, std::errc::no_such_file_or_directory);
  EXPECT_FALSE(disk_.openForWrite(path("no/folder/file"), FileSystem::WriteMode::kTruncate, ec));
  EXPECT_EQ(ec, std::errc::no_such_file_or_directory);
  uint64_t size;
  EXPECT_EQ(disk_.fileSize(path("none"), size), std::errc::no_such_file_or_directory);
  EXPECT_EQ(disk_.rename(path("none"), path("other")), std::errc::no_such_file_or_directory);
  EXPECT_TRUE(disk_.syncDirectory(path("none")));
  std::vector<std::string> names;
  EXPECT_TRUE(disk_.list(path("none"), names));
  std::string bytes;
  EXPECT_EQ(disk_.readFile(path("none"), bytes), std::errc::no_such_file_or_directory);
}

// Only regular files are opened for reading: a FIFO (opened without waiting for a
// writer), a folder or a link to a device is refused, so no read blocks or never ends.
TEST_F(LocalFileSystemTest, OnlyRegularFilesAreRead) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0644), 0);
  fs::create_directory(path("folder"));
  fs::create_symlink("/dev/zero", path("zero"));
  std::ofstream(path("file")) << "bytes";
  fs::create_symlink(path("file"), path("link"));
  for (const char* name : {"fifo", "folder", "zero"}) {
    std::error_code ec;
    EXPECT_FALSE(disk_.openForRead(path(name), ec)) << name;
    EXPECT_EQ(ec, notARegularFile()) << name << ": " << ec.message();
    uint64_t size = 0;
    EXPECT_EQ(disk_.fileSize(path(name), size), notARegularFile()) << name;
  }
  std::string bytes;
  EXPECT_FALSE(disk_.readFile(path("link"), bytes)) << "a link to a regular file is followed";
  EXPECT_EQ(bytes, "bytes");
  // A limit: what is larger is not read into memory.
  EXPECT_EQ(disk_.readFile(path("file"), bytes, 4), std::errc::file_too_large);
  EXPECT_EQ(bytes, "");
  EXPECT_FALSE(disk_.readFile(path("file"), bytes, 5));
  EXPECT_EQ(bytes, "bytes");
}

}  // namespace
}  // namespace weir::core
