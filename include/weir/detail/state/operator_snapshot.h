// What one operator instance contributes to a checkpoint, and what a restored instance
// starts from. Keyed state is in canonical form (keyed_state_backend.h), operator state
// as serialized list elements (operator_state.h).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weir/detail/state/keyed_state_backend.h"
#include "weir/detail/state/operator_state.h"
#include "weir/savepoint_format_type.h"

namespace weir::detail {

// Names of the states weir itself keeps beside the user's; they start with '_', which
// user state names may use too without clashing, as these are per operator.
inline constexpr const char* kTimersState = "_timers";
inline constexpr const char* kProcessingTimersState = "_processing_timers";
inline constexpr const char* kRollingState = "_rolling";
inline constexpr const char* kSourceSplitsState = "_source_splits";
inline constexpr const char* kAssignedSplitsState = "_assigned_splits";
// The parallelism the source's input was split for: a restore splits it the same way,
// so the split ids it skips are those it handed out (union, one element).
inline constexpr const char* kSplitParallelismState = "_split_parallelism";
// A chain head's records in flight (unaligned checkpoints), one element per input
// channel: the producer's operator id and input side ("id/0") as a string, the edge's
// PartitionerKind as a varint, then the channel's persisted records.
inline constexpr const char* kChannelState = "_channel_state";

// Where the SST files of one RocksDB instance went in earlier checkpoints: its file name
// ("000012.sst") to the path of the copy in the checkpoints' shared/ folder. A later
// incremental checkpoint refers to that copy instead of uploading the file again, as
// long as the copy is still in use (CheckpointCoordinator's SharedFiles decides).
// Written by the I/O thread, set by a restore: guarded by its mutex.
class RocksDBUploads {
 public:
  std::optional<std::string> find(const std::string& file) const {
    std::lock_guard lock(mutex_);
    auto it = stored_.find(file);
    if (it == stored_.end()) return std::nullopt;
    return it->second;
  }
  void set(const std::string& file, std::string path) {
    std::lock_guard lock(mutex_);
    stored_[file] = std::move(path);
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::string> stored_;
};

// RocksDB's own checkpoint of one instance (incremental checkpoints). On the task thread
// (the synchronous part) the write buffers are only closed, later writes going to new
// ones; a thread of its own waits for their flush and puts the SST files, hard-linked,
// and RocksDB's other files, copied, into the local folder `folder`, which the destructor
// removes once the files are uploaded.
struct RocksDBCheckpoint {
  std::string folder;
  std::vector<std::string> files;    // names inside `folder`, once taken
  std::vector<std::string> columns;  // the states (column families) it holds
  std::shared_ptr<RocksDBUploads> uploads;
  // Waits for those files and fills `files`; false when RocksDB flushed writes made after
  // the barrier before the files could be linked (a write buffer filled up meanwhile):
  // they do not show the state at the barrier, and `fallback` is written instead. Throws
  // when RocksDB could not flush or link.
  std::function<bool(RocksDBCheckpoint&)> take;
  // Every column's entries as they were at the barrier (a RocksDB snapshot), by state name.
  std::map<std::string, std::unique_ptr<StateSnapshot>> fallback;

