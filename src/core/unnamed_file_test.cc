#include "core/unnamed_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace weir::core {
namespace {

std::set<std::string> namesIn(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename());
  return names;
}

// It holds what is written and leaves no name in its folder, open or closed.
TEST(UnnamedFile, HoldsWhatIsWrittenAndLeavesNoName) {
  const auto folder = std::filesystem::temp_directory_path() / ("weir-unnamed-" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  std::error_code ec;
  const int fd = openUnnamedFile(folder.string(), ec);
  ASSERT_GE(fd, 0) << ec.message();
  EXPECT_TRUE(namesIn(folder).empty());
  const std::string data = "spilled bytes";
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
  std::string back(data.size(), '\0');
  ASSERT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, data);
  ::close(fd);
  EXPECT_TRUE(namesIn(folder).empty());
  std::filesystem::remove_all(folder);
}

TEST(UnnamedFile, AMissingFolderIsTheSystemsError) {
  std::error_code ec;
  EXPECT_EQ(openUnnamedFile("/no/such/folder", ec), -1);
  EXPECT_EQ(ec, std::errc::no_such_file_or_directory);
}

}  // namespace
}  // namespace weir::core
