#include "core/secret_file.h"

#include <cctype>
#include <cstdlib>
#include <fstream>

namespace weir::core {

namespace {

std::string withoutTrailingSpace(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

std::optional<std::string> readSecretFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  if (in.bad()) return std::nullopt;
  return withoutTrailingSpace(std::move(line));
}

std::string readSecretEnvironment(const char* name) {
  const char* value = std::getenv(name);
  return withoutTrailingSpace(value != nullptr ? value : "");
}

}  // namespace weir::core
