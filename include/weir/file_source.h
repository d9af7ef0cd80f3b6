// Reads text lines from one file or from every file under a folder; files are splits,
// handed to the parallel readers as they ask, so several files are read at once.
#pragma once

#include <string>

#include "weir/source.h"

namespace weir {

// Decodes a file as lines of text ('\n' or "\r\n" end a line; the end is not kept).
struct TextLineInputFormat {};

// A bounded source of lines. A folder is read recursively, skipping names that start
// with '.' or '_' (hidden and in-progress files), in name order.
class FileSource final : public Source<std::string> {
 public:
  class Builder {
   public:
    explicit Builder(std::string path) : path_(std::move(path)) {}
    FileSource build() const { return FileSource(path_); }

   private:
    std::string path_;
  };

  static Builder forRecordStreamFormat(TextLineInputFormat, std::string path) {
    return Builder(std::move(path));
  }

  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  // A checkpoint holds each file being read with the byte offset of its next line.
  bool supportsCheckpointing() const override { return true; }
  // Lists the files; throws weir::Error (kIo) when the path is missing or unreadable.
  std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const override;
  std::unique_ptr<SourceReader<std::string>> createReader(const SourceReaderContext& context) const override;

  const std::string& path() const { return path_; }

 private:
  explicit FileSource(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace weir
