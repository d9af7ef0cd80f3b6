#include "weir/file_source.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weir/detail/connectors/file_record_reader.h"
#include "weir/error.h"

namespace weir::detail {

namespace fs = std::filesystem;

namespace {

// A file, by its canonical path: the same file however the input spells it.
struct FileSplit final : SourceSplit {
  explicit FileSplit(std::string p) : path(std::move(p)) {}
  std::string splitId() const override { return path; }
  std::string path;
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

// The files of `path` not in `known`, by canonical path, in name order; adds them to
// `known` (and their paths as listed to `listed`, so a rescan resolves only new ones).
// Each is opened once, so a file that cannot be read fails here, naming it. A rescan
// (`rescan`) skips what vanishes while it lists (a folder others clean up); the next
// rescan sees what it missed.
std::vector<std::string> listNewFiles(const std::string& path, std::set<std::string>& known,
                                      std::set<std::string>& listed, bool rescan) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw ioError("read", path, ec ? ec.value() : ENOENT);
  std::vector<std::string> files;
  if (fs::is_directory(status)) {
    fs::recursive_directory_iterator it(path, ec), end;
    if (ec) throw ioError("list", path, ec.value());
    for (; it != end; it.increment(ec)) {
      if (ec && rescan && ec.value() == ENOENT) break;
      if (ec) throw ioError("list", path, ec.value());
      if (skipped(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path().string());
    }
  } else {
    files.push_back(path);
  }
  // One spelling of every file: the same file is the same split however the input names
  // it (./in.txt, $PWD/in.txt, a link to it), so a resumed job never reads it again.
  std::vector<std::string> fresh;
  for (auto& f : files) {
    if (listed.contains(f)) continue;
    std::string canonical = fs::canonical(f, ec).string();
    if (ec && rescan && ec.value() == ENOENT) continue;
    if (ec) throw ioError("resolve", f, ec.value());
    int probe = openForReading(canonical);  // fail before reading rather than halfway
    if (probe < 0 && rescan && errno == ENOENT) continue;
    if (probe < 0) throw ioError("open", canonical, errno);
    ::close(probe);
    listed.insert(f);
    if (!known.insert(canonical).second) continue;
    fresh.push_back(std::move(canonical));
  }
  std::sort(fresh.begin(), fresh.end());
  return fresh;
}

// Hands out the files under a folder, and lists it again at an interval for new ones
// (FileSource's continuous mode). Files already handed out are never handed out again.
class MonitoringFileEnumerator final : public SplitEnumerator {
 public:
  MonitoringFileEnumerator(std::string path, std::chrono::milliseconds interval)
      : path_(std::move(path)), interval_(interval) {
    enqueue(listNewFiles(path_, known_, listed_, false));
    nextScan_ = std::chrono::steady_clock::now() + interval_;
  }
  std::unique_ptr<SourceSplit> nextSplit(int) override {
    std::lock_guard lock(mutex_);
    if (queue_.empty() && std::chrono::steady_clock::now() >= nextScan_) {
      enqueue(listNewFiles(path_, known_, listed_, true));
      nextScan_ = std::chrono::steady_clock::now() + interval_;
    }
    if (queue_.empty()) return nullptr;
    auto split = std::make_unique<FileSplit>(std::move(queue_.front()));
    queue_.pop_front();
    return split;
  }

