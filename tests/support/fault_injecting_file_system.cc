#include "support/fault_injecting_file_system.h"

#include <algorithm>
#include <filesystem>

namespace weir::test {

namespace fs = std::filesystem;

namespace {

std::error_code deadError() { return std::make_error_code(std::errc::io_error); }

bool isAtOrUnder(const std::string& path, const std::string& folder) {
  return path == folder || (path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
                            path[folder.size()] == '/');
}

}  // namespace

const char* FaultInjectingFileSystem::name(Op op) {
  switch (op) {
    case Op::kOpenForWrite: return "open for write";
    case Op::kWrite: return "write";
    case Op::kSync: return "sync";
    case Op::kOpenForRead: return "open for read";
    case Op::kRead: return "read";
    case Op::kRename: return "rename";
    case Op::kRemove: return "remove";
    case Op::kCreateDirectories: return "create folder";
    case Op::kSyncDirectory: return "sync folder";
    case Op::kTruncate: return "truncate";
  }
  return "?";
}

// A file open for writing: the disk's, with the books kept and faults injected.
class FaultInjectingFileSystem::Writable final : public core::WritableFile {
 public:
  Writable(FaultInjectingFileSystem& owner, std::unique_ptr<core::WritableFile> file,
           std::shared_ptr<FileState> state, int64_t generation)
      : owner_(owner), file_(std::move(file)), state_(std::move(state)), generation_(generation) {}

  std::error_code append(std::string_view data) override {
    std::lock_guard lock(owner_.mutex_);
    return owner_.observedLocked(Op::kWrite, state_->path, appendLocked(data));
  }
  std::error_code sync() override {
    std::lock_guard lock(owner_.mutex_);
    return owner_.observedLocked(Op::kSync, state_->path, syncLocked());
  }
  std::error_code close() override {
    std::lock_guard lock(owner_.mutex_);
    if (dead()) {
      file_.reset();
      return deadError();
    }
    return file_->close();
  }

 private:
  std::error_code appendLocked(std::string_view data) {
    std::error_code ec;
    if (dead()) return deadError();
    if (owner_.injectLocked(Op::kWrite, state_->path, ec)) return ec;
    std::string_view fits = data;
    if (owner_.spaceLeft_ >= 0 && static_cast<uint64_t>(owner_.spaceLeft_) < data.size()) {
      fits = data.substr(0, static_cast<size_t>(owner_.spaceLeft_));
      ec = std::make_error_code(std::errc::no_space_on_device);
      owner_.failures_.push_back({Op::kWrite, state_->path, ec});
    }
    if (!fits.empty()) {
      if (auto err = file_->append(fits)) return err;
      state_->size += fits.size();
      if (owner_.spaceLeft_ >= 0) owner_.spaceLeft_ -= static_cast<int64_t>(fits.size());
    }
    return ec;
  }
  std::error_code syncLocked() {
    std::error_code ec;
    if (dead()) return deadError();
    if (owner_.injectLocked(Op::kSync, state_->path, ec)) return ec;
    if ((ec = file_->sync())) return ec;
    state_->synced = state_->size;
    return {};
  }
  // Opened before a crash: that process is gone.
  bool dead() const { return owner_.crashed_ || owner_.generation_ != generation_; }

  FaultInjectingFileSystem& owner_;
  std::unique_ptr<core::WritableFile> file_;
  std::shared_ptr<FileState> state_;
  const int64_t generation_;
};

class FaultInjectingFileSystem::Readable final : public core::ReadableFile {
 public:
  Readable(FaultInjectingFileSystem& owner, std::unique_ptr<core::ReadableFile> file, std::string path,
           int64_t generation)
      : owner_(owner), file_(std::move(file)), path_(std::move(path)), generation_(generation) {}

  std::error_code read(uint64_t offset, size_t size, char* out, size_t& got) override {
    std::lock_guard lock(owner_.mutex_);
    got = 0;
    std::error_code ec;
    if (owner_.crashed_ || owner_.generation_ != generation_) ec = deadError();
    else if (!owner_.injectLocked(Op::kRead, path_, ec)) ec = file_->read(offset, size, out, got);
    return owner_.observedLocked(Op::kRead, path_, ec);
  }

