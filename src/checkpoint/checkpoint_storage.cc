#include "checkpoint/checkpoint_storage.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "checkpoint/completed_checkpoint_store.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/error.h"
#include "weir/serializer.h"

namespace weir::checkpoint {

using namespace weir::detail;

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kStateMagic = "WEIRSTAT";
constexpr std::string_view kMetadataMagic = "WEIR-CHECKPOINT";
// 2: the schemas of the keyed states follow the operator state (1 had none).
// 3: then those of the operator states that have one.
constexpr uint64_t kStateFormatVersion = 3;

Error ioError(const std::string& what, const std::string& path, std::error_code ec) {
  return Error(ErrorCode::kIo, "checkpoint: cannot " + what + " '" + path + "': " + ec.message());
}
Error corrupt(const std::string& path, const std::string& why) {
  return Error(ErrorCode::kCheckpoint, "checkpoint file '" + path + "' " + why);
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void fsyncDirectory(core::FileSystem& fileSystem, const std::string& dir) {
  if (auto ec = fileSystem.syncDirectory(dir)) throw ioError("sync folder", dir, ec);
}

// Streams bytes to a temporary file, checksumming them; commit() makes the file appear
// under its name whole, or not at all.
class AtomicFileWriter {
 public:
  AtomicFileWriter(core::FileSystem& fileSystem, std::string path)
      : fileSystem_(fileSystem), path_(std::move(path)), temp_(path_ + ".inprogress") {
    std::error_code ec;
    file_ = fileSystem_.openForWrite(temp_, core::FileSystem::WriteMode::kTruncate, ec);
    if (!file_) throw ioError("create", temp_, ec);
    XXH3_64bits_reset(&hash_);
  }
  ~AtomicFileWriter() {
    file_.reset();
    if (!committed_) fileSystem_.remove(temp_);
  }

  DataOutput& out() { return out_; }
  // Writes out what out() holds once it is large.
  void maybeFlush() {
    if (out_.size() >= (1u << 20)) flush();
  }
  void commit() {
    flush();
    if (auto ec = file_->sync()) throw ioError("sync", temp_, ec);
    auto ec = file_->close();
    file_.reset();
    if (ec) throw ioError("close", temp_, ec);
    if (auto ec = fileSystem_.rename(temp_, path_)) throw ioError("rename", temp_, ec);
    committed_ = true;
    fsyncDirectory(fileSystem_, fs::path(path_).parent_path().string());
  }
  uint64_t size() const { return size_; }
  uint64_t checksum() { return XXH3_64bits_digest(&hash_); }

 private:
  void flush() {
    std::string_view data = out_.data();
    XXH3_64bits_update(&hash_, data.data(), data.size());
    if (auto ec = file_->append(data)) throw ioError("write", temp_, ec);
    size_ += data.size();
    out_.clear();
  }

  core::FileSystem& fileSystem_;
  std::string path_;
  std::string temp_;
  std::unique_ptr<core::WritableFile> file_;
  bool committed_ = false;
  uint64_t size_ = 0;
  DataOutput out_;
  XXH3_state_t hash_;
};

// Size and XXH3-64 of a file, read in chunks, reading no more than `limit` + 1 bytes
// (a file that grew is seen as larger than `limit` without reading all of it).
std::pair<uint64_t, uint64_t> sizeAndChecksum(core::FileSystem& fileSystem, const std::string& path,
                                              uint64_t limit) {
  std::error_code ec;
  auto file = fileSystem.openForRead(path, ec);
  if (!file) throw Error(ErrorCode::kCheckpoint, "checkpoint file '" + path + "' is missing: " + ec.message());
  XXH3_state_t hash;
  XXH3_64bits_reset(&hash);
  std::vector<char> buffer(1 << 20);
  uint64_t size = 0;
  while (size <= limit) {
    size_t n = 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), limit + 1 - size));
    if ((ec = file->read(size, want, buffer.data(), n)))
      throw Error(ErrorCode::kCheckpoint, "checkpoint file '" + path + "' cannot be read: " + ec.message());
    if (n == 0) break;
    XXH3_64bits_update(&hash, buffer.data(), n);
    size += n;
  }
  return {size, XXH3_64bits_digest(&hash)};
}

// Copies `from` to `to` (atomically, like every checkpoint file); returns its size and
// checksum.
SharedFiles::File copyFile(core::FileSystem& fileSystem, const std::string& from, const std::string& to) {
  std::error_code ec;
  auto in = fileSystem.openForRead(from, ec);
  if (!in) throw ioError("open", from, ec);
  AtomicFileWriter file(fileSystem, to);
  std::vector<char> buffer(1 << 20);
  for (uint64_t offset = 0;;) {
    size_t n = 0;
    if ((ec = in->read(offset, buffer.size(), buffer.data(), n))) throw ioError("read", from, ec);
    if (n == 0) break;
    offset += n;
    file.out().writeRaw(buffer.data(), n);
    file.maybeFlush();
  }
  file.commit();
  return {file.size(), file.checksum()};
}

