// `weir checkpoint inspect|clean PATH` and `weir savepoint inspect|dump|dispose PATH`.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace weir::cli {

// Prints a checkpoint's metadata and verifies every file. Exit code 0 when intact, 1
// when a file is missing or damaged, 2 when there is no checkpoint at `path`.
int inspectCheckpoint(const std::string& path);

// `weir savepoint dump PATH --operator UID --state NAME`: the state's entries as JSON
// Lines on stdout. Exit code 0 when written, 1 when a file is damaged or an entry does
// not decode, 2 when there is no snapshot at `path`, or no such operator or state.
int dumpSavepointState(const std::string& path, const std::string& operatorId, const std::string& state);

// `weir savepoint dispose PATH`: removes a savepoint (or checkpoint). Exit code 0 when
// removed, 1 when it could not be, 2 when there is none at `path`.
int disposeSavepoint(const std::string& path);

// Removes (or with `dryRun` lists) what no complete checkpoint under `path` uses, and
// says how much; also (not dry) the RocksDB working folders of dead runs in
// `rocksdbLocalDir` ("": $TMPDIR, else /tmp). Exit code 0 when done, 1 when a running job
// holds the folder or a checkpoint's metadata is damaged (nothing removed there), 2 when
// there are no checkpoints at `path`.
int cleanCheckpoints(const std::string& path, bool dryRun, const std::string& rocksdbLocalDir = "");

}  // namespace weir::cli