 private:
  FaultInjectingFileSystem& owner_;
  std::unique_ptr<core::ReadableFile> file_;
  std::string path_;
  const int64_t generation_;
};

std::string FaultInjectingFileSystem::normal(const std::string& path) {
  std::string p = fs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

void FaultInjectingFileSystem::failNth(Op op, int nth, std::errc error, std::string pathPart) {
  std::lock_guard lock(mutex_);
  rules_.push_back({op, std::move(pathPart), std::max(nth, 1), std::make_error_code(error)});
}

void FaultInjectingFileSystem::failAlways(Op op, std::errc error, std::string pathPart) {
  std::lock_guard lock(mutex_);
  rules_.push_back({op, std::move(pathPart), -1, std::make_error_code(error)});
}

void FaultInjectingFileSystem::setSpaceLeft(int64_t bytes) {
  std::lock_guard lock(mutex_);
  spaceLeft_ = bytes;
}

void FaultInjectingFileSystem::clearFaults() {
  std::lock_guard lock(mutex_);
  rules_.clear();
  spaceLeft_ = -1;
}

bool FaultInjectingFileSystem::injectLocked(Op op, const std::string& path, std::error_code& ec,
                                            const std::string& otherPath) {
  ++calls_[op];
  bool fail = false;
  // Each rule counts the calls it matches, whether or not another one fails the call.
  for (auto it = rules_.begin(); it != rules_.end();) {
    const bool matches = it->op == op && (path.find(it->pathPart) != std::string::npos ||
                                          (!otherPath.empty() && otherPath.find(it->pathPart) != std::string::npos));
    if (!matches) {
      ++it;
      continue;
    }
    const bool fires = it->countdown < 0 || --it->countdown == 0;
    if (fires && !fail) {
      fail = true;
      ec = it->error;
      failures_.push_back({op, path, ec});
    }
    it = it->countdown == 0 ? rules_.erase(it) : it + 1;
  }
  return fail;
}

void FaultInjectingFileSystem::forgetLocked(const std::string& path) {
  std::erase_if(files_, [&](const auto& entry) { return isAtOrUnder(entry.first, path); });
}

std::error_code FaultInjectingFileSystem::observedLocked(Op op, const std::string& path, std::error_code result) {
  if (observer_) observer_(op, path, result);
  return result;
}

std::unique_ptr<core::WritableFile> FaultInjectingFileSystem::openForWrite(const std::string& path, WriteMode mode,
                                                                           std::error_code& ec) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  auto file = openForWriteLocked(p, mode, ec);
  observedLocked(Op::kOpenForWrite, p, ec);
  return file;
}

std::unique_ptr<core::WritableFile> FaultInjectingFileSystem::openForWriteLocked(const std::string& p, WriteMode mode,
                                                                                 std::error_code& ec) {
  if (crashed_) {
    ec = deadError();
    return nullptr;
  }
  if (injectLocked(Op::kOpenForWrite, p, ec)) return nullptr;
  std::error_code exists;
  const bool existed = fs::exists(p, exists);
  uint64_t before = existed ? fs::file_size(p, exists) : 0;
  auto file = disk_->openForWrite(p, mode, ec);
  if (!file) return nullptr;
  if (!existed) names_.push_back({NameChange::Kind::kCreatedFile, fs::path(p).parent_path().string(), p, "", {}});
  auto& state = files_[p];
  if (!state) state = std::make_shared<FileState>(FileState{before, before, p});  // durable until written
  if (mode == WriteMode::kTruncate) state->size = state->synced = 0;  // what it held is gone either way
  return std::make_unique<Writable>(*this, std::move(file), state, generation_);
}

std::unique_ptr<core::ReadableFile> FaultInjectingFileSystem::openForRead(const std::string& path,
                                                                          std::error_code& ec) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  auto file = openForReadLocked(p, ec);
  observedLocked(Op::kOpenForRead, p, ec);
  return file;
}

std::unique_ptr<core::ReadableFile> FaultInjectingFileSystem::openForReadLocked(const std::string& p,
                                                                                std::error_code& ec) {
  if (crashed_) {
    ec = deadError();
    return nullptr;
  }
  if (injectLocked(Op::kOpenForRead, p, ec)) return nullptr;
  auto file = disk_->openForRead(p, ec);
  if (!file) return nullptr;
  return std::make_unique<Readable>(*this, std::move(file), p, generation_);
}

std::error_code FaultInjectingFileSystem::rename(const std::string& from, const std::string& to) {
  const std::string f = normal(from), t = normal(to);
  std::lock_guard lock(mutex_);
  return observedLocked(Op::kRename, t, renameLocked(f, t));
}

std::error_code FaultInjectingFileSystem::renameLocked(const std::string& f, const std::string& t) {
  std::error_code ec;
  if (crashed_) return deadError();
  if (injectLocked(Op::kRename, f, ec, t)) return ec;
  // What `t` held comes back if the rename is undone.
  std::optional<std::string> replaced;
  if (fs::is_regular_file(t, ec)) {
    replaced.emplace();
    if ((ec = disk_->readFile(t, *replaced))) return ec;
  }
  if ((ec = disk_->rename(f, t))) return ec;
  names_.push_back({NameChange::Kind::kRenamed, fs::path(t).parent_path().string(), t, f, std::move(replaced)});
  files_.erase(t);
  if (auto node = files_.extract(f)) {
    node.key() = t;
    node.mapped()->path = t;
    files_.insert(std::move(node));
  }
  return {};
}

std::error_code FaultInjectingFileSystem::remove(const std::string& path) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  return observedLocked(Op::kRemove, p, removeLocked(p, false));
}

std::error_code FaultInjectingFileSystem::removeAll(const std::string& path) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  return observedLocked(Op::kRemove, p, removeLocked(p, true));
}