// A name no other upload picks: 64 random bits.
std::string uniquePrefix() {
  static std::mutex mutex;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mutex);
  return hex(rng());
}

// Stores an incremental RocksDB checkpoint's files: an SST file that an earlier
// checkpoint stored and that is still in use is referred to, any other is copied to
// shared/; RocksDB's other files are copied beside the state file.
void uploadRocksDB(const CheckpointTarget& target, const RocksDBCheckpoint& checkpoint, StateFileInfo& info) {
  for (const auto& name : checkpoint.files) {
    const std::string from = (fs::path(checkpoint.folder) / name).string();
    RocksDBFileInfo f;
    f.name = name;
    f.shared = isSstFile(name) && !target.kind.savepoint;  // a savepoint holds its own
    if (f.shared) {
      auto stored = checkpoint.uploads->find(name);
      auto known = stored ? target.shared->retain(target.checkpointId, *stored) : std::nullopt;
      if (known) {
        f.stored = fs::path(*stored).filename().string();
        f.size = known->size;
        f.checksum = known->checksum;
        info.rocksdb.push_back(std::move(f));
        continue;
      }
      // Its name in the job folder is made durable with _metadata (writeMetadata).
      if (auto ec = target.fileSystem->createDirectories(target.sharedFolder))
        throw ioError("create folder", target.sharedFolder, ec);
      f.stored = uniquePrefix() + "-" + name;
      const std::string path = (fs::path(target.sharedFolder) / f.stored).string();
      SharedFiles::File file;
      try {
        file = copyFile(*target.fileSystem, from, path);
      } catch (...) {  // it may be there, renamed, when syncing its folder failed
        target.fileSystem->remove(path);
        throw;
      }
      target.shared->add(target.checkpointId, path, file);
      checkpoint.uploads->set(name, path);
      f.size = file.size;
      f.checksum = file.checksum;
    } else {
      f.stored = info.file + "-" + name;
      SharedFiles::File file = copyFile(*target.fileSystem, from, (fs::path(target.folder) / f.stored).string());
      f.size = file.size;
      f.checksum = file.checksum;
    }
    info.uploadedBytes += f.size;
    info.rocksdb.push_back(std::move(f));
  }
}

}  // namespace

std::optional<SharedFiles::File> SharedFiles::retain(int64_t id, const std::string& path) {
  std::lock_guard lock(mutex_);
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  if (it->second.users.insert(id).second) uses_[id].push_back(path);
  return it->second.file;
}

void SharedFiles::add(int64_t id, const std::string& path, File file) {
  std::lock_guard lock(mutex_);
  auto& entry = files_[path];
  entry.file = file;
  if (entry.users.insert(id).second) uses_[id].push_back(path);
}

void SharedFiles::release(int64_t id) {
  std::lock_guard lock(mutex_);
  auto uses = uses_.find(id);
  if (uses == uses_.end()) return;
  for (const auto& path : uses->second) {
    auto it = files_.find(path);
    it->second.users.erase(id);
    if (!it->second.users.empty()) continue;
    files_.erase(it);
    fileSystem_->remove(path);
  }
  uses_.erase(uses);
}

std::vector<std::string> SharedFiles::paths() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [path, entry] : files_) out.push_back(path);
  return out;
}

std::string rocksDBFilePath(const std::string& dir, const RocksDBFileInfo& f) {
  fs::path folder(dir);
  return (f.shared ? folder.parent_path() / "shared" / f.stored : folder / f.stored).string();
}

