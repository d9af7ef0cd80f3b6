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

}  // namespace weir::cli
