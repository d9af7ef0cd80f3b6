#include "core/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace weir::core {

namespace {

std::error_code lastError() { return {errno, std::generic_category()}; }

class NotARegularFileCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "weir.file_system"; }
  std::string message(int) const override { return "not a regular file"; }
};

class PosixWritableFile final : public WritableFile {
 public:
  explicit PosixWritableFile(int fd) : fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  std::error_code append(std::string_view data) override {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return lastError();
      }
      done += static_cast<size_t>(n);
    }
    return {};
  }
  std::error_code sync() override { return ::fsync(fd_) == 0 ? std::error_code() : lastError(); }
  std::error_code close() override {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? std::error_code() : lastError();
  }

 private:
  int fd_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  explicit PosixReadableFile(int fd) : fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }
  std::error_code read(uint64_t offset, size_t size, char* out, size_t& got) override {
    got = 0;
    while (got < size) {
      ssize_t n = ::pread(fd_, out + got, size - got, static_cast<off_t>(offset + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        return lastError();
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    return {};
  }

 private:
  int fd_;
};

class PosixFileSystem final : public FileSystem {
 public:
  std::unique_ptr<WritableFile> openForWrite(const std::string& path, WriteMode mode, std::error_code& ec) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == WriteMode::kAppend ? O_APPEND : O_TRUNC);
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) {
      ec = lastError();
      return nullptr;
    }
    ec.clear();
    return std::make_unique<PosixWritableFile>(fd);
  }
  std::unique_ptr<ReadableFile> openForRead(const std::string& path, std::error_code& ec) override {
    // Non-blocking, so that opening a FIFO does not wait for a writer; then only a
    // regular file is kept.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      ec = lastError();
      return nullptr;
    }
    struct stat st;
    ec.clear();
    if (::fstat(fd, &st) != 0)
      ec = lastError();
    else if (!S_ISREG(st.st_mode))
      ec = notARegularFile();
    if (ec) {
      ::close(fd);
      return nullptr;
    }
    return std::make_unique<PosixReadableFile>(fd);
  }
  std::error_code rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? std::error_code() : lastError();
  }
  std::error_code remove(const std::string& path) override {
    return ::remove(path.c_str()) == 0 ? std::error_code() : lastError();
  }
  std::error_code removeAll(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    return ec;
  }
  std::error_code createDirectories(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    return ec;
  }
  std::error_code syncDirectory(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return lastError();
    std::error_code ec;
    if (::fsync(fd) != 0) ec = lastError();
    ::close(fd);
    return ec;
  }
  std::error_code list(const std::string& path, std::vector<std::string>& names) override {
    names.clear();
    std::error_code ec;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    return ec;
  }
  std::error_code truncate(const std::string& path, uint64_t size) override {
    uint64_t now = 0;
    if (auto ec = fileSize(path, now)) return ec;
    if (now <= size) return {};
    return ::truncate(path.c_str(), static_cast<off_t>(size)) == 0 ? std::error_code() : lastError();
  }
  std::error_code fileSize(const std::string& path, uint64_t& size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return lastError();
    if (!S_ISREG(st.st_mode)) return notARegularFile();
    size = static_cast<uint64_t>(st.st_size);
    return {};
  }
};

}  // namespace

std::error_code notARegularFile() {
  static const NotARegularFileCategory category;
  return {1, category};
}

const std::shared_ptr<FileSystem>& FileSystem::local() {
  static const std::shared_ptr<FileSystem>& fs = *new std::shared_ptr<FileSystem>(std::make_shared<PosixFileSystem>());
  return fs;  // never destroyed: checkpoints may be removed while the process exits
}

std::error_code FileSystem::readFile(const std::string& path, std::string& out, size_t limit) {
  std::error_code ec;
  auto file = openForRead(path, ec);
  if (!file) return ec;
  out.clear();
  constexpr size_t kChunk = 1 << 20;
  for (;;) {
    size_t have = out.size();
    out.resize(have + kChunk);
    size_t got = 0;
    ec = file->read(have, kChunk, out.data() + have, got);
    out.resize(have + got);
    if (!ec && out.size() > limit) {
      out.clear();
      return std::make_error_code(std::errc::file_too_large);
    }
    if (ec || got < kChunk) return ec;
  }
}

std::error_code FileSystem::readRange(const std::string& path, uint64_t offset, size_t size, std::string& out) {
  std::error_code ec;
  auto file = openForRead(path, ec);
  if (!file) return ec;
  out.resize(size);
  size_t got = 0;
  ec = file->read(offset, size, out.data(), got);
  out.resize(got);
  return ec;
}

}  // namespace weir::core
