#include "core/secret_file.h"

#include <cctype>
#include <fstream>

namespace weir::core {

std::optional<std::string> readSecretFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  if (in.bad()) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

}  // namespace weir::core
