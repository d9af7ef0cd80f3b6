#include "weir/file_source.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

#include "weir/error.h"

namespace weir {

namespace fs = std::filesystem;

namespace {

// A file, by its canonical path: the same file however the input spells it.
struct FileSplit final : SourceSplit {
  explicit FileSplit(std::string p) : path(std::move(p)) {}
  std::string splitId() const override { return path; }
  std::string path;
};

// What tells a file's content apart from another's at the same path: a file rewritten
// or replaced since a checkpoint has another inode, size or modification time.
struct FileIdentity {
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtimeNanos = 0;
  bool operator==(const FileIdentity&) const = default;
  std::string text() const {
    return std::to_string(inode) + " " + std::to_string(size) + " " + std::to_string(mtimeNanos);
  }
};

// Opens `path` for reading without blocking: a FIFO without a writer does not hold the
// task (or the job's start) until one comes.
int openForReading(const std::string& path) { return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); }

Error ioError(const std::string& what, const std::string& path, int err) {
  return Error(ErrorCode::kIo, "file source: cannot " + what + " '" + path + "': " + std::strerror(err));
}

bool skipped(const fs::path& p) {
  auto name = p.filename().string();
  return !name.empty() && (name[0] == '.' || name[0] == '_');
}

// Reads lines from the files it is handed, one file at a time, through a large buffer.
class LineReader final : public SourceReader<std::string> {
 public:
  LineReader(SplitEnumerator* enumerator, int subtask, Counter bytesIn, size_t maxLineLength)
      : enumerator_(enumerator), subtask_(subtask), bytesIn_(bytesIn), maxLineLength_(maxLineLength) {
    buffer_.resize(kChunk);
  }
  ~LineReader() override { closeFile(); }

  // A pipe or device with nothing to read yet returns what it has: the task looks at its
  // mailbox (a cancellation, a checkpoint) and polls again soon, instead of blocking in a
  // read that may never return.
  InputStatus pollNext(std::vector<std::string>& out, size_t maxRecords) override {
    size_t produced = 0;
    while (produced < maxRecords) {
      if (fd_ < 0 && !openNext()) return produced > 0 ? InputStatus::MORE_AVAILABLE : InputStatus::END_OF_INPUT;
      char* begin = buffer_.data() + pos_;
      char* end = buffer_.data() + len_;
      auto* nl = static_cast<char*>(std::memchr(begin, '\n', static_cast<size_t>(end - begin)));
      if (nl) {
        emit(out, begin, nl);
        pos_ = static_cast<size_t>(nl - buffer_.data()) + 1;
        ++produced;
        continue;
      }
      // No full line in the buffer: keep the partial line and read more.
      // (+1: a "\r" before the "\n" to come is no part of the line)
      if (partial_.size() + static_cast<size_t>(end - begin) > maxLineLength_ + 1) lineTooLong(lineOffset());
      partial_.append(begin, end);
      pos_ = len_ = 0;
      if (!regular_ && !readable()) return produced > 0 ? InputStatus::MORE_AVAILABLE : InputStatus::NOTHING_AVAILABLE;
      ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
      if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return produced > 0 ? InputStatus::MORE_AVAILABLE : InputStatus::NOTHING_AVAILABLE;
      if (got < 0) throw ioError("read", path_, errno);
      const size_t n = static_cast<size_t>(got);
      fileOffset_ += n;
      bytesIn_.inc(n);
      if (n == 0) {
        if (!partial_.empty()) {
          emit(out, partial_.data(), partial_.data() + partial_.size());
          ++produced;
        }
        closeFile();
      }
      len_ = n;
    }
    return InputStatus::MORE_AVAILABLE;
  }

  void close() override { closeFile(); }

  std::chrono::steady_clock::time_point nextPollTime() const override {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
  }

  // "offset inode size mtime path" of the file being read (the offset of its next line),
  // then those of restored files not begun yet.
  std::vector<std::string> snapshotState(int64_t) override {
    std::vector<std::string> out;
    if (fd_ >= 0) out.push_back(std::to_string(lineOffset()) + " " + identity_.text() + " " + path_);
    for (const auto& r : restored_) out.push_back(std::to_string(r.offset) + " " + r.identity.text() + " " + r.path);
    return out;
  }
  void addSplits(std::vector<std::string> splits) override {
    for (const auto& s : splits) {
      Restored r;
      int consumed = 0;
      unsigned long long inode = 0;
      long long offset = 0, size = 0, mtime = 0;
      if (std::sscanf(s.c_str(), "%lld %llu %lld %lld %n", &offset, &inode, &size, &mtime, &consumed) != 4 ||
          consumed <= 0 || static_cast<size_t>(consumed) >= s.size() || offset < 0)
        throw Error(ErrorCode::kCheckpoint, "file source: bad split state '" + s + "'");
      r.offset = offset;
      r.identity = FileIdentity{inode, size, mtime};
      r.path = s.substr(static_cast<size_t>(consumed));
      restored_.push_back(std::move(r));
    }
  }

 private:
  static constexpr size_t kChunk = 1 << 20;

  // A file a restored checkpoint was reading: where, and what it was then.
  struct Restored {
    int64_t offset = 0;
    FileIdentity identity;
    std::string path;
  };

