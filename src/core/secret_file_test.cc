#include "core/secret_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace weir::core {
namespace {

TEST(SecretFile, TheFirstLineWithoutTrailingWhiteSpace) {
  const auto path = std::filesystem::temp_directory_path() / ("weir-secret-" + std::to_string(::getpid()));
  std::ofstream(path) << "s3cret \t\r\nsecond line\n";
  EXPECT_EQ(readSecretFile(path.string()), "s3cret");
  std::ofstream(path) << "\n";
  EXPECT_EQ(readSecretFile(path.string()), "");
  // Only its owner may read or change it, or it is said open, as ssh says of a key.
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(secretFileExposure(path.string()), std::nullopt);
  std::filesystem::permissions(path, std::filesystem::perms::group_read, std::filesystem::perm_options::add);
  EXPECT_EQ(secretFileExposure(path.string()), "is open to others (mode 0640); chmod 600 it");
  std::filesystem::permissions(path, std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  EXPECT_EQ(secretFileExposure(path.string()), "is open to others (mode 0642); chmod 600 it");
  std::filesystem::remove(path);
  EXPECT_EQ(readSecretFile(path.string()), std::nullopt);
  EXPECT_EQ(secretFileExposure(path.string()), std::nullopt);
  ::setenv("WEIR_SECRET_FILE_TEST", "s3cret\n", 1);
  EXPECT_EQ(readSecretEnvironment("WEIR_SECRET_FILE_TEST"), "s3cret");
  ::unsetenv("WEIR_SECRET_FILE_TEST");
  EXPECT_EQ(readSecretEnvironment("WEIR_SECRET_FILE_TEST"), "");
}

}  // namespace
}  // namespace weir::core