void writeStateFile(const CheckpointTarget& target, OperatorSnapshot& snapshot, StateFileInfo& info) {
  if (snapshot.rocksdb && snapshot.rocksdb->take && !snapshot.rocksdb->take(*snapshot.rocksdb)) {
    // RocksDB's files went past the barrier: this checkpoint stores every entry instead.
    snapshot.keyed.merge(snapshot.rocksdb->fallback);
    snapshot.rocksdb.reset();
  }
  if (snapshot.rocksdb) snapshot.rocksdb->fallback.clear();  // its RocksDB snapshot goes at once
  AtomicFileWriter file(*target.fileSystem, (fs::path(target.folder) / info.file).string());
  DataOutput& out = file.out();
  out.writeRaw(kStateMagic.data(), kStateMagic.size());
  out.writeVarint(kStateFormatVersion);
  out.writeVarint(snapshot.operatorState.size());
  info.operatorStates.clear();
  for (const auto& state : snapshot.operatorState) {
    info.operatorStates.push_back(state.name);
    out.writeString(state.name);
    out.write(static_cast<uint8_t>(state.mode));
    out.writeVarint(state.elements.size());
    for (const auto& e : state.elements) {
      out.writeString(e);
      file.maybeFlush();
    }
  }
  out.writeVarint(snapshot.keyedSchemas.size());
  for (const auto& [name, schema] : snapshot.keyedSchemas) {
    out.writeString(name);
    schema.write(out);
  }
  out.writeVarint(std::count_if(snapshot.operatorState.begin(), snapshot.operatorState.end(),
                                [](const auto& state) { return state.schema.has_value(); }));
  for (const auto& state : snapshot.operatorState) {
    if (!state.schema) continue;
    out.writeString(state.name);
    state.schema->write(out);
  }
  info.keyedStates.clear();
  for (auto& [name, state] : snapshot.keyed) {
    info.keyedStates.push_back(name);
    out.write(uint8_t{1});
    out.writeString(name);
    state->readEntries(info.keyGroups, [&](const StateEntry& e) {
      out.writeVarint(static_cast<uint64_t>(e.keyGroup) + 1);
      out.writeString(e.key);
      out.writeString(e.value);
      file.maybeFlush();
    });
    out.writeVarint(0);
  }
  out.write(uint8_t{0});
  file.commit();
  info.size = file.size();
  info.checksum = file.checksum();
  info.rocksdb.clear();
  info.uploadedBytes = 0;
  if (snapshot.rocksdb) {
    for (const auto& column : snapshot.rocksdb->columns) info.keyedStates.push_back(column);
    uploadRocksDB(target, *snapshot.rocksdb, info);
  }
}

namespace {

// The first `size` bytes of a file (all of it if shorter).
std::string readPrefix(core::FileSystem& fileSystem, const std::string& path, size_t size) {
  std::string bytes;
  if (auto ec = fileSystem.readRange(path, 0, size, bytes))
    throw Error(ErrorCode::kCheckpoint, "checkpoint file '" + path + "' is missing or unreadable: " + ec.message());
  return bytes;
}

// Parses the head of a state file, its operator state into `operatorState` and the
// schemas of its keyed states into `keyedSchemas`; returns where its keyed states begin.
// Throws SerializationError on bytes that end early.
uint64_t parseStateFileHead(std::string_view bytes, const std::string& path,
                            std::vector<OperatorStateSnapshot>& operatorState,
                            std::map<std::string, TypeSchema>& keyedSchemas) {
  DataInput in(bytes);
  std::string magic(kStateMagic.size(), '\0');
  in.readRaw(magic.data(), magic.size(), "magic number");
  if (magic != kStateMagic) throw corrupt(path, "is not a weir state file");
  uint64_t version = in.readVarint("format version");
  if (version < 1 || version > kStateFormatVersion)
    throw corrupt(path, "has format version " + std::to_string(version) + "; this weir reads versions 1 to " +
                            std::to_string(kStateFormatVersion));
  std::vector<OperatorStateSnapshot> lists(in.readLength("operator state count"));
  for (auto& s : lists) {
    s.name = in.readString();
    s.mode = static_cast<OperatorStateMode>(in.read<uint8_t>());
    size_t n = in.readLength("element count");
    for (size_t k = 0; k < n; ++k) s.elements.push_back(in.readString());
  }
  std::map<std::string, TypeSchema> schemas;
  if (version >= 2) {
    for (size_t n = in.readLength("schema count"); n > 0; --n) {
      std::string name = in.readString();
      schemas[name] = TypeSchema::read(in);
    }
  }
  if (version >= 3) {
    for (size_t n = in.readLength("operator state schema count"); n > 0; --n) {
      std::string name = in.readString();
      TypeSchema schema = TypeSchema::read(in);
      for (auto& s : lists)
        if (s.name == name) s.schema = schema;
    }
  }
  for (auto& s : lists) operatorState.push_back(std::move(s));
  keyedSchemas.merge(schemas);
  return bytes.size() - in.remaining();
}

// Reads a state file front to back through a buffer of a few MB, so a file larger than
// memory can be restored.
class StateFileReader {
 public:
  StateFileReader(core::FileSystem& fileSystem, std::string path, uint64_t offset)
      : path_(std::move(path)), position_(offset) {
    std::error_code ec;
    file_ = fileSystem.openForRead(path_, ec);
    if (!file_) throw Error(ErrorCode::kCheckpoint, "checkpoint file '" + path_ + "' is missing: " + ec.message());
  }
  StateFileReader(const StateFileReader&) = delete;
  StateFileReader& operator=(const StateFileReader&) = delete;

