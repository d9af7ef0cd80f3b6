#include "savepoint/savepoint.h"

#include <cstdio>
#include <filesystem>
#include <random>

#include "checkpoint/checkpoint_storage.h"
#include "core/file_system.h"
#include "weir/error.h"
#include "weir/savepoint_format_type.h"
#include "weir/savepoint_restore_settings.h"

namespace fs = std::filesystem;

namespace weir {

const char* toString(SavepointFormatType type) {
  return type == SavepointFormatType::NATIVE ? "NATIVE" : "CANONICAL";
}

std::optional<SavepointFormatType> parseSavepointFormatType(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "CANONICAL") return SavepointFormatType::CANONICAL;
  if (upper == "NATIVE") return SavepointFormatType::NATIVE;
  return std::nullopt;
}

const char* toString(RestoreMode mode) { return mode == RestoreMode::CLAIM ? "CLAIM" : "NO_CLAIM"; }

SavepointRestoreSettings SavepointRestoreSettings::forPath(std::string path, bool allowNonRestoredState,
                                                           RestoreMode mode) {
  if (path.empty()) throw Error(ErrorCode::kInvalidArgument, "restore path must not be empty");
  SavepointRestoreSettings s;
  s.path_ = std::move(path);
  s.allowNonRestoredState_ = allowNonRestoredState;
  s.mode_ = mode;
  return s;
}

}  // namespace weir

namespace weir::savepoint {

std::string newSavepointFolder(const std::string& directory, const std::string& jobId) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  char random[16];
  std::snprintf(random, sizeof random, "%012llx", static_cast<unsigned long long>(rng() & 0xffffffffffffULL));
  return (fs::path(directory) / ("savepoint-" + jobId.substr(0, 6) + "-" + random)).string();
}

void disposeSnapshot(const std::string& path) {
  const std::string folder = checkpoint::checkpointFolder(path);
  checkpoint::readMetadata(folder);  // refuses a folder that is not a snapshot
  if (auto ec = checkpoint::removeCheckpointFolder(*core::FileSystem::local(), folder))
    throw Error(ErrorCode::kCheckpoint, "cannot remove '" + folder + "': " + ec.message());
}

}  // namespace weir::savepoint
