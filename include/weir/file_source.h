// Reads text lines from one file or from every file under a folder; files are splits,
// handed to the parallel readers as they ask, so several files are read at once.
#pragma once

#include <cstddef>
#include <string>

#include "weir/source.h"

namespace weir {

// Decodes a file as lines of text ('\n' or "\r\n" end a line; the end is not kept).
struct TextLineInputFormat {};

// A bounded source of lines. A folder is read recursively, skipping names that start
// with '.' or '_' (hidden and in-progress files), in name order. Files are known by
// their canonical path (absolute, links resolved), so a job resumed with the same input
// spelled another way reads nothing twice; docs/api.md says what a resumed job does when
// its input changed.
class FileSource final : public Source<std::string> {
 public:
  // The longest line read, by default: a longer one is a bad record.
  static constexpr size_t kDefaultMaxLineLength = 8 << 20;

  class Builder {
   public:
    explicit Builder(std::string path) : path_(std::move(path)) {}
    // The longest line (bytes, without its end) the source reads; a longer one fails the
    // job naming the file and the line's offset, instead of buffering without bound.
    // Default 8 MiB.
    Builder& setMaxLineLength(size_t bytes) {
      maxLineLength_ = bytes;
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) for a max line length of 0.
    FileSource build() const;

   private:
    std::string path_;
    size_t maxLineLength_ = kDefaultMaxLineLength;
  };

  static Builder forRecordStreamFormat(TextLineInputFormat, std::string path) {
    return Builder(std::move(path));
  }

  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  // A checkpoint holds each file being read with the byte offset of its next line and
  // what identifies its content (inode, size, modification time).
  bool supportsCheckpointing() const override { return true; }
  // Lists the files; throws weir::Error (kIo) when the path is missing or unreadable.
  std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const override;
  std::unique_ptr<SourceReader<std::string>> createReader(const SourceReaderContext& context) const override;

  const std::string& path() const { return path_; }
  size_t maxLineLength() const { return maxLineLength_; }

 private:
  FileSource(std::string path, size_t maxLineLength) : path_(std::move(path)), maxLineLength_(maxLineLength) {}
  std::string path_;
  size_t maxLineLength_;
};

}  // namespace weir
