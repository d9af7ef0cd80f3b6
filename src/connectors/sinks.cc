#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "weir/error.h"
#include "weir/print_sink.h"
#include "weir/text_file_sink.h"

namespace weir::detail {

std::mutex& linesMutex() {
  static std::mutex& mutex = *new std::mutex;  // never destroyed: jobs may print at exit
  return mutex;
}

void flushLines(bool toStderr) {
  std::lock_guard lock(linesMutex());
  std::fflush(toStderr ? stderr : stdout);
}

void writeLines(const std::string& lines, bool toStderr) {
  std::lock_guard lock(linesMutex());
  std::FILE* out = toStderr ? stderr : stdout;
  std::fwrite(lines.data(), 1, lines.size(), out);
}

std::FILE* openPartFile(const std::string& folder, int subtask, std::string* pathOut) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw Error(ErrorCode::kIo, "text file sink: cannot create folder '" + folder + "': " + ec.message());
  *pathOut = (std::filesystem::path(folder) / ("part-" + std::to_string(subtask))).string();
  std::FILE* file = std::fopen(pathOut->c_str(), "wb");
  if (!file) throw Error(ErrorCode::kIo, "text file sink: cannot open '" + *pathOut + "': " + std::strerror(errno));
  return file;
}

void writeAll(std::FILE* file, const std::string& text, const std::string& path) {
  if (std::fwrite(text.data(), 1, text.size(), file) != text.size())
    throw Error(ErrorCode::kIo, "text file sink: cannot write '" + path + "': " + std::strerror(errno));
}

void closePartFile(std::FILE* file, const std::string& path) {
  bool ok = std::fflush(file) == 0;
  int err = errno;
  ok = std::fclose(file) == 0 && ok;
  if (!ok) throw Error(ErrorCode::kIo, "text file sink: cannot close '" + path + "': " + std::strerror(err));
}

}  // namespace weir::detail
