#include "core/secret_file.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
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

std::optional<std::string> secretFileExposure(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string("is open to others (mode ") + mode + "); chmod 600 it";
}

std::string readSecretEnvironment(const char* name) {
  const char* value = std::getenv(name);
  return withoutTrailingSpace(value != nullptr ? value : "");
}

}  // namespace weir::core
