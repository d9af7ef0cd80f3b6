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
  std::filesystem::remove(path);
  EXPECT_EQ(readSecretFile(path.string()), std::nullopt);
  ::setenv("WEIR_SECRET_FILE_TEST", "s3cret\n", 1);
  EXPECT_EQ(readSecretEnvironment("WEIR_SECRET_FILE_TEST"), "s3cret");
  ::unsetenv("WEIR_SECRET_FILE_TEST");
  EXPECT_EQ(readSecretEnvironment("WEIR_SECRET_FILE_TEST"), "");
}

}  // namespace
}  // namespace weir::core