  uint64_t position() const { return position_; }
  bool atEnd() {
    fill(1);
    return unread() == 0;
  }
  // Parses the next item with `parse(DataInput&)` over the unread bytes; a parse that
  // runs out of bytes is tried again with more. string_views it returns point into the
  // buffer until the next call.
  template <class Parse>
  auto next(Parse parse) {
    for (size_t want = 1;;) {
      fill(want);
      DataInput in(std::string_view(buffer_).substr(start_));
      try {
        auto result = parse(in);
        size_t used = unread() - in.remaining();
        start_ += used;
        position_ += used;
        return result;
      } catch (const SerializationError& e) {
        // More bytes, until the rest of the file is buffered: an entry may be large. (A
        // length beyond the file's end, which a verified file cannot have, buffers the
        // rest of the file before it is reported.)
        if (ended_) throw corrupt(path_, std::string("is corrupt: ") + e.what());
        want = std::max<size_t>(unread() * 2, kChunk);
      }
    }
  }

 private:
  static constexpr size_t kChunk = 4u << 20;
  size_t unread() const { return buffer_.size() - start_; }
  // Buffers at least `want` unread bytes, unless the file ends first.
  void fill(size_t want) {
    if (unread() >= want || ended_) return;
    buffer_.erase(0, start_);
    start_ = 0;
    size_t have = buffer_.size();
    buffer_.resize(std::max(want, kChunk));
    size_t got = 0;
    if (auto ec = file_->read(position_ + have, buffer_.size() - have, buffer_.data() + have, got))
      throw Error(ErrorCode::kCheckpoint, "cannot read checkpoint file '" + path_ + "': " + ec.message());
    have += got;
    if (have < buffer_.size()) ended_ = true;  // read() returns less only where the file ends
    buffer_.resize(have);
  }

  std::string path_;
  std::unique_ptr<core::ReadableFile> file_;
  uint64_t position_;  // of the first unread byte
  std::string buffer_;
  size_t start_ = 0;  // the first unread byte in buffer_
  bool ended_ = false;
};

// Reads one state's entries (a section of the keyed part) from `reader`, up to the
// section's end, handing those in `range` to `visit`.
void readKeyedSection(StateFileReader& reader, KeyGroupRange range, const StateEntryVisitor& visit) {
  for (;;) {
    StateEntry e{};
    uint64_t group = reader.next([&](DataInput& in) {
      uint64_t g = in.readVarint("key group");
      if (g != 0) {
        e.key = in.readStringView();
        e.value = in.readStringView();
      }
      return g;
    });
    if (group == 0) return;
    e.keyGroup = static_cast<int>(group - 1);
    if (range.contains(e.keyGroup)) visit(e);
  }
}

// The keyed part of a state file. The first reading passes over all of it and notes
// where each state's entries are; later ones read only the wanted states' sections. (An
// operator that takes its timers by name first thus reads the file about twice.)
class StateFileKeyedStates final : public KeyedStateFile {
 public:
  StateFileKeyedStates(std::shared_ptr<core::FileSystem> fileSystem, std::string path, uint64_t offset,
                       KeyGroupRange keyGroups)
      : fileSystem_(std::move(fileSystem)), path_(std::move(path)), offset_(offset), keyGroups_(keyGroups) {}

  void read(const std::function<bool(const std::string&)>& wanted, const NamedStateEntryVisitor& visit) override {
    if (indexed_) {
      for (const auto& section : sections_) {
        if (!wanted(section.state)) continue;
        StateFileReader reader(*fileSystem_, path_, section.begin);
        readKeyedSection(reader, keyGroups_, [&](const StateEntry& e) { visit(section.state, e); });
      }
      return;
    }
    sections_.clear();
    StateFileReader reader(*fileSystem_, path_, offset_);
    const StateEntryVisitor skip = [](const StateEntry&) {};
    while (reader.next([](DataInput& in) { return in.read<uint8_t>(); }) == 1) {
      std::string state = reader.next([](DataInput& in) { return in.readString(); });
      uint64_t begin = reader.position();
      if (wanted(state)) readKeyedSection(reader, keyGroups_, [&](const StateEntry& e) { visit(state, e); });
      else readKeyedSection(reader, KeyGroupRange{}, skip);
      sections_.push_back({std::move(state), begin});
    }
    if (!reader.atEnd()) throw corrupt(path_, "has stray bytes after its last state");
    indexed_ = true;
  }
  bool holdsStateBesides(const std::set<std::string>& taken) const override {
    return !indexed_ || std::any_of(sections_.begin(), sections_.end(),
                                    [&](const Section& s) { return !taken.contains(s.state); });
  }

 private:
  struct Section {
    std::string state;
    uint64_t begin;  // its first entry
  };
  std::shared_ptr<core::FileSystem> fileSystem_;
  std::string path_;
  uint64_t offset_;  // where the keyed states begin
  KeyGroupRange keyGroups_;  // the entries wanted from it
  std::vector<Section> sections_;
  bool indexed_ = false;
};

}  // namespace

