// A secret kept in a file of its own (the REST token), so that no command line, which
// `ps` shows, holds it.
#pragma once

#include <optional>
#include <string>

namespace weir::core {

// The first line of the file at `path`, without trailing white space; nullopt when the
// file cannot be read. An empty string when the line is.
std::optional<std::string> readSecretFile(const std::string& path);
// Why the file at `path` does not keep a secret, as ssh judges a private key: users
// other than its owner may read or change it ("is open to others (mode 0644); chmod 600
// it"). nullopt when only its owner may, or it cannot be examined (reading it says why).
std::optional<std::string> secretFileExposure(const std::string& path);
// The environment variable `name` without trailing white space, as a file's line is
// read; empty when it is not set.
std::string readSecretEnvironment(const char* name);

}  // namespace weir::core
