// Reads records from one file or from every file under a folder, each cut and decoded by
// a StreamFormat (lines, JSON Lines, CSV); files are splits, handed to the parallel
// readers as they ask, so several files are read at once.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>

#include "weir/bad_record.h"
#include "weir/detail/connectors/file_record_reader.h"
#include "weir/error.h"
#include "weir/source.h"
#include "weir/stream_format.h"

namespace weir {

namespace detail {

// A FileSource reader: records from FileRecordReader, decoded by the format.
template <class T>
class FileSourceReader final : public SourceReader<T> {
 public:
  FileSourceReader(std::shared_ptr<const StreamFormat<T>> format, const SourceReaderContext& context,
                   size_t maxRecordLength, std::chrono::milliseconds monitorInterval)
      : format_(std::move(format)),
        badRecords_(context.badRecords != nullptr ? context.badRecords : &failing_),
        files_(context.enumerator, context.subtaskIndex, context.metricGroup.getIOMetricGroup().getNumBytesInCounter(),
               FileRecordReader::Options{maxRecordLength, format_->quoteChar(), format_->fieldSeparator(),
                                         format_->hasHeader()},
               badRecords_),
        monitorInterval_(monitorInterval) {}

  // Bad records count toward `maxRecords` too, so a file of them yields to the task (its
  // checkpoints, a cancellation) as often as one of good records, and the dead letters
  // of one call stay as few.
  InputStatus pollNext(std::vector<T>& out, size_t maxRecords) override {
    size_t handled = 0;
    std::string_view record;
    while (handled < maxRecords) {
      auto next = files_.next(record);
      if (next == FileRecordReader::Next::kProgress) return InputStatus::MORE_AVAILABLE;
      if (next != FileRecordReader::Next::kRecord) {
        if (handled > 0) return InputStatus::MORE_AVAILABLE;
        if (next == FileRecordReader::Next::kNoSplit && monitorInterval_.count() == 0) return InputStatus::END_OF_INPUT;
        return InputStatus::NOTHING_AVAILABLE;
      }
      if (files_.fileNumber() != decoderFile_) {
        decoder_ = format_->createDecoder();
        decoderFile_ = files_.fileNumber();
      }
      ++handled;
      out.emplace_back();
      bool isData = false;
      try {
        isData = decoder_->decode(record, out.back());
      } catch (const SerializationError& e) {
        out.pop_back();
        badRecords_->handle(files_.path(), static_cast<int64_t>(files_.recordOffset()), e.what(), record);
        continue;
      } catch (const Error& e) {
        throw Error(e.code(), "file source: '" + files_.path() + "': " + e.what());
      }
      if (!isData) out.pop_back();
    }
    return InputStatus::MORE_AVAILABLE;
  }

  // Waiting for a pipe to fill, or (monitoring a folder) for new files.
  std::chrono::steady_clock::time_point nextPollTime() const override {
    auto wait = monitorInterval_.count() > 0 ? std::min(monitorInterval_, std::chrono::milliseconds(100))
                                             : std::chrono::milliseconds(5);
    return std::chrono::steady_clock::now() + wait;
  }
  void close() override { files_.close(); }
  std::vector<std::string> snapshotState(int64_t) override { return files_.snapshotState(); }
  void addSplits(std::vector<std::string> splits) override { files_.addSplits(splits); }

 private:
  std::shared_ptr<const StreamFormat<T>> format_;
  BadRecordHandler failing_;  // outside a job: FAIL
  BadRecordHandler* badRecords_;
  FileRecordReader files_;
  std::chrono::milliseconds monitorInterval_;
  std::unique_ptr<typename StreamFormat<T>::Decoder> decoder_;
  uint64_t decoderFile_ = 0;
};

}  // namespace detail

// A source of the records in a file or a folder. A folder is read recursively, skipping
// names that start with '.' or '_' (hidden and in-progress files), in name order. Files
// are known by their canonical path (absolute, links resolved), so a job resumed with the
// same input spelled another way reads nothing twice; docs/api.md says what a resumed job
// does when its input changed.
//   FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), "in/").build()
template <class T>
class FileSource final : public Source<T> {
 public:
  // The longest record read, by default: a longer one is a bad record.
  static constexpr size_t kDefaultMaxLineLength = 8 << 20;
  static constexpr size_t kLargestMaxLineLength = size_t{1} << 30;

