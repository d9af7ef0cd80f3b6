#include "cli/checkpoint_commands.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "checkpoint/checkpoint_storage.h"
#include "savepoint/savepoint.h"
#include "savepoint/state_reader.h"
#include "state/local_folder.h"
#include "weir/error.h"

namespace weir::cli {

namespace {

Error bad(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

// Whether `path` names a snapshot at all (its _metadata is there, readable or not): a
// failure is then exit code 1 (damaged), else 2 (nothing there).
bool snapshotAt(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(checkpoint::checkpointFolder(path)) / "_metadata", ec);
}

// The schemas a state file's head records: each keyed state's kind, key, namespace and
// value types (a TTL shows as ttl{...}), and each operator state's element type. A file
// that does not read is left to the verification that follows.
void printSchemas(const std::string& folder, const checkpoint::StateFileInfo& file) {
  detail::RestoredOperatorState restored;
  std::vector<detail::OperatorStateSnapshot> lists;
  try {
    checkpoint::readStateFile(folder, file, file.keyGroups, restored, lists);
  } catch (const Error&) {
    return;
  }
  for (const auto& [name, schema] : restored.keyedSchemas)
    std::printf("    state '%s': %s\n", name.c_str(), schema.toString().c_str());
  for (const auto& list : lists)
    if (list.schema)
      std::printf("    operator state '%s': %s of %s\n", list.name.c_str(),
                  list.mode == detail::OperatorStateMode::kUnion ? "union list" : "list",
                  list.schema->toString().c_str());
}

}  // namespace

int inspectCheckpoint(const std::string& path) {
  std::string folder = checkpoint::checkpointFolder(path);
  const bool present = snapshotAt(path);
  checkpoint::CheckpointMetadata m;
  try {
    m = checkpoint::readMetadata(path);
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return present ? 1 : 2;  // damaged, or no checkpoint there at all
  }
  if (m.isSavepoint())
    std::printf("savepoint (checkpoint %lld) of job %s, %s format, taken on the %s state backend\n",
                static_cast<long long>(m.checkpointId), m.jobId.c_str(), m.savepointFormat.c_str(),
                m.stateBackend.c_str());
  else
    std::printf("checkpoint %lld of job %s\n", static_cast<long long>(m.checkpointId), m.jobId.c_str());
  std::printf("taken at %lld ms since the epoch, max parallelism %d, %zu state files\n",
              static_cast<long long>(m.timestampMillis), m.maxParallelism, m.files.size());
  uint64_t total = 0;
  size_t files = 0;
  std::set<std::string> described;  // operators whose schemas were printed (every subtask has the same)
  for (const auto& f : m.files) {
    total += f.size;
    ++files;
    std::string states;
    for (const auto& s : f.keyedStates) states += (states.empty() ? "" : ", ") + s;
    for (const auto& s : f.operatorStates) states += (states.empty() ? "" : ", ") + s + " (operator)";
    std::printf("  %s [%s] subtask %d/%d, key groups %d-%d, %llu bytes: %s\n", f.operatorName.c_str(),
                f.operatorId.c_str(), f.subtask + 1, f.parallelism, f.keyGroups.start, f.keyGroups.end,
                static_cast<unsigned long long>(f.size), states.empty() ? "(no state)" : states.c_str());
    if (described.insert(f.operatorId).second) printSchemas(folder, f);
    if (f.rocksdb.empty()) continue;
    uint64_t bytes = 0, shared = 0;
    for (const auto& r : f.rocksdb) {
      bytes += r.size;
      shared += r.shared ? 1 : 0;
    }
    std::printf("    RocksDB files: %zu, %llu bytes, %llu SST files in shared/\n", f.rocksdb.size(),
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(shared));
    total += bytes;
    files += f.rocksdb.size();
  }
  try {
    checkpoint::verifyCheckpoint(folder, m);
  } catch (const Error& e) {
    std::printf("verification FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("verified: %zu files, %llu bytes, sizes and checksums match\n", files,
              static_cast<unsigned long long>(total));
  return 0;
}

int dumpSavepointState(const std::string& path, const std::string& operatorId, const std::string& state) {
  const bool present = snapshotAt(path);
  try {
    savepoint::dumpKeyedState(path, operatorId, state, std::cout);
    std::cout.flush();
  } catch (const Error& e) {
    std::cout.flush();
    std::fprintf(stderr, "weir: %s\n", e.what());
    // No snapshot there, or no such operator or state: 2; damaged, or not decodable: 1.
    return !present || e.code() == ErrorCode::kState ? 2 : 1;
  }
  return 0;
}

int disposeSavepoint(const std::string& path) {
  const bool present = snapshotAt(path);
  try {
    savepoint::disposeSnapshot(path);
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return present ? 1 : 2;
  }
  std::printf("removed %s\n", checkpoint::checkpointFolder(path).c_str());
  return 0;
}

int cleanCheckpoints(const std::string& path, bool dryRun, const std::string& rocksdbLocalDir) {
  // The RocksDB working folders of runs that died (kill -9): no checkpoint uses them.
  if (!dryRun) {
    for (const auto& folder : state::removeDeadLocalFolders(rocksdbLocalDir))
      std::printf("removed %s (the RocksDB folder of a run that is gone)\n", folder.c_str());
  }
  std::vector<checkpoint::CleanedFolder> cleaned;
  try {
    cleaned = checkpoint::cleanCheckpoints(path, dryRun);
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return e.code() == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  const char* verb = dryRun ? "would remove" : "removed";
  for (const auto& c : cleaned) {
    if (c.running) {
      std::printf("%s: a running job writes checkpoints there; left as it is\n", c.folder.c_str());
      continue;
    }
    for (const auto& f : c.sharedFiles) std::printf("  %s %s\n", verb, f.c_str());
    for (const auto& d : c.incomplete) std::printf("  %s %s (no _metadata: never completed)\n", verb, d.c_str());
    std::printf("%s: %s %zu shared files and %zu unfinished checkpoints, %llu bytes\n", c.folder.c_str(), verb,
                c.sharedFiles.size(), c.incomplete.size(), static_cast<unsigned long long>(c.bytes));
  }
  return 0;
}

void CheckpointOptions::addTo(CLI::App& app) {
  app.add_option("--checkpoint-interval", interval_, "Take a checkpoint every this many milliseconds (default: none)");
  app.add_option("--checkpointing-mode", mode_, "exactly-once (default) or at-least-once");
  app.add_option("--checkpoint-dir", dir_, "Folder that keeps checkpoints (default: a temporary one)");
  app.add_option("--checkpoint-timeout", timeout_, "Discard a checkpoint not complete after this many ms (default 600000)");
  app.add_option("--min-pause", minPause_, "Least ms between a checkpoint's end and the next's start (default 0)");
  app.add_option("--max-concurrent-checkpoints", maxConcurrent_,
                 "Checkpoints in progress at once (default 1; a min pause implies 1)");
  app.add_option("--tolerable-checkpoint-failures", tolerable_,
                 "Failed checkpoints in a row before the job fails (default 0)");
  app.add_option("--retained-checkpoints", retained_, "Completed checkpoints kept (default 1)");
  app.add_flag("--retain-on-cancellation", retainOnCancellation_, "Keep the checkpoints when the job is cancelled");
  app.add_flag("--unaligned", unaligned_, "Unaligned checkpoints: barriers overtake records in flight (exactly-once)");
  app.add_option("--aligned-checkpoint-timeout", alignedTimeout_,
                 "With --unaligned: start aligned, turn unaligned after this many ms (default 0)");
  app.add_option("--restart-strategy", restartStrategy_,
                 "none | fixed-delay:ATTEMPTS:DELAY_MS | exponential-delay:INITIAL_MS:MAX_MS | "
                 "failure-rate:MAX:INTERVAL_MS:DELAY_MS (default with checkpoints: exponential-delay:1000:60000, ending the job after 5 identical failures in a row)");
  app.add_option("--restore", restore_, "latest: resume from the newest checkpoint under --checkpoint-dir");
  app.add_option("-s,--from-savepoint,--from-checkpoint", fromSavepoint_,
                 "Resume from this savepoint or checkpoint (its folder or its _metadata)");
  app.add_flag("-n,--allow-non-restored-state", allowNonRestoredState_,
               "Resuming: leave behind the state of operators the job no longer has (by uid)");
  app.add_option("--restore-mode", restoreMode_,
                 "Resuming: no-claim (default: the snapshot stays yours) or claim (removed once the job's first "
                 "checkpoint completes)");
  app.add_option("--savepoint-dir", savepointDir_, "Where savepoints go when a request names no folder");
}

void CheckpointOptions::apply(JobOptions& options) const {
  auto& c = options.checkpoint;
  auto given = [](int64_t v) { return v != kUnset; };
  bool configures = given(timeout_) || given(minPause_) || given(maxConcurrent_) || given(tolerable_) || given(retained_) ||
                    retainOnCancellation_ || !mode_.empty() || unaligned_;
  if (given(alignedTimeout_) && !unaligned_) throw bad("--aligned-checkpoint-timeout needs --unaligned");
  if (given(interval_)) {
    if (interval_ <= 0) throw bad("--checkpoint-interval must be positive, got " + std::to_string(interval_));
    c.setCheckpointInterval(std::chrono::milliseconds(interval_));
  } else if (configures) {
    throw bad("checkpoint options need --checkpoint-interval");
  }
  if (mode_ == "at-least-once") c.setCheckpointingMode(CheckpointingMode::AT_LEAST_ONCE);
  else if (!mode_.empty() && mode_ != "exactly-once")
    throw bad("--checkpointing-mode must be exactly-once or at-least-once, got '" + mode_ + "'");
  if (given(timeout_)) {
    if (timeout_ <= 0) throw bad("--checkpoint-timeout must be positive, got " + std::to_string(timeout_));
    c.setCheckpointTimeout(std::chrono::milliseconds(timeout_));
  }
  if (given(minPause_)) {
    if (minPause_ < 0) throw bad("--min-pause must not be negative, got " + std::to_string(minPause_));
    c.setMinPauseBetweenCheckpoints(std::chrono::milliseconds(minPause_));
  }
  if (given(maxConcurrent_)) {
    if (maxConcurrent_ < 1 || maxConcurrent_ > 1000)
      throw bad("--max-concurrent-checkpoints must be between 1 and 1000, got " + std::to_string(maxConcurrent_));
    c.setMaxConcurrentCheckpoints(static_cast<int>(maxConcurrent_));
  }
  if (given(tolerable_)) {
    if (tolerable_ < 0 || tolerable_ > std::numeric_limits<int>::max())
      throw bad("--tolerable-checkpoint-failures must be between 0 and 2^31-1, got " + std::to_string(tolerable_));
    c.setTolerableCheckpointFailureNumber(static_cast<int>(tolerable_));
  }
  if (given(retained_)) {
    if (retained_ < 1 || retained_ > 1000000)
      throw bad("--retained-checkpoints must be between 1 and 1000000, got " + std::to_string(retained_));
    c.setNumRetainedCheckpoints(static_cast<int>(retained_));
  }
  if (unaligned_) {
    if (c.getCheckpointingMode() != CheckpointingMode::EXACTLY_ONCE)
      throw bad("--unaligned needs --checkpointing-mode exactly-once");
    c.enableUnalignedCheckpoints();
  }
  if (given(alignedTimeout_)) {
    if (alignedTimeout_ < 0) throw bad("--aligned-checkpoint-timeout must not be negative, got " + std::to_string(alignedTimeout_));
    c.setAlignedCheckpointTimeout(std::chrono::milliseconds(alignedTimeout_));
  }
  if (retainOnCancellation_) c.setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
  if (!dir_.empty()) c.setCheckpointStorage(dir_);
  if (!restartStrategy_.empty()) options.restartStrategy = RestartStrategy::parse(restartStrategy_);

  if (!savepointDir_.empty()) {
    if (!given(interval_)) throw bad("--savepoint-dir needs --checkpoint-interval: savepoints are taken as checkpoints are");
    c.setDefaultSavepointDirectory(savepointDir_);
  }
  if (!restore_.empty() && !fromSavepoint_.empty()) throw bad("use --restore or --from-savepoint (-s), not both");
  RestoreMode mode = RestoreMode::NO_CLAIM;
  if (restoreMode_ == "claim") mode = RestoreMode::CLAIM;
  else if (!restoreMode_.empty() && restoreMode_ != "no-claim")
    throw bad("--restore-mode must be claim or no-claim, got '" + restoreMode_ + "'");
  std::string path = fromSavepoint_;
  if (!restore_.empty()) {
    if (restore_ != "latest")
      throw bad("unknown --restore target '" + restore_ + "'; use --restore latest or --from-savepoint PATH");
    if (dir_.empty()) throw bad("--restore latest needs --checkpoint-dir, where it looks for checkpoints");
    path = checkpoint::findLatestCheckpoint(dir_);
    if (path.empty())
      std::fprintf(stderr, "weir: no checkpoint under '%s' yet; starting from the beginning\n", dir_.c_str());
    else
      std::fprintf(stderr, "weir: resuming from checkpoint '%s'\n", path.c_str());
  }
  if ((allowNonRestoredState_ || !restoreMode_.empty()) && path.empty() && restore_.empty())
    throw bad("--allow-non-restored-state and --restore-mode need a snapshot to resume from (-s PATH)");
  if (!path.empty()) options.restore = SavepointRestoreSettings::forPath(path, allowNonRestoredState_, mode);
}

}  // namespace weir::cli
