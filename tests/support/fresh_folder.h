// A folder of a test's own, for its checkpoints, savepoints and output.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace weir::test {

// <temp>/weir-<name>-<pid>, empty (whatever an earlier run left there is removed).
inline std::filesystem::path freshFolder(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("weir-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace weir::test