  // The offset of the line being read in the current file.
  uint64_t lineOffset() const { return fileOffset_ - len_ + pos_ - partial_.size(); }
  [[noreturn]] void lineTooLong(uint64_t offset) const {
    throw Error(ErrorCode::kSerialization, "file source: the line at offset " + std::to_string(offset) + " of '" +
                                               path_ + "' is longer than " + std::to_string(maxLineLength_) +
                                               " bytes, the longest the source reads (FileSource::Builder::setMaxLineLength)");
  }

  void emit(std::vector<std::string>& out, const char* b, const char* e) {
    const uint64_t start = lineOffset();
    if (!partial_.empty() && b != partial_.data()) {
      partial_.append(b, e);
      b = partial_.data();
      e = b + partial_.size();
    }
    if (e > b && e[-1] == '\r') --e;
    if (static_cast<size_t>(e - b) > maxLineLength_) lineTooLong(start);
    out.emplace_back(b, e);
    partial_.clear();
  }

  // A restored file goes on where the checkpoint was, if it is still the file it was
  // then; a file gone or changed since fails the job naming it (docs/api.md).
  bool openNext() {
    long offset = 0;
    std::optional<FileIdentity> expected;
    if (!restored_.empty()) {
      offset = static_cast<long>(restored_.front().offset);
      expected = restored_.front().identity;
      path_ = std::move(restored_.front().path);
      restored_.pop_front();
    } else {
      auto split = enumerator_->nextSplit(subtask_);
      if (!split) return false;
      path_ = static_cast<FileSplit&>(*split).path;
    }
    fd_ = openForReading(path_);
    if (fd_ < 0 && expected && errno == ENOENT)
      throw Error(ErrorCode::kCheckpoint, "file source: '" + path_ + "', which the restored checkpoint was reading at offset " +
                                              std::to_string(offset) + ", is gone; it cannot be resumed");
    if (fd_ < 0) throw ioError("open", path_, errno);
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw ioError("look at", path_, errno);
    regular_ = S_ISREG(st.st_mode);
    identity_ = FileIdentity{static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
                             static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    if (expected && !(*expected == identity_))
      throw Error(ErrorCode::kCheckpoint,
                  "file source: '" + path_ + "' changed since the restored checkpoint read it to offset " +
                      std::to_string(offset) + " (it was " + std::to_string(expected->size) + " bytes, inode " +
                      std::to_string(expected->inode) + "; it is " + std::to_string(identity_.size) + " bytes, inode " +
                      std::to_string(identity_.inode) + ", or modified since); it cannot be resumed");
    if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) != offset) throw ioError("seek in", path_, errno);
    fileOffset_ = static_cast<uint64_t>(offset);
    pos_ = len_ = 0;
    partial_.clear();
    return true;
  }

  void closeFile() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // A pipe or device: whether a read would not block now. A FIFO that no writer has
  // opened yet waits (no event); one whose writers are gone reads its end.
  bool readable() const {
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, 0);
    return n > 0;
  }

  SplitEnumerator* enumerator_;
  int subtask_;
  Counter bytesIn_;
  size_t maxLineLength_;
  int fd_ = -1;
  bool regular_ = true;  // a regular file: reads do not block
  std::string path_;
  FileIdentity identity_;  // of the file being read
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t len_ = 0;
  uint64_t fileOffset_ = 0;  // of the byte after the buffer's last
  std::string partial_;
  std::deque<Restored> restored_;
};

}  // namespace

FileSource FileSource::Builder::build() const {
  if (maxLineLength_ == 0) throw Error(ErrorCode::kInvalidArgument, "file source: the max line length must be positive");
  return FileSource(path_, maxLineLength_);
}

std::unique_ptr<SplitEnumerator> FileSource::createEnumerator(int) const {
  std::error_code ec;
  auto status = fs::status(path_, ec);
  if (ec || !fs::exists(status)) throw ioError("read", path_, ec ? ec.value() : ENOENT);
  std::vector<std::string> files;
  if (fs::is_directory(status)) {
    fs::recursive_directory_iterator it(path_, ec), end;
    if (ec) throw ioError("list", path_, ec.value());
    for (; it != end; it.increment(ec)) {
      if (ec) throw ioError("list", path_, ec.value());
      if (skipped(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path().string());
    }
  } else {
    files.push_back(path_);
  }
  // One spelling of every file: the same file is the same split however the input names
  // it (./in.txt, $PWD/in.txt, a link to it), so a resumed job never reads it again.
  for (auto& f : files) {
    std::string canonical = fs::canonical(f, ec).string();
    if (ec) throw ioError("resolve", f, ec.value());
    f = std::move(canonical);
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::deque<std::unique_ptr<SourceSplit>> splits;
  for (auto& f : files) {
    // Fail before the job starts rather than halfway through it.
    int probe = openForReading(f);
    if (probe < 0) throw ioError("open", f, errno);
    ::close(probe);
    splits.push_back(std::make_unique<FileSplit>(f));
  }
  return std::make_unique<SharedSplitEnumerator>(std::move(splits));
}

std::unique_ptr<SourceReader<std::string>> FileSource::createReader(const SourceReaderContext& context) const {
  return std::make_unique<LineReader>(context.enumerator, context.subtaskIndex,
                                      context.metricGroup.getIOMetricGroup().getNumBytesInCounter(), maxLineLength_);
}

}  // namespace weir
