#include "checkpoint/completed_checkpoint_store.h"

#include <filesystem>
#include <sstream>

#include "checkpoint/checkpoint_storage.h"
#include "weir/error.h"

namespace weir::checkpoint {

namespace {

// The file: a magic line, one line per checkpoint ("<id> <timestamp>"), and the XXH3-64
// of those lines.
constexpr std::string_view kMagic = "WEIR-COMPLETED-CHECKPOINTS 1";
// It lists the retained checkpoints, a handful of short lines.
constexpr uint64_t kMaxBytes = 1 << 20;

}  // namespace

CompletedCheckpointStore::CompletedCheckpointStore(std::string jobFolder, std::shared_ptr<core::FileSystem> fileSystem)
    : path_((std::filesystem::path(jobFolder) / kFileName).string()), fileSystem_(std::move(fileSystem)) {}

void CompletedCheckpointStore::write(const std::vector<Entry>& completed) {
  std::string lines;
  for (const auto& e : completed) lines += std::to_string(e.id) + " " + std::to_string(e.timestampMillis) + "\n";
  writeFileAtomically(*fileSystem_, path_, std::string(kMagic) + "\n" + lines + "checksum " + checksumHex(lines) + "\n");
}

void CompletedCheckpointStore::remove() {
  if (auto ec = fileSystem_->remove(path_); ec && ec != std::errc::no_such_file_or_directory)
    throw Error(ErrorCode::kIo, "checkpoint: cannot remove '" + path_ + "': " + ec.message());
}

std::optional<std::vector<CompletedCheckpointStore::Entry>> CompletedCheckpointStore::read(
    const std::string& jobFolder, core::FileSystem& fileSystem) {
  const std::string path = (std::filesystem::path(jobFolder) / kFileName).string();
  auto damaged = [&](const std::string& why) {
    return Error(ErrorCode::kCheckpoint, "the record of completed checkpoints '" + path + "' " + why);
  };
  std::string text;
  if (auto ec = fileSystem.readFile(path, text, kMaxBytes)) {
    if (ec == std::errc::no_such_file_or_directory) return std::nullopt;
    throw damaged(ec == std::errc::file_too_large ? "is too large to be one" : "is unreadable: " + ec.message());
  }
  const auto first = text.find('\n');
  const auto last = text.rfind("checksum ");
  if (first == std::string::npos || std::string_view(text).substr(0, first) != kMagic)
    throw damaged("is not one (bad magic number)");
  if (last == std::string::npos || last < first + 1 || text.back() != '\n') throw damaged("is truncated");
  const std::string lines = text.substr(first + 1, last - first - 1);
  if (text.substr(last + 9, text.size() - last - 10) != checksumHex(lines)) throw damaged("is corrupt (bad checksum)");
  std::vector<Entry> entries;
  std::istringstream in(lines);
  for (Entry e; in >> e.id >> e.timestampMillis;) entries.push_back(e);
  if (!in.eof()) throw damaged("is corrupt (a line is not '<id> <timestamp>')");
  return entries;
}

}  // namespace weir::checkpoint