void readStateFile(const std::string& dir, const StateFileInfo& info, KeyGroupRange keyGroups,
                   RestoredOperatorState& out, std::vector<OperatorStateSnapshot>& operatorState,
                   std::shared_ptr<core::FileSystem> fileSystem) {
  const std::string path = (fs::path(dir) / info.file).string();
  const bool keyed = keyGroups.size() > 0 && keyGroups.start <= info.keyGroups.end &&
                     info.keyGroups.start <= keyGroups.end;
  if (keyed && !info.rocksdb.empty()) {
    RestoredRocksDB& db = out.rocksdb.emplace_back();
    db.keyGroups = info.keyGroups;
    for (const auto& f : info.rocksdb) db.files.push_back({f.name, rocksDBFilePath(dir, f), f.shared});
  }
  // The operator state at the file's start is read from a prefix that grows until it
  // holds it; the keyed states stay in the file until the operator takes them.
  try {
    for (size_t size = 64 * 1024;; size *= 4) {
      std::string bytes = readPrefix(*fileSystem, path, std::min<uint64_t>(size, info.size));
      try {
        uint64_t offset = parseStateFileHead(bytes, path, operatorState, out.keyedSchemas);
        if (keyed)
          out.keyedFiles.push_back(std::make_unique<StateFileKeyedStates>(fileSystem, path, offset, keyGroups));
        return;
      } catch (const SerializationError&) {
        if (bytes.size() >= info.size) throw;
      }
    }
  } catch (const SerializationError& e) {
    throw corrupt(path, std::string("is corrupt: ") + e.what());
  }
}

namespace {

// One state file's entry of _metadata.
nlohmann::json fileJson(const StateFileInfo& f) {
  nlohmann::json json = {{"operatorId", f.operatorId},
                         {"operatorName", f.operatorName},
                         {"subtask", f.subtask},
                         {"parallelism", f.parallelism},
                         {"maxParallelism", f.maxParallelism},
                         {"keyGroups", {f.keyGroups.start, f.keyGroups.end}},
                         {"file", f.file},
                         {"size", f.size},
                         {"checksum", hex(f.checksum)},
                         {"keyedStates", f.keyedStates},
                         {"operatorStates", f.operatorStates}};
  if (f.rocksdb.empty()) return json;
  nlohmann::json rocksdb = nlohmann::json::array();
  for (const auto& r : f.rocksdb)
    rocksdb.push_back({{"name", r.name}, {"stored", r.stored}, {"shared", r.shared}, {"size", r.size},
                       {"checksum", hex(r.checksum)}});
  json["rocksdb"] = std::move(rocksdb);
  return json;
}

// The entry `f` of the metadata file `file`; throws nlohmann's and std::stoull's
// exceptions, or weir::Error naming `file` for a file outside the snapshot's folder.
StateFileInfo fileFromJson(const nlohmann::json& f, const std::string& file) {
  StateFileInfo info;
  info.operatorId = f.at("operatorId").get<std::string>();
  info.operatorName = f.at("operatorName").get<std::string>();
  info.subtask = f.at("subtask").get<int>();
  info.parallelism = f.at("parallelism").get<int>();
  info.maxParallelism = f.value("maxParallelism", 0);  // absent in version 3
  info.keyGroups = KeyGroupRange{f.at("keyGroups").at(0).get<int>(), f.at("keyGroups").at(1).get<int>()};
  info.file = f.at("file").get<std::string>();
  info.size = f.at("size").get<uint64_t>();
  info.checksum = std::stoull(f.at("checksum").get<std::string>(), nullptr, 16);
  info.keyedStates = f.at("keyedStates").get<std::vector<std::string>>();
  info.operatorStates = f.at("operatorStates").get<std::vector<std::string>>();
  if (info.file.find('/') != std::string::npos) throw corrupt(file, "names a state file outside its folder");
  if (!f.contains("rocksdb")) return info;
  for (const auto& r : f.at("rocksdb")) {
    RocksDBFileInfo rf;
    rf.name = r.at("name").get<std::string>();
    rf.stored = r.at("stored").get<std::string>();
    rf.shared = r.at("shared").get<bool>();
    rf.size = r.at("size").get<uint64_t>();
    rf.checksum = std::stoull(r.at("checksum").get<std::string>(), nullptr, 16);
    if (rf.stored.find('/') != std::string::npos || rf.name.find('/') != std::string::npos || rf.stored.empty() ||
        rf.name.empty() || rf.stored == ".." || rf.name == "..")
      throw corrupt(file, "names a RocksDB file outside its folder");
    info.rocksdb.push_back(std::move(rf));
  }
  return info;
}

}  // namespace

