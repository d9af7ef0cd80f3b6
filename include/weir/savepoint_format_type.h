// The format a savepoint is written in (Flink's SavepointFormatType).
#pragma once

#include <optional>
#include <string_view>

namespace weir {

enum class SavepointFormatType {
  // Independent of the state backend: every keyed state as its serialized entries, in
  // key-group order. A canonical savepoint restores into any state backend.
  CANONICAL,
  // The state backend's own files (RocksDB's SST files and manifest, copied into the
  // savepoint): faster to take and restore for large state, but it restores only into
  // the state backend that took it.
  NATIVE,
};

// "CANONICAL" or "NATIVE".
const char* toString(SavepointFormatType type);
// Either spelling, any case ("canonical", "NATIVE"); nullopt for anything else.
std::optional<SavepointFormatType> parseSavepointFormatType(std::string_view text);

}  // namespace weir
