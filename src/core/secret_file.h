// A secret kept in a file of its own (the REST token), so that no command line, which
// `ps` shows, holds it.
#pragma once

#include <optional>
#include <string>

namespace weir::core {

// The first line of the file at `path`, without trailing white space; nullopt when the
// file cannot be read. An empty string when the line is.
std::optional<std::string> readSecretFile(const std::string& path);
// The environment variable `name` without trailing white space, as a file's line is
// read; empty when it is not set.
std::string readSecretEnvironment(const char* name);

}  // namespace weir::core