std::string encodeStateFileInfo(const StateFileInfo& info) { return fileJson(info).dump(); }

StateFileInfo decodeStateFileInfo(const std::string& text, const std::string& file) {
  try {
    return fileFromJson(nlohmann::json::parse(text), file);
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(file, std::string("would hold an entry that does not parse: ") + e.what());
  } catch (const std::invalid_argument&) {
    throw corrupt(file, "would hold a checksum that is not hexadecimal");
  }
}

void writeMetadata(const std::string& dir, const CheckpointMetadata& m, core::FileSystem& fileSystem) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : m.files) {
    files.push_back(fileJson(f));
    if (f.maxParallelism == 0) files.back()["maxParallelism"] = m.maxParallelism;  // the job's
  }
  nlohmann::json doc = {{"formatVersion", CheckpointMetadata::kFormatVersion},
                        {"checkpointId", m.checkpointId},
                        {"jobId", m.jobId},
                        {"timestamp", m.timestampMillis},
                        {"maxParallelism", m.maxParallelism},
                        {"files", files}};
  if (m.isSavepoint()) doc["savepoint"] = {{"formatType", m.savepointFormat}, {"stateBackend", m.stateBackend}};
  std::string body = doc.dump();
  // The job folder names chk-<n> and shared/: both must survive a crash that _metadata
  // survives.
  fsyncDirectory(fileSystem, fs::path(dir).parent_path().string());
  writeFileAtomically(fileSystem, (fs::path(dir) / "_metadata").string(),
                      std::string(kMetadataMagic) + "\n" + body + "\nchecksum " +
                          checksumHex(body) + "\n");
}

std::error_code removeCheckpointFolder(core::FileSystem& fileSystem, const std::string& folder) {
  std::error_code ec = fileSystem.remove((fs::path(folder) / "_metadata").string());
  if (ec && ec != std::errc::no_such_file_or_directory) return ec;  // the snapshot stays whole
  if (!ec) {
    if (auto synced = fileSystem.syncDirectory(folder)) return synced;
  }
  return fileSystem.removeAll(folder);
}

std::string checksumHex(std::string_view bytes) { return hex(XXH3_64bits(bytes.data(), bytes.size())); }

void writeFileAtomically(core::FileSystem& fileSystem, const std::string& path, std::string_view bytes) {
  AtomicFileWriter file(fileSystem, path);
  file.out().writeRaw(bytes.data(), bytes.size());
  file.commit();
}

std::string normalPath(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::path(path).lexically_normal().string() : p.string();
}

std::string checkpointFolder(const std::string& path) {
  fs::path p = normalPath(path);
  if (p.filename().empty()) p = p.parent_path();  // a trailing '/'
  if (p.filename() == "_metadata") return p.parent_path().string();
  return p.string();
}

CheckpointMetadata readMetadata(const std::string& path, core::FileSystem& fileSystem) {
  const std::string file = (fs::path(checkpointFolder(path)) / "_metadata").string();
  uint64_t size = 0;
  auto ec = fileSystem.fileSize(file, size);
  if (ec == std::errc::no_such_file_or_directory)
    throw Error(ErrorCode::kCheckpoint, "no checkpoint at '" + path + "': '" + file + "' is missing");
  std::string text;
  if (!ec && size > kMaxMetadataBytes) ec = std::make_error_code(std::errc::file_too_large);
  if (!ec) ec = fileSystem.readFile(file, text, kMaxMetadataBytes);
  if (ec == std::errc::file_too_large)
    throw corrupt(file, "holds more than " + std::to_string(kMaxMetadataBytes >> 20) +
                            " MiB; no weir checkpoint's metadata is that large");
  if (ec) throw Error(ErrorCode::kCheckpoint, "checkpoint file '" + file + "' is unreadable: " + ec.message());
  auto first = text.find('\n');
  auto last = text.rfind("\nchecksum ");
  if (first == std::string::npos || text.substr(0, first) != kMetadataMagic)
    throw corrupt(file, "is not a weir checkpoint metadata file (bad magic number)");
  if (last == std::string::npos || last < first || text.back() != '\n')
    throw corrupt(file, "is truncated (no checksum line)");
  std::string body = text.substr(first + 1, last - first - 1);
  std::string stored = text.substr(last + 10, text.size() - last - 11);
  if (stored != checksumHex(body))
    throw corrupt(file, "is corrupt (its checksum does not match)");
  CheckpointMetadata m;
  try {
    auto doc = nlohmann::json::parse(body);
    int version = doc.at("formatVersion").get<int>();
    if (version < CheckpointMetadata::kOldestFormatVersion || version > CheckpointMetadata::kFormatVersion)
      throw corrupt(file, "has format version " + std::to_string(version) + "; this weir reads versions " +
                              std::to_string(CheckpointMetadata::kOldestFormatVersion) + " to " +
                              std::to_string(CheckpointMetadata::kFormatVersion));
    m.checkpointId = doc.at("checkpointId").get<int64_t>();
    m.jobId = doc.at("jobId").get<std::string>();
    m.timestampMillis = doc.at("timestamp").get<int64_t>();
    m.maxParallelism = doc.at("maxParallelism").get<int>();
    if (doc.contains("savepoint")) {
      m.savepointFormat = doc.at("savepoint").at("formatType").get<std::string>();
      m.stateBackend = doc.at("savepoint").at("stateBackend").get<std::string>();
      if (m.savepointFormat != "CANONICAL" && m.savepointFormat != "NATIVE")
        throw corrupt(file, "names an unknown savepoint format '" + m.savepointFormat + "'");
    }
    for (const auto& f : doc.at("files")) {
      m.files.push_back(fileFromJson(f, file));
      StateFileInfo& info = m.files.back();
      if (info.maxParallelism == 0) info.maxParallelism = m.maxParallelism;  // version 3: the job's
      if (info.maxParallelism < 1 || info.maxParallelism > kUpperBoundMaxParallelism)
        throw corrupt(file, "names max parallelism " + std::to_string(info.maxParallelism) +
                                " for a state file of operator '" + info.operatorId + "'; it must be between 1 and " +
                                std::to_string(kUpperBoundMaxParallelism));
    }
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(file, std::string("does not hold valid metadata: ") + e.what());
  } catch (const std::invalid_argument&) {
    throw corrupt(file, "holds a checksum that is not hexadecimal");
  }
  return m;
}

