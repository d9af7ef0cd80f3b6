// Writes each record as a line of text into a folder, one part file per parallel
// instance: <folder>/part-<subtask>. Not transactional: a failed job leaves what it wrote.
#pragma once

#include <cstdio>
#include <string>

#include "weir/detail/core/format.h"
#include "weir/sink.h"

namespace weir {

namespace detail {
// Creates `folder` if needed and opens <folder>/part-<subtask> for writing; throws
// weir::Error (kIo) naming the path on failure.
std::FILE* openPartFile(const std::string& folder, int subtask, std::string* pathOut);
// Writes all of `text`; throws weir::Error (kIo) naming `path` on failure.
void writeAll(std::FILE* file, const std::string& text, const std::string& path);
void closePartFile(std::FILE* file, const std::string& path);
}  // namespace detail

template <class T>
class TextFileSink final : public Sink<T> {
 public:
  explicit TextFileSink(std::string folder) : folder_(std::move(folder)) {}

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override {
    std::string path;
    std::FILE* file = detail::openPartFile(folder_, context.getIndexOfThisSubtask(), &path);
    return std::make_unique<Writer>(file, std::move(path),
                                    context.getMetricGroup().getIOMetricGroup().getNumBytesOutCounter());
  }

 private:
  struct Writer final : SinkWriter<T> {
    Writer(std::FILE* f, std::string p, Counter b) : file(f), path(std::move(p)), bytesOut(b) {}
    ~Writer() override {
      if (file) std::fclose(file);
    }
    void write(const T& record) override {
      text.clear();
      text += toDisplayString(record);
      text += '\n';
      writeText();
    }
    void writeBatch(std::span<T> records) override {
      text.clear();
      for (const auto& r : records) {
        text += toDisplayString(r);
        text += '\n';
      }
      writeText();
    }
    void close() override {
      std::FILE* f = file;
      file = nullptr;
      if (f) detail::closePartFile(f, path);
    }
    void writeText() {
      detail::writeAll(file, text, path);
      bytesOut.inc(text.size());
    }
    std::FILE* file;
    std::string path;
    Counter bytesOut;
    std::string text;
  };

  std::string folder_;
};

}  // namespace weir
