// The reading half of FileSource, without its types: cuts the files an enumerator hands
// out into records (lines, or lines outside quotes), keeps where it is for checkpoints,
// and reports records longer than the limit to the bad-record policy.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "weir/bad_record.h"
#include "weir/metrics.h"
#include "weir/source.h"

namespace weir::detail {

// Lists the files of `path` (a file, or a folder read recursively without names that
// start with '.' or '_'), by canonical path; with a positive `monitorInterval` it lists
// the folder again at that interval and hands out the files that appeared. Throws
// weir::Error (kIo) when the path is missing or unreadable.
std::unique_ptr<SplitEnumerator> createFileEnumerator(const std::string& path, std::chrono::milliseconds monitorInterval);

class FileRecordReader {
 public:
  struct Options {
    size_t maxRecordLength = 8 << 20;  // bytes, without the line end
    char quote = 0;      // a line end within a field quoted by it is within the record; 0: none
    char separator = 0;  // of fields: a quote opens a quoted field at a record's start or after it
    bool hasHeader = false;  // a resumed file is read from its first record, then from where it was
  };
  enum class Next {
    kRecord,      // `record` holds the next record
    kWouldBlock,  // a pipe has nothing to read yet
    kNoSplit,     // no file to read (for now, when the enumerator monitors a folder)
    kProgress,    // dropped a chunk of a record longer than the limit: call again
  };

  FileRecordReader(SplitEnumerator* enumerator, int subtask, Counter bytesIn, Options options,
                   BadRecordHandler* badRecords);
  ~FileRecordReader();
  FileRecordReader(const FileRecordReader&) = delete;
  FileRecordReader& operator=(const FileRecordReader&) = delete;

  // The next record, without its line end; valid until the next call.
  Next next(std::string_view& record);
  // The file the last record came from, and its byte offset there.
  const std::string& path() const { return path_; }
  uint64_t recordOffset() const { return recordOffset_; }
  // Counts the files opened: a new value means a new file (a new decoder).
  uint64_t fileNumber() const { return fileNumber_; }

  // "offset inode size mtime path" of the file being read (the offset of its next
  // record), then those of restored files not begun yet.
  std::vector<std::string> snapshotState() const;
  void addSplits(const std::vector<std::string>& splits);
  void close();

 private:
  // What tells a file's content apart from another's at the same path.
  struct Identity {
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtimeNanos = 0;
    bool operator==(const Identity&) const = default;
    std::string text() const;
  };
  // A file a restored checkpoint was reading: where, and what it was then.
  struct Restored {
    int64_t offset = 0;
    Identity identity;
    std::string path;
  };

  uint64_t nextOffset() const;  // of the record after the last one returned
  bool openNext();
  void closeFile();
  bool readable() const;
  // The record [b, e) (perhaps continuing partial_) is complete: strip "\r", check its length.
  bool finish(const char* b, const char* e, std::string_view& record);
  // Scans [from, end) for the line end of the record; updates the quote state.
  const char* findEnd(const char* from, const char* end);
  void tooLong(uint64_t offset, std::string_view prefix);

  SplitEnumerator* enumerator_;
  int subtask_;
  Counter bytesIn_;
  Options options_;
  BadRecordHandler* badRecords_;
  int fd_ = -1;
  bool regular_ = true;  // a regular file: reads do not block
  std::string path_;
  Identity identity_;
  uint64_t fileNumber_ = 0;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t len_ = 0;
  uint64_t fileOffset_ = 0;  // of the byte after the buffer's last
  uint64_t recordStart_ = 0;   // of the record being cut
  uint64_t recordOffset_ = 0;  // of the record last returned
  std::string partial_;        // the start of a record the buffer did not hold whole
  std::string returned_;       // a record returned that was partial_
  bool inQuotes_ = false;      // the record so far ends within a quoted field
  bool fieldStart_ = true;     // the record so far ends where a field starts
  bool quoteAtEnd_ = false;    // within a quoted field, the last byte scanned was a quote
  bool firstRecord_ = false;   // the next record is the file's first
  bool discarding_ = false;  // within a record longer than the limit: drop up to its end
  int64_t resumeAt_ = -1;    // after the header of a resumed file: go on from here
  std::string header_;       // the header record returned before resuming
  std::deque<Restored> restored_;
};

}  // namespace weir::detail