 private:
  void enqueue(std::vector<std::string> files) {
    for (auto& f : files) queue_.push_back(std::move(f));
  }
  const std::string path_;
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::set<std::string> known_;   // guarded by mutex_
  std::set<std::string> listed_;  // guarded by mutex_
  std::deque<std::string> queue_;
  std::chrono::steady_clock::time_point nextScan_;
};

}  // namespace

std::unique_ptr<SplitEnumerator> createFileEnumerator(const std::string& path, std::chrono::milliseconds monitorInterval) {
  if (monitorInterval.count() > 0) return std::make_unique<MonitoringFileEnumerator>(path, monitorInterval);
  std::set<std::string> known, listed;
  std::deque<std::unique_ptr<SourceSplit>> splits;
  for (auto& f : listNewFiles(path, known, listed, false)) splits.push_back(std::make_unique<FileSplit>(std::move(f)));
  return std::make_unique<SharedSplitEnumerator>(std::move(splits));
}

std::string FileRecordReader::Identity::text() const {
  return std::to_string(inode) + " " + std::to_string(size) + " " + std::to_string(mtimeNanos);
}

namespace {
constexpr size_t kChunk = 1 << 20;
}

FileRecordReader::FileRecordReader(SplitEnumerator* enumerator, int subtask, Counter bytesIn, Options options,
                                   BadRecordHandler* badRecords)
    : enumerator_(enumerator), subtask_(subtask), bytesIn_(bytesIn), options_(options), badRecords_(badRecords) {
  buffer_.resize(kChunk);
}

FileRecordReader::~FileRecordReader() { closeFile(); }

void FileRecordReader::close() { closeFile(); }

uint64_t FileRecordReader::nextOffset() const {
  return partial_.empty() && !discarding_ ? fileOffset_ - len_ + pos_ : recordStart_;
}

// A pipe or device with nothing to read yet returns kWouldBlock: the task looks at its
// mailbox (a cancellation, a checkpoint) and polls again soon, instead of blocking in a
// read that may never return.
FileRecordReader::Next FileRecordReader::next(std::string_view& record) {
  while (true) {
    if (fd_ < 0 && !openNext()) return Next::kNoSplit;
    char* begin = buffer_.data() + pos_;
    char* end = buffer_.data() + len_;
    if (partial_.empty() && !discarding_) {
      recordStart_ = fileOffset_ - len_ + pos_;
      inQuotes_ = quoteAtEnd_ = false;
      fieldStart_ = true;
    }
    if (begin < end) {
      if (const char* nl = findEnd(begin, end)) {
        pos_ = static_cast<size_t>(nl - buffer_.data()) + 1;
        if (discarding_) {
          discarding_ = false;
          continue;
        }
        if (!finish(begin, nl, record)) continue;
        firstRecord_ = false;
        if (resumeAt_ >= 0 && record.find_first_not_of(" \t\r") != std::string_view::npos) {
          // The header of a file resumed in its middle: go on from where the checkpoint was.
          header_.assign(record);
          record = header_;
          if (::lseek(fd_, resumeAt_, SEEK_SET) != resumeAt_) throw ioError("seek in", path_, errno);
          fileOffset_ = static_cast<uint64_t>(resumeAt_);
          pos_ = len_ = 0;
          resumeAt_ = -1;
        }
        return Next::kRecord;
      }
      // No end of the record in the buffer: keep its start (+1: a "\r" before the "\n"
      // to come is no part of it) and read more, or drop it when it is too long.
      if (!discarding_) {
        const size_t have = partial_.size() + static_cast<size_t>(end - begin);
        if (have > options_.maxRecordLength + 1) {
          partial_.append(begin, std::min(end, begin + (options_.maxRecordLength - std::min(partial_.size(), options_.maxRecordLength))));
          tooLong(recordStart_, partial_);
          partial_.clear();
          discarding_ = true;
        } else {
          partial_.append(begin, end);
        }
      }
      pos_ = len_ = 0;
    }
    if (!regular_ && !readable()) return Next::kWouldBlock;
    ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return Next::kWouldBlock;
    if (got < 0) throw ioError("read", path_, errno);
    const size_t n = static_cast<size_t>(got);
    fileOffset_ += n;
    bytesIn_.inc(n);
    pos_ = 0;
    len_ = n;
    if (n == 0) {  // the end of the file: its last record may have no line end
      const bool last = !partial_.empty() && !discarding_;
      discarding_ = false;
      closeFile();
      if (last && finish(partial_.data(), partial_.data(), record)) return Next::kRecord;
      partial_.clear();
    } else if (discarding_) {
      return Next::kProgress;  // a chunk dropped: the task may look at its mailbox
    }
  }
}

bool FileRecordReader::finish(const char* b, const char* e, std::string_view& record) {
  recordOffset_ = recordStart_;
  if (!partial_.empty()) {
    partial_.append(b, e);
    returned_.swap(partial_);
    partial_.clear();
    b = returned_.data();
    e = b + returned_.size();
  }
  if (e > b && e[-1] == '\r') --e;
  if (static_cast<size_t>(e - b) > options_.maxRecordLength) {
    tooLong(recordOffset_, std::string_view(b, options_.maxRecordLength));
    return false;
  }
  record = std::string_view(b, static_cast<size_t>(e - b));
  return true;
}

// With a quote char, as CSV splits fields (csv.cc): a quote opens a quoted field only at
// a field's start; inside one, a doubled quote is a quote and a single one closes it. A
// stray quote elsewhere opens nothing (the record is malformed, and only it).
const char* FileRecordReader::findEnd(const char* from, const char* end) {
  auto search = [](const char* p, char c, const char* e) {
    return static_cast<const char*>(std::memchr(p, c, static_cast<size_t>(e - p)));
  };
  const char quote = options_.quote, separator = options_.separator;
  if (quote == 0 || discarding_) return search(from, '\n', end);
  const char* p = from;
  if (quoteAtEnd_ && p < end) {  // the quote that ended the last buffer: doubled, or closing
    quoteAtEnd_ = false;
    if (*p == quote) {
      ++p;
    } else {
      inQuotes_ = false;
      fieldStart_ = false;
    }
  }
  while (p < end) {
    if (inQuotes_) {
      const char* q = search(p, quote, end);
      if (q == nullptr) return nullptr;  // line ends inside the field are the record's
      if (q + 1 == end) {
        quoteAtEnd_ = true;
        return nullptr;
      }
      if (q[1] == quote) {
        p = q + 2;
        continue;
      }
      inQuotes_ = false;
      fieldStart_ = false;
      p = q + 1;
      continue;
    }
    // Most lines have no quote: two vectorized searches say so.
    const char* nl = search(p, '\n', end);
    const char* stop = nl != nullptr ? nl : end;
    const char* q = search(p, quote, stop);
    if (q == nullptr) {
      if (stop > p) fieldStart_ = stop[-1] == separator;
      return nl;
    }
    inQuotes_ = q == p ? fieldStart_ : q[-1] == separator;
    fieldStart_ = false;
    p = q + 1;
  }
  return nullptr;
}

void FileRecordReader::tooLong(uint64_t offset, std::string_view prefix) {
  if (firstRecord_ && options_.hasHeader)
    throw Error(ErrorCode::kInvalidArgument, "file source: the header of '" + path_ + "' is longer than " +
                                                 std::to_string(options_.maxRecordLength) + " bytes");
  std::string reason = "the line is longer than " + std::to_string(options_.maxRecordLength) +
                       " bytes, the longest the source reads (FileSource::Builder::setMaxLineLength)";
  if (inQuotes_) reason += "; a quoted field in it is not closed";
  inQuotes_ = false;  // what is dropped ends at the next line end
  if (badRecords_ != nullptr) {
    badRecords_->handle(path_, static_cast<int64_t>(offset), reason, prefix);
  } else {
    BadRecordHandler().handle(path_, static_cast<int64_t>(offset), reason, prefix);
  }
}

std::vector<std::string> FileRecordReader::snapshotState() const {
  std::vector<std::string> out;
  if (fd_ >= 0) out.push_back(std::to_string(resumeAt_ >= 0 ? resumeAt_ : static_cast<int64_t>(nextOffset())) + " " +
                              identity_.text() + " " + path_);
  for (const auto& r : restored_) out.push_back(std::to_string(r.offset) + " " + r.identity.text() + " " + r.path);
  return out;
}

void FileRecordReader::addSplits(const std::vector<std::string>& splits) {
  for (const auto& s : splits) {
    Restored r;
    int consumed = 0;
    unsigned long long inode = 0;
    long long offset = 0, size = 0, mtime = 0;
    if (std::sscanf(s.c_str(), "%lld %llu %lld %lld %n", &offset, &inode, &size, &mtime, &consumed) != 4 ||
        consumed <= 0 || static_cast<size_t>(consumed) >= s.size() || offset < 0)
      throw Error(ErrorCode::kCheckpoint, "file source: bad split state '" + s + "'");
    r.offset = offset;
    r.identity = Identity{inode, size, mtime};
    r.path = s.substr(static_cast<size_t>(consumed));
    restored_.push_back(std::move(r));
  }
}

// A restored file goes on where the checkpoint was, if it is still the file it was
// then; a file gone or changed since fails the job naming it (docs/api.md).
bool FileRecordReader::openNext() {
  int64_t offset = 0;
  std::optional<Identity> expected;
  if (!restored_.empty()) {
    offset = restored_.front().offset;
    expected = restored_.front().identity;
    path_ = std::move(restored_.front().path);
    restored_.pop_front();
  } else {
    auto split = enumerator_ != nullptr ? enumerator_->nextSplit(subtask_) : nullptr;
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
  identity_ = Identity{static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
                       static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  if (expected && !(*expected == identity_))
    throw Error(ErrorCode::kCheckpoint,
                "file source: '" + path_ + "' changed since the restored checkpoint read it to offset " +
                    std::to_string(offset) + " (it was " + std::to_string(expected->size) + " bytes, inode " +
                    std::to_string(expected->inode) + "; it is " + std::to_string(identity_.size) + " bytes, inode " +
                    std::to_string(identity_.inode) + ", or modified since); it cannot be resumed");
  resumeAt_ = -1;
  if (offset > 0 && options_.hasHeader) {
    resumeAt_ = offset;  // read the header first, then jump there
    offset = 0;
  }
  if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) != offset) throw ioError("seek in", path_, errno);
  fileOffset_ = static_cast<uint64_t>(offset);
  pos_ = len_ = 0;
  partial_.clear();
  discarding_ = false;
  firstRecord_ = true;
  ++fileNumber_;
  return true;
}

void FileRecordReader::closeFile() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

// A pipe or device: whether a read would not block now. A FIFO that no writer has
// opened yet waits (no event); one whose writers are gone reads its end.
bool FileRecordReader::readable() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace weir::detail
