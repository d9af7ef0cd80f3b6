// `weir checkpoint inspect|clean PATH`, and the checkpoint options of `weir run`.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/job_options.h"

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

// The checkpoint and restart options of one `weir run <example>` subcommand.
class CheckpointOptions {
 public:
  void addTo(CLI::App& app);
  // Checks the values and puts them into `options`; throws weir::Error naming the option.
  void apply(JobOptions& options) const;

 private:
  static constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();
  int64_t interval_ = kUnset;
  std::string mode_;
  std::string dir_;
  int64_t timeout_ = kUnset;
  int64_t minPause_ = kUnset;
  int64_t maxConcurrent_ = kUnset;
  int64_t tolerable_ = kUnset;
  int64_t retained_ = kUnset;
  bool retainOnCancellation_ = false;
  bool unaligned_ = false;
  int64_t alignedTimeout_ = kUnset;
  std::string restartStrategy_;
  std::string restore_;
  std::string fromSavepoint_;
  bool allowNonRestoredState_ = false;
  std::string restoreMode_;
  std::string savepointDir_;
};

}  // namespace weir::cli