  class Builder {
   public:
    Builder(std::shared_ptr<const StreamFormat<T>> format, std::string path)
        : format_(std::move(format)), path_(std::move(path)) {}
    // The longest record (bytes, without its line end) the source reads; a longer one is
    // a bad record (the policy decides), read no further than this. Default 8 MiB.
    Builder& setMaxLineLength(size_t bytes) {
      maxLineLength_ = bytes;
      return *this;
    }
    // Makes the source unbounded: it lists the folder again every `interval` and reads
    // the files that appeared (Flink's continuous mode). A file must appear whole (be
    // written elsewhere and renamed in, or under a name starting with '.' or '_' until it
    // is complete); the files already read are in the checkpoint. Default: bounded.
    Builder& monitorContinuously(std::chrono::milliseconds interval) {
      monitorInterval_ = interval;
      monitor_ = true;
      return *this;
    }
    // What a record that does not decode, or is too long, does. Default FAIL.
    Builder& setBadRecordPolicy(BadRecordPolicy policy) {
      policy_ = policy;
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) for a max line length of 0 or above 1 GiB, or
    // an interval of 0.
    FileSource build() const {
      if (maxLineLength_ == 0 || maxLineLength_ > kLargestMaxLineLength)
        throw Error(ErrorCode::kInvalidArgument, "file source: the max line length must be between 1 byte and 1 GiB, got " +
                                                     std::to_string(maxLineLength_));
      if (monitor_ && monitorInterval_.count() <= 0)
        throw Error(ErrorCode::kInvalidArgument, "file source: the monitoring interval must be positive, got " +
                                                     std::to_string(monitorInterval_.count()) + " ms");
      return FileSource(*this);
    }

   private:
    friend class FileSource;
    std::shared_ptr<const StreamFormat<T>> format_;
    std::string path_;
    size_t maxLineLength_ = kDefaultMaxLineLength;
    bool monitor_ = false;
    std::chrono::milliseconds monitorInterval_{0};
    BadRecordPolicy policy_ = BadRecordPolicy::FAIL;
  };

  template <class Format>
    requires std::is_base_of_v<StreamFormat<T>, Format>
  static Builder forRecordStreamFormat(Format format, std::string path) {
    return Builder(std::make_shared<Format>(std::move(format)), std::move(path));
  }

  Boundedness getBoundedness() const override {
    return monitorInterval_.count() > 0 ? Boundedness::CONTINUOUS_UNBOUNDED : Boundedness::BOUNDED;
  }
  // A checkpoint holds each file being read with the byte offset of its next record and
  // what identifies its content (inode, size, modification time).
  bool supportsCheckpointing() const override { return true; }
  BadRecordPolicy badRecordPolicy() const override { return policy_; }
  // Lists the files; throws weir::Error (kIo) when the path is missing or unreadable.
  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override {
    return detail::createFileEnumerator(path_, monitorInterval_);
  }
  std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext& context) const override {
    return std::make_unique<detail::FileSourceReader<T>>(format_, context, maxLineLength_, monitorInterval_);
  }

  const std::string& path() const { return path_; }
  size_t maxLineLength() const { return maxLineLength_; }

 private:
  explicit FileSource(const Builder& b)
      : format_(b.format_), path_(b.path_), maxLineLength_(b.maxLineLength_), monitorInterval_(b.monitorInterval_),
        policy_(b.policy_) {}
  std::shared_ptr<const StreamFormat<T>> format_;
  std::string path_;
  size_t maxLineLength_;
  std::chrono::milliseconds monitorInterval_;
  BadRecordPolicy policy_;
};

}  // namespace weir
