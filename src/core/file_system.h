// The file system weir's own files go through (LevelDB's Env): checkpoints are written,
// read, renamed and removed by it, never by the OS directly, so a test can put a
// fault-injecting one in its place (tests/support/fault_injecting_file_system.h) that
// fails the Nth write, fsync or rename, fills the disk, or forgets every unsynced byte
// on a simulated crash. The default, local(), is POSIX and costs one virtual call per
// open, per buffer written or read, per rename.
//
// Calls return a std::error_code (the errno of the failing call, generic_category)
// rather than throwing: an I/O failure is an expected outcome, and the caller knows
// what to say about it (which checkpoint, which file). Thread-safe: one FileSystem is
// used by every thread of a job; a file handle by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace weir::core {

// A file open for writing; bytes go at its end. Its destructor closes it (ignoring
// errors: call close() to see them).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` (a short write is retried); on an error some of it may have
  // reached the file.
  virtual std::error_code append(std::string_view data) = 0;
  // Makes what was appended durable (fsync). A name the file got is durable only once
  // its folder is synced too (FileSystem::syncDirectory).
  virtual std::error_code sync() = 0;
  virtual std::error_code close() = 0;
};

// A file open for reading at any offset.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Reads up to `size` bytes at `offset` into `out`, fewer only where the file ends;
  // `got` says how many.
  virtual std::error_code read(uint64_t offset, size_t size, char* out, size_t& got) = 0;
};

// The error of opening something that is not a regular file for reading.
std::error_code notARegularFile();

class FileSystem {
 public:
  // The POSIX file system, which every job uses unless given another.
  static const std::shared_ptr<FileSystem>& local();

  virtual ~FileSystem() = default;

  enum class WriteMode {
    kTruncate,  // an existing file is emptied first
    kAppend,    // bytes go after what the file holds
  };
  // Opens `path` for writing, creating it (mode 0644) when missing. Null, with `ec` set,
  // when it cannot.
  virtual std::unique_ptr<WritableFile> openForWrite(const std::string& path, WriteMode mode,
                                                     std::error_code& ec) = 0;
  // Opens regular file `path` for reading (a link is followed to a regular file only).
  // Null, with `ec` set, when it cannot: no_such_file_or_directory when it is missing,
  // notARegularFile() when it is a folder, a FIFO, a device or a link to one (which a
  // read could block on or never finish).
  virtual std::unique_ptr<ReadableFile> openForRead(const std::string& path, std::error_code& ec) = 0;
  // Renames `from` to `to` atomically, replacing `to`. The new name is durable once the
  // folder is synced.
  virtual std::error_code rename(const std::string& from, const std::string& to) = 0;
  // Removes a file or an empty folder; no_such_file_or_directory when there is none.
  virtual std::error_code remove(const std::string& path) = 0;
  // Removes `path` and everything under it; nothing (and no error) when it is missing.
  virtual std::error_code removeAll(const std::string& path) = 0;
  // Makes folder `path` and its missing parents. A folder made is durable once its
  // parent is synced.
  virtual std::error_code createDirectories(const std::string& path) = 0;
  // Makes the names created, renamed or removed in folder `path` durable (fsync).
  virtual std::error_code syncDirectory(const std::string& path) = 0;
  // The names in folder `path` (neither "." nor ".."), in no particular order.
  virtual std::error_code list(const std::string& path, std::vector<std::string>& names) = 0;
  // Cuts regular file `path` to its first `size` bytes (a file shorter than that is left
  // as it is). Durable once the file is synced.
  virtual std::error_code truncate(const std::string& path, uint64_t size) = 0;
  // The size of regular file `path` in bytes; no_such_file_or_directory when it is
  // missing, notARegularFile() when it is something else.
  virtual std::error_code fileSize(const std::string& path, uint64_t& size) = 0;

  // All of file `path`, when it holds at most `limit` bytes; file_too_large (and `out`
  // empty) when it holds more.
  std::error_code readFile(const std::string& path, std::string& out, size_t limit = SIZE_MAX);
  // Up to `size` bytes of file `path` from `offset` (fewer where the file ends).
  std::error_code readRange(const std::string& path, uint64_t offset, size_t size, std::string& out);
};

}  // namespace weir::core