void verifyCheckpoint(const std::string& dir, const CheckpointMetadata& metadata, core::FileSystem& fileSystem) {
  auto verify = [&](const std::string& path, uint64_t expectedSize, uint64_t expectedChecksum) {
    // The size first, so that a file of the wrong size is not read at all; then no more
    // than the metadata says (the file may grow meanwhile).
    uint64_t size = 0;
    if (auto ec = fileSystem.fileSize(path, size))
      throw Error(ErrorCode::kCheckpoint, "checkpoint file '" + path + "' is " +
                                              (ec == std::errc::no_such_file_or_directory ? "missing" : "unreadable") +
                                              ": " + ec.message());
    uint64_t checksum = 0;
    if (size == expectedSize) std::tie(size, checksum) = sizeAndChecksum(fileSystem, path, expectedSize);
    if (size != expectedSize)
      throw corrupt(path, "has " + std::to_string(size) + " bytes, the checkpoint's metadata says " +
                              std::to_string(expectedSize) + " (truncated or overwritten)");
    if (checksum != expectedChecksum) throw corrupt(path, "is corrupt (its checksum does not match the metadata)");
  };
  for (const auto& f : metadata.files) {
    verify((fs::path(dir) / f.file).string(), f.size, f.checksum);
    for (const auto& r : f.rocksdb) verify(rocksDBFilePath(dir, r), r.size, r.checksum);
  }
}

std::string findLatestCheckpoint(const std::string& checkpointDir) {
  std::error_code ec;
  if (!fs::is_directory(checkpointDir, ec))
    throw Error(ErrorCode::kInvalidArgument, "checkpoint directory '" + checkpointDir + "' does not exist");
  core::FileSystem& disk = *core::FileSystem::local();
  std::string best, unrecorded;
  CompletedCheckpointStore::Entry bestEntry;
  for (const auto& job : fs::directory_iterator(checkpointDir, ec)) {
    if (!job.is_directory()) continue;
    auto completed = CompletedCheckpointStore::read(job.path().string(), disk);
    if (!completed) {
      // No record: a folder of a weir that kept none, or one whose record was removed.
      // Its checkpoints are not guessed at (a damaged newest one would look absent).
      for (const auto& chk : fs::directory_iterator(job.path(), ec))
        if (chk.path().filename().string().rfind("chk-", 0) == 0 &&
            fs::exists(fs::symlink_status(chk.path() / "_metadata", ec)))
          unrecorded = chk.path().string();
      continue;
    }
    for (const auto& e : *completed) {
      if (best.empty() || e.timestampMillis > bestEntry.timestampMillis ||
          (e.timestampMillis == bestEntry.timestampMillis && e.id > bestEntry.id)) {
        best = (job.path() / ("chk-" + std::to_string(e.id))).string();
        bestEntry = e;
      }
    }
  }
  if (best.empty() && !unrecorded.empty())
    throw Error(ErrorCode::kCheckpoint,
                "'" + checkpointDir + "' holds checkpoints (such as '" + unrecorded + "') that no " +
                    std::string(CompletedCheckpointStore::kFileName) +
                    " file records as completed; restore one by its path (--from-checkpoint PATH) or remove them");
  if (best.empty()) return best;
  // The newest completed checkpoint restores, or nothing does: an older one would
  // replay output a sink may have committed past it (FLINK-22502).
  try {
    readMetadata(best, disk);
  } catch (const Error& e) {
    throw Error(ErrorCode::kCheckpoint, "the latest completed checkpoint '" + best + "' cannot be restored: " +
                                            e.what() + "; weir does not fall back to an older one, whose output " +
                                            "a sink may have committed past (restore one by its path, --from-checkpoint PATH, if you must)");
  }
  return best;
}