  RocksDBCheckpoint() = default;
  RocksDBCheckpoint(const RocksDBCheckpoint&) = delete;
  RocksDBCheckpoint& operator=(const RocksDBCheckpoint&) = delete;
  ~RocksDBCheckpoint();
};

// Taken on the task thread (the synchronous part); read later on another thread.
struct OperatorSnapshot {
  std::map<std::string, std::unique_ptr<StateSnapshot>> keyed;  // by state name
  std::vector<OperatorStateSnapshot> operatorState;
  std::unique_ptr<RocksDBCheckpoint> rocksdb;  // incremental: the states kept in RocksDB
  // The schema of each keyed state (KeyedStateBackendBase::stateSchemas), by name.
  std::map<std::string, TypeSchema> keyedSchemas;
  // Set by the task before the operator snapshots, for a savepoint: in the CANONICAL
  // format a RocksDB store gives every entry (`keyed`), never its own files; in the
  // NATIVE format its own files (`rocksdb`), also when its checkpoints are not
  // incremental.
  std::optional<SavepointFormatType> savepoint;
};

// One RocksDB instance's files in a checkpoint, to restore from.
struct RestoredRocksDB {
  KeyGroupRange keyGroups;  // of the instance that took it
  struct File {
    std::string name;     // RocksDB's name for it
    std::string path;     // where the checkpoint keeps it
    bool shared = false;  // in shared/, where later checkpoints may refer to it
  };
  std::vector<File> files;
};

using NamedStateEntryVisitor = std::function<void(const std::string& state, const StateEntry&)>;

// The keyed part of one checkpoint state file, left in the file until it is taken: a
// checkpoint's state may be larger than memory, so a restore streams it. The checkpoint
// module reads the file (checkpoint_storage.cc); it was verified before.
class KeyedStateFile {
 public:
  virtual ~KeyedStateFile() = default;
  // Hands the wanted key groups' entries of the states `wanted` names to `visit`.
  // Throws weir::Error (kCheckpoint) naming the file when it does not parse.
  virtual void read(const std::function<bool(const std::string& state)>& wanted,
                    const NamedStateEntryVisitor& visit) = 0;
  // Whether it holds a state that `taken` does not name (true until a first read has
  // seen which states it holds).
  virtual bool holdsStateBesides(const std::set<std::string>& taken) const = 0;
};

// Read from a checkpoint: only the key groups this instance owns.
struct RestoredOperatorState {
  KeyGroupRange keyGroups;  // this instance's
  // Keyed entries in memory, by state name, and those still in their state files.
  std::map<std::string, std::vector<OwnedStateEntry>> keyed;
  std::vector<std::unique_ptr<KeyedStateFile>> keyedFiles;
  // Incremental checkpoints of RocksDB instances whose key groups overlap this one's.
  std::vector<RestoredRocksDB> rocksdb;
  std::vector<OperatorStateSnapshot> operatorState;
  // The schemas the checkpoint recorded for keyed states, by name (none before format 2).
  std::map<std::string, TypeSchema> keyedSchemas;
  // kChannelState elements with the old subtask that held each: this subtask's own, or
  // at another parallelism (`channelStateRescaled`) every old subtask's.
  std::vector<std::pair<int, std::string>> channelState;
  bool channelStateRescaled = false;

  // Whether any keyed state is restored and not taken yet.
  bool hasKeyed() const {
    return !keyed.empty() || !rocksdb.empty() ||
           std::any_of(keyedFiles.begin(), keyedFiles.end(), [&](const auto& f) { return f->holdsStateBesides(taken_); });
  }
  // Takes the keyed entries of `name` out, from memory and from the files (empty when
  // there are none).
  std::vector<OwnedStateEntry> takeKeyed(const std::string& name) {
    std::vector<OwnedStateEntry> entries;
    if (auto it = keyed.find(name); it != keyed.end()) {
      entries = std::move(it->second);
      keyed.erase(it);
    }
    if (!taken_.insert(name).second) return entries;
    for (auto& file : keyedFiles)
      file->read([&](const std::string& state) { return state == name; },
                 [&](const std::string&, const StateEntry& e) {
                   entries.push_back({e.keyGroup, std::string(e.key), std::string(e.value)});
                 });
    return entries;
  }
  // Calls `visit` with every entry of the keyed states not taken yet, streamed from the
  // files, and takes them all.
  void takeAllKeyed(const NamedStateEntryVisitor& visit) {
    for (const auto& [name, entries] : keyed)
      for (const auto& e : entries) visit(name, StateEntry{e.keyGroup, e.key, e.value});
    keyed.clear();
    for (auto& file : keyedFiles) file->read([&](const std::string& state) { return !taken_.contains(state); }, visit);
    keyedFiles.clear();
  }
  // The elements of operator state `name`, or none.
  const std::vector<std::string>* operatorList(const std::string& name) const {
    for (const auto& s : operatorState)
      if (s.name == name) return &s.elements;
    return nullptr;
  }

 private:
  std::set<std::string> taken_;  // states takeKeyed took from the files
};

}  // namespace weir::detail
