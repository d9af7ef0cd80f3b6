#include "weir/file_source.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <system_error>

#include "weir/error.h"

namespace weir {

namespace fs = std::filesystem;

namespace {

struct FileSplit final : SourceSplit {
  explicit FileSplit(std::string p) : path(std::move(p)) {}
  std::string splitId() const override { return path; }
  std::string path;
};

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
  LineReader(SplitEnumerator* enumerator, int subtask, Counter bytesIn)
      : enumerator_(enumerator), subtask_(subtask), bytesIn_(bytesIn) {
    buffer_.resize(kChunk);
  }
  ~LineReader() override { closeFile(); }

  InputStatus pollNext(std::vector<std::string>& out, size_t maxRecords) override {
    size_t produced = 0;
    while (produced < maxRecords) {
      if (!file_ && !openNext()) return produced > 0 ? InputStatus::MORE_AVAILABLE : InputStatus::END_OF_INPUT;
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
      partial_.append(begin, end);
      pos_ = len_ = 0;
      size_t n = std::fread(buffer_.data(), 1, buffer_.size(), file_);
      fileOffset_ += n;
      bytesIn_.inc(n);
      if (n == 0) {
        if (std::ferror(file_)) throw ioError("read", path_, errno);
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

  // "offset path" of the file being read (the offset of its next line), then those of
  // restored files not begun yet.
  std::vector<std::string> snapshotState(int64_t) override {
    std::vector<std::string> out;
    if (file_) out.push_back(std::to_string(fileOffset_ - len_ + pos_ - partial_.size()) + " " + path_);
    for (const auto& [offset, path] : restored_) out.push_back(std::to_string(offset) + " " + path);
    return out;
  }
  void addSplits(std::vector<std::string> splits) override {
    for (const auto& s : splits) {
      auto space = s.find(' ');
      if (space == std::string::npos) throw Error(ErrorCode::kCheckpoint, "file source: bad split state '" + s + "'");
      restored_.emplace_back(std::stoll(s.substr(0, space)), s.substr(space + 1));
    }
  }

 private:
  static constexpr size_t kChunk = 1 << 20;

  void emit(std::vector<std::string>& out, const char* b, const char* e) {
    if (!partial_.empty() && b != partial_.data()) {
      partial_.append(b, e);
      b = partial_.data();
      e = b + partial_.size();
    }
    if (e > b && e[-1] == '\r') --e;
    out.emplace_back(b, e);
    partial_.clear();
  }

  bool openNext() {
    long offset = 0;
    if (!restored_.empty()) {
      offset = static_cast<long>(restored_.front().first);
      path_ = std::move(restored_.front().second);
      restored_.pop_front();
    } else {
      auto split = enumerator_->nextSplit(subtask_);
      if (!split) return false;
      path_ = static_cast<FileSplit&>(*split).path;
    }
    file_ = std::fopen(path_.c_str(), "rb");
    if (!file_) throw ioError("open", path_, errno);
    if (offset > 0 && std::fseek(file_, offset, SEEK_SET) != 0) throw ioError("seek in", path_, errno);
    fileOffset_ = static_cast<uint64_t>(offset);
    pos_ = len_ = 0;
    partial_.clear();
    return true;
  }

  void closeFile() {
    if (file_) std::fclose(file_);
    file_ = nullptr;
  }

  SplitEnumerator* enumerator_;
  int subtask_;
  Counter bytesIn_;
  std::FILE* file_ = nullptr;
  std::string path_;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t len_ = 0;
  uint64_t fileOffset_ = 0;  // of the byte after the buffer's last
  std::string partial_;
  std::deque<std::pair<int64_t, std::string>> restored_;
};

}  // namespace

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
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path_);
  }
  std::deque<std::unique_ptr<SourceSplit>> splits;
  for (auto& f : files) {
    // Fail before the job starts rather than halfway through it.
    std::FILE* probe = std::fopen(f.c_str(), "rb");
    if (!probe) throw ioError("open", f, errno);
    std::fclose(probe);
    splits.push_back(std::make_unique<FileSplit>(f));
  }
  return std::make_unique<SharedSplitEnumerator>(std::move(splits));
}

std::unique_ptr<SourceReader<std::string>> FileSource::createReader(const SourceReaderContext& context) const {
  return std::make_unique<LineReader>(context.enumerator, context.subtaskIndex,
                                      context.metricGroup.getIOMetricGroup().getNumBytesInCounter());
}

}  // namespace weir