JobFolderLock::JobFolderLock(const std::string& folder) {
  fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  held_ = fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
}

JobFolderLock::~JobFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

namespace {

bool isJobFolder(const fs::path& folder) {
  std::error_code ec;
  if (fs::is_directory(folder / "shared", ec)) return true;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_directory() && e.path().filename().string().rfind("chk-", 0) == 0) return true;
  return false;
}

// `skipRunning`: a folder a running job holds is reported as such, not an error.
CleanedFolder cleanJobFolder(const fs::path& folder, bool dryRun, bool skipRunning) {
  CleanedFolder out{folder.string(), {}, {}, 0, false};
  JobFolderLock lock(folder.string());
  if (!lock.held()) {
    if (skipRunning) {
      out.running = true;
      return out;
    }
    throw Error(ErrorCode::kCheckpoint, "a running job is writing checkpoints to '" + folder.string() +
                                            "'; clean it once that job has stopped");
  }
  std::set<std::string> used;  // shared files the complete checkpoints list, by path
  std::error_code ec;
  // A folder or file that cannot be looked at stops the cleaning: what it would say
  // decides what is in use.
  auto unreadable = [&](const fs::path& p) {
    return Error(ErrorCode::kCheckpoint, "cannot read '" + p.string() + "': " + ec.message() + "; nothing removed");
  };
  fs::directory_iterator chks(folder, ec);
  if (ec) throw unreadable(folder);
  for (const auto& e : chks) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("chk-", 0) != 0) continue;
    const bool complete = fs::exists(e.path() / "_metadata", ec);
    if (ec) throw unreadable(e.path() / "_metadata");
    if (!complete) {
      out.incomplete.push_back(e.path().string());
      for (const auto& f : fs::recursive_directory_iterator(e.path(), ec))
        if (f.is_regular_file(ec)) out.bytes += f.file_size(ec);
      continue;
    }
    CheckpointMetadata m = readMetadata(e.path().string());  // throws, naming it, when damaged
    for (const auto& file : m.files)
      for (const auto& r : file.rocksdb)
        if (r.shared) used.insert(normalPath(rocksDBFilePath(e.path().string(), r)));
  }
  fs::directory_iterator shared(folder / "shared", ec);
  if (ec && fs::exists(folder / "shared")) throw unreadable(folder / "shared");
  for (const auto& e : shared) {
    if (!e.is_regular_file(ec) || used.contains(normalPath(e.path().string()))) continue;
    out.sharedFiles.push_back(e.path().string());
    out.bytes += e.file_size(ec);
  }
  std::sort(out.sharedFiles.begin(), out.sharedFiles.end());
  std::sort(out.incomplete.begin(), out.incomplete.end());
  if (dryRun) return out;
  for (const auto& f : out.sharedFiles) {
    if (!fs::remove(f, ec) && ec) throw Error(ErrorCode::kIo, "cannot remove '" + f + "': " + ec.message());
  }
  for (const auto& d : out.incomplete) {
    fs::remove_all(d, ec);
    if (ec) throw Error(ErrorCode::kIo, "cannot remove '" + d + "': " + ec.message());
  }
  return out;
}

}  // namespace

std::vector<CleanedFolder> cleanCheckpoints(const std::string& folder, bool dryRun) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw Error(ErrorCode::kInvalidArgument, "checkpoint folder '" + folder + "' does not exist");
  std::vector<CleanedFolder> out;
  if (isJobFolder(folder)) {
    out.push_back(cleanJobFolder(folder, dryRun, false));
    return out;
  }
  std::vector<fs::path> jobs;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_directory() && isJobFolder(e.path())) jobs.push_back(e.path());
  if (jobs.empty())
    throw Error(ErrorCode::kInvalidArgument, "'" + folder + "' holds no checkpoints (no chk-<n> or shared/ folder, " +
                                                 "nor a job folder with them)");
  std::sort(jobs.begin(), jobs.end());
  for (const auto& job : jobs) out.push_back(cleanJobFolder(job, dryRun, true));
  return out;
}

}  // namespace weir::checkpoint