std::error_code FaultInjectingFileSystem::removeLocked(const std::string& p, bool all) {
  std::error_code ec;
  if (crashed_) return deadError();
  if (injectLocked(Op::kRemove, p, ec)) return ec;
  if ((ec = all ? disk_->removeAll(p) : disk_->remove(p))) return ec;
  forgetLocked(p);
  return {};
}

std::error_code FaultInjectingFileSystem::createDirectories(const std::string& path) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  return observedLocked(Op::kCreateDirectories, p, createDirectoriesLocked(p));
}

std::error_code FaultInjectingFileSystem::createDirectoriesLocked(const std::string& p) {
  std::error_code ec;
  if (crashed_) return deadError();
  if (injectLocked(Op::kCreateDirectories, p, ec)) return ec;
  std::vector<std::string> made;  // the folders missing, innermost first
  for (fs::path f = p; !f.empty() && f != f.root_path() && !fs::exists(f, ec); f = f.parent_path())
    made.push_back(f.string());
  if ((ec = disk_->createDirectories(p))) return ec;
  for (auto it = made.rbegin(); it != made.rend(); ++it)
    names_.push_back({NameChange::Kind::kMadeDirectory, fs::path(*it).parent_path().string(), *it, "", {}});
  return {};
}

std::error_code FaultInjectingFileSystem::syncDirectory(const std::string& path) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  return observedLocked(Op::kSyncDirectory, p, syncDirectoryLocked(p));
}

std::error_code FaultInjectingFileSystem::syncDirectoryLocked(const std::string& p) {
  std::error_code ec;
  if (crashed_) return deadError();
  if (injectLocked(Op::kSyncDirectory, p, ec)) return ec;
  if ((ec = disk_->syncDirectory(p))) return ec;
  std::erase_if(names_, [&](const NameChange& c) { return c.dir == p; });
  return {};
}

std::error_code FaultInjectingFileSystem::list(const std::string& path, std::vector<std::string>& names) {
  std::lock_guard lock(mutex_);
  if (crashed_) return deadError();
  return disk_->list(normal(path), names);
}

std::error_code FaultInjectingFileSystem::fileSize(const std::string& path, uint64_t& size) {
  std::lock_guard lock(mutex_);
  if (crashed_) return deadError();
  return disk_->fileSize(normal(path), size);
}

std::error_code FaultInjectingFileSystem::truncate(const std::string& path, uint64_t size) {
  const std::string p = normal(path);
  std::lock_guard lock(mutex_);
  std::error_code ec;
  if (crashed_) ec = deadError();
  else if (!injectLocked(Op::kTruncate, p, ec) && !(ec = disk_->truncate(p, size))) {
    if (auto it = files_.find(p); it != files_.end()) {
      it->second->size = std::min(it->second->size, size);
      it->second->synced = std::min(it->second->synced, size);
    }
  }
  return observedLocked(Op::kTruncate, p, ec);
}

void FaultInjectingFileSystem::crash() {
  std::lock_guard lock(mutex_);
  if (crashed_) return;
  crashed_ = true;
  ++generation_;
  std::error_code ec;
  // Names first, newest first: a rename goes back before the file it renamed vanishes.
  for (auto it = names_.rbegin(); it != names_.rend(); ++it) {
    switch (it->kind) {
      case NameChange::Kind::kMadeDirectory:
        fs::remove_all(it->path, ec);
        forgetLocked(it->path);
        break;
      case NameChange::Kind::kCreatedFile:
        fs::remove(it->path, ec);
        forgetLocked(it->path);
        break;
      case NameChange::Kind::kRenamed: {
        if (!fs::exists(it->path, ec)) break;
        fs::rename(it->path, it->from, ec);
        if (auto node = files_.extract(it->path)) {
          node.key() = it->from;
          node.mapped()->path = it->from;
          files_.insert(std::move(node));
        }
        if (it->replaced) {  // the file the rename replaced is back as it was
          std::error_code open;
          if (auto file = disk_->openForWrite(it->path, WriteMode::kTruncate, open)) {
            file->append(*it->replaced);
            file->close();
          }
        }
        break;
      }
    }
  }
  names_.clear();
  // Then the bytes not synced.
  for (const auto& [path, state] : files_) {
    if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) > state->synced) fs::resize_file(path, state->synced, ec);
  }
  files_.clear();
}

void FaultInjectingFileSystem::restart() {
  std::lock_guard lock(mutex_);
  crashed_ = false;
}

bool FaultInjectingFileSystem::crashed() const {
  std::lock_guard lock(mutex_);
  return crashed_;
}

std::vector<FaultInjectingFileSystem::Failure> FaultInjectingFileSystem::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

void FaultInjectingFileSystem::setObserver(Observer observer) {
  std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

int64_t FaultInjectingFileSystem::calls(Op op) const {
  std::lock_guard lock(mutex_);
  auto it = calls_.find(op);
  return it == calls_.end() ? 0 : it->second;
}

}  // namespace weir::test
