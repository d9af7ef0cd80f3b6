// A secret kept in a file of its own (the REST token), so that no command line, which
// `ps` shows, holds it.
#pragma once

#include <optional>
#include <string>

namespace weir::core {

// The first line of the file at `path`, without trailing white space; nullopt when the
// file cannot be read. An empty string when the line is.
std::optional<std::string> readSecretFile(const std::string& path);

}  // namespace weir::core
