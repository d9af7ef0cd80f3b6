#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include "core/file_system.h"
#include "core/sync_point.h"
#include "weir/bucket_assigner.h"
#include "weir/detail/connectors/file_sink_buckets.h"
#include "weir/error.h"

namespace weir::detail {

namespace {

constexpr const char* kInProgressSuffix = ".inprogress";

std::string join(const std::string& folder, const std::string& name) {
  return name.empty() ? folder : folder + "/" + name;
}

std::string hiddenName(const std::string& finalFile) { return "." + finalFile + kInProgressSuffix; }

// A new random (version 4) UUID, as Flink names a sink subtask's part files.
std::string newUid() {
  std::random_device device;
  std::mt19937_64 rng((uint64_t{device()} << 32) ^ device());
  uint64_t hi = rng(), lo = rng();
  hi = (hi & ~uint64_t{0xf000}) | 0x4000;                   // version 4
  lo = (lo & ~(uint64_t{0xc} << 60)) | (uint64_t{8} << 60);  // variant 1
  char text[37];
  std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return text;
}

// A bucket id names folders inside the base path, never outside it.
void checkBucketId(const std::string& id) {
  if (id.empty()) return;
  bool ok = id.front() != '/' && id.back() != '/' && id.find('\0') == std::string::npos;
  for (size_t start = 0; ok && start <= id.size();) {
    size_t end = std::min(id.find('/', start), id.size());
    std::string_view part(id.data() + start, end - start);
    ok = !part.empty() && part != "." && part != "..";
    start = end + 1;
  }
  if (!ok)
    throw Error(ErrorCode::kInvalidArgument,
                "FileSink: bucket id '" + id + "' is not a relative path of folder names inside the base path");
}

struct ParsedName {
  std::string uid;
  int64_t subtask = -1;
  int64_t counter = -1;
};

// Reads ".<prefix>-<uid>-<subtask>-<counter><suffix>.inprogress"; false for any other name.
bool parseHidden(const std::string& name, const OutputFileConfig& config, ParsedName& out) {
  const std::string& prefix = config.getPartPrefix();
  const std::string& suffix = config.getPartSuffix();
  const std::string tail = suffix + kInProgressSuffix;
  if (name.size() < 1 + prefix.size() + 1 + tail.size() || name[0] != '.' ||
      name.compare(1, prefix.size(), prefix) != 0 || name[1 + prefix.size()] != '-' ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  std::string middle = name.substr(prefix.size() + 2, name.size() - tail.size() - prefix.size() - 2);
  auto lastNumber = [&](int64_t& value) {
    size_t dash = middle.rfind('-');
    if (dash == std::string::npos || dash + 1 == middle.size()) return false;
    std::string digits = middle.substr(dash + 1);
    if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    value = std::stoll(digits);
    middle.resize(dash);
    return true;
  };
  if (!lastNumber(out.counter) || !lastNumber(out.subtask) || middle.empty()) return false;
  out.uid = middle;
  return true;
}

// The job's file system; the local one for an operator run outside a job (a test harness).
std::shared_ptr<core::FileSystem> fileSystemOf(const RuntimeContext& context) {
  return context.fileSystem() ? context.fileSystem() : core::FileSystem::local();
}

void syncFile(core::FileSystem& fs, const std::string& path, std::error_code& ec) {
  auto file = fs.openForWrite(path, core::FileSystem::WriteMode::kAppend, ec);
  if (!file) return;
  if (!(ec = file->sync())) ec = file->close();
}

class FileSinkCommitter final : public Committer<FileSinkCommittable> {
 public:
  FileSinkCommitter(std::string basePath, std::shared_ptr<core::FileSystem> fs)
      : basePath_(std::move(basePath)), fs_(std::move(fs)) {}

  // Renames each pending file to its name, then syncs the folders, so the names are
  // durable. A pending file that is gone while its name exists was published before.
  void commit(std::vector<CommitRequest<FileSinkCommittable>>& requests) override {
    std::set<std::string> folders;
    for (auto& request : requests) {
      const FileSinkCommittable& c = request.getCommittable();
      const std::string folder = join(basePath_, c.bucketId);
      std::string from = folder + "/" + c.pendingFile, to = folder + "/" + c.finalFile;
      std::error_code ec = fs_->rename(from, to);
      if (!ec) {
        folders.insert(folder);
        WEIR_SYNC_POINT_CALLBACK("FileSink::AfterPublish", &to);
        continue;
      }
      uint64_t size = 0;
      if (ec == std::errc::no_such_file_or_directory && !fs_->fileSize(to, size)) {
        request.signalAlreadyCommitted();
      } else if (ec == std::errc::no_such_file_or_directory) {
        request.signalFailedWithUnknownReason("FileSink: the part file '" + from + "' is gone, and '" + to +
                                              "' was never published");
      } else {
        request.signalFailedWithUnknownReason("FileSink: cannot publish '" + from + "' as '" + to +
                                              "': " + ec.message());
      }
    }
    for (const auto& folder : folders) {
      if (auto ec = fs_->syncDirectory(folder))
        throw Error(ErrorCode::kIo, "FileSink: cannot sync folder '" + folder + "': " + ec.message());
    }
  }

 private:
  std::string basePath_;
  std::shared_ptr<core::FileSystem> fs_;
};

}  // namespace

// ---- DateTimeBucketFormat ----

DateTimeBucketFormat::DateTimeBucketFormat(const std::string& pattern, const std::string& zoneId) {
  if (zoneId.empty()) utc_ = false;
  else if (zoneId == "UTC" || zoneId == "Z") utc_ = true;
  else
    throw Error(ErrorCode::kInvalidArgument,
                "DateTimeBucketAssigner: time zone '" + zoneId + "' is not supported; give \"\" (local) or \"UTC\"");
  for (size_t i = 0; i < pattern.size();) {
    char c = pattern[i];
    if (c == '\'') {  // 'quoted text'; '' is a quote
      size_t end = pattern.find('\'', i + 1);
      if (end == std::string::npos)
        throw Error(ErrorCode::kInvalidArgument, "DateTimeBucketAssigner: pattern '" + pattern + "' has an unclosed quote");
      if (end == i + 1) strftimePattern_ += '\'';
      for (size_t k = i + 1; k < end; ++k) strftimePattern_ += pattern[k] == '%' ? std::string("%%") : std::string(1, pattern[k]);
      i = end + 1;
      continue;
    }
    size_t run = 1;
    while (i + run < pattern.size() && pattern[i + run] == c) ++run;
    if (std::isalpha(static_cast<unsigned char>(c))) {
      std::string field(run, c);
      const char* spec = field == "yyyy" ? "%Y" : field == "yy" ? "%y" : field == "MM" ? "%m" : field == "dd" ? "%d"
                       : field == "HH" ? "%H" : field == "mm" ? "%M" : field == "ss" ? "%S" : nullptr;
      if (spec == nullptr)
        throw Error(ErrorCode::kInvalidArgument, "DateTimeBucketAssigner: pattern '" + pattern + "': '" + field +
                                                     "' is not supported (use yyyy, yy, MM, dd, HH, mm, ss)");
      strftimePattern_ += spec;
    } else {
      for (size_t k = 0; k < run; ++k) strftimePattern_ += c == '%' ? std::string("%%") : std::string(1, c);
    }
    i += run;
  }
  if (strftimePattern_.empty()) throw Error(ErrorCode::kInvalidArgument, "DateTimeBucketAssigner: the pattern is empty");
}

const std::string& DateTimeBucketFormat::format(int64_t millis) {
  int64_t second = millis >= 0 ? millis / 1000 : -((-millis + 999) / 1000);
  if (second == cachedSecond_) return cached_;
  time_t t = static_cast<time_t>(second);
  struct tm parts {};
  if (utc_) gmtime_r(&t, &parts);
  else localtime_r(&t, &parts);
  char text[256];
  size_t n = std::strftime(text, sizeof text, strftimePattern_.c_str(), &parts);
  cached_.assign(text, n);
  cachedSecond_ = second;
  return cached_;
}

// ---- FileSinkBuckets ----

struct FileSinkBuckets::PartFile {
  std::unique_ptr<core::WritableFile> file;
  std::string path;  // hidden
};

FileSinkBuckets::FileSinkBuckets(FileSinkSettings settings, RuntimeContext& context, PartFileEnds* ends)
    : settings_(std::move(settings)), ends_(ends), rollingPolicy_(*settings_.rollingPolicy), context_(context),
      fileSystem_(fileSystemOf(context)),
      bytesOut_(context.getMetricGroup().getIOMetricGroup().getNumBytesOutCounter()), uid_(newUid()) {
  if (auto ec = fileSystem_->createDirectories(settings_.basePath))
    fail("cannot create the base path", settings_.basePath, ec);
}

FileSinkBuckets::~FileSinkBuckets() = default;

void FileSinkBuckets::fail(const std::string& what, const std::string& path, std::error_code ec) const {
  throw Error(ErrorCode::kIo, "FileSink: " + what + " '" + path + "': " + ec.message());
}

FileSinkBuckets::Bucket& FileSinkBuckets::bucket(const std::string& id) {
  auto it = buckets_.find(id);
  if (it != buckets_.end()) return it->second;
  checkBucketId(id);
  Bucket& b = buckets_[id];
  b.id = id;
  b.folder = join(settings_.basePath, id);
  if (auto ec = fileSystem_->createDirectories(b.folder)) fail("cannot create bucket folder", b.folder, ec);
  // The folders made are durable once their parents are synced.
  namespace fs = std::filesystem;
  for (fs::path p = b.folder; p != fs::path(settings_.basePath).parent_path() && p.has_parent_path(); p = p.parent_path())
    foldersToSync_.push_back(p.parent_path().string());
  return b;
}

void FileSinkBuckets::openPartFile(Bucket& b, int64_t now) {
  if (b.file) roll(b);
  b.finalFile = settings_.outputFileConfig.getPartPrefix() + "-" + uid_ + "-" +
                std::to_string(context_.getIndexOfThisSubtask()) + "-" + std::to_string(nextPartCounter_++) +
                settings_.outputFileConfig.getPartSuffix();
  auto part = std::make_unique<PartFile>();
  part->path = b.folder + "/" + hiddenName(b.finalFile);
  std::error_code ec;
  part->file = fileSystem_->openForWrite(part->path, core::FileSystem::WriteMode::kTruncate, ec);
  if (!part->file) fail("cannot create part file", part->path, ec);
  b.file = std::move(part);
  b.written = 0;
  b.checkpointed = false;
  b.created = b.lastUpdate = now;
  b.buffer.clear();
  if (ends_ != nullptr) ends_->opened(b.id);
  foldersToSync_.push_back(b.folder);
  if (!timerSet_) {
    context_.processingTimeService().registerTimer(now + settings_.bucketCheckInterval, this);
    timerSet_ = true;
  }
}

void FileSinkBuckets::writeBuffer(Bucket& b) {
  if (b.buffer.empty()) return;
  if (auto ec = b.file->file->append(b.buffer)) fail("cannot write", b.file->path, ec);
  b.written += b.buffer.size();
  bytesOut_.inc(b.buffer.size());
  b.buffer.clear();
}

void FileSinkBuckets::roll(Bucket& b) {
  if (ends_ != nullptr) ends_->closing(b.id, b.buffer);
  writeBuffer(b);
  std::error_code ec = b.file->file->sync();
  if (!ec) ec = b.file->file->close();
  if (ec) fail("cannot close", b.file->path, ec);
  rolled_.push_back({b.id, hiddenName(b.finalFile), b.finalFile});
  b.file.reset();
}

void FileSinkBuckets::syncNames() {
  std::sort(foldersToSync_.begin(), foldersToSync_.end());
  foldersToSync_.erase(std::unique(foldersToSync_.begin(), foldersToSync_.end()), foldersToSync_.end());
  for (const auto& folder : foldersToSync_)
    if (auto ec = fileSystem_->syncDirectory(folder)) fail("cannot sync folder", folder, ec);
  foldersToSync_.clear();
}

void FileSinkBuckets::expectPresent(const std::string& path, bool covered) const {
  uint64_t size = 0;
  std::error_code ec = fileSystem_->fileSize(path, size);
  if (ec == std::errc::no_such_file_or_directory && covered)
    throw Error(ErrorCode::kIo, "FileSink: the part file '" + path +
                                    "' disappeared while it was written, after a completed checkpoint covered part "
                                    "of it: those records are lost, and no restore can write them again");
  if (ec == std::errc::no_such_file_or_directory)
    throw Error(ErrorCode::kIo, "FileSink: the part file '" + path +
                                    "' disappeared while it was written; the checkpoint is declined and the job "
                                    "resumes from the last one");
  if (ec) fail("cannot look at", path, ec);
}

std::vector<FileSinkCommittable> FileSinkBuckets::prepareCommit(bool endOfInput) {
  for (const auto& c : rolled_) expectPresent(join(settings_.basePath, c.bucketId) + "/" + c.pendingFile, false);
  for (auto& [id, b] : buckets_) {
    if (!b.file) continue;
    expectPresent(b.file->path, b.checkpointed);
    if (endOfInput || rollingPolicy_.shouldRollOnCheckpoint(info(b))) {
      roll(b);
    } else {
      writeBuffer(b);
      if (auto ec = b.file->file->sync()) fail("cannot sync", b.file->path, ec);
    }
  }
  syncNames();
  WEIR_COLD_SYNC_POINT_CALLBACK("FileSink::AfterPrepareCommit", nullptr);
  return std::exchange(rolled_, {});
}

void FileSinkBuckets::onProcessingTime(int64_t time) {
  timerSet_ = false;
  bool open = false;
  for (auto& [id, b] : buckets_) {
    if (b.file && rollingPolicy_.shouldRollOnProcessingTime(info(b), time)) roll(b);
    open = open || b.file != nullptr;
  }
  if (open) {
    context_.processingTimeService().registerTimer(time + settings_.bucketCheckInterval, this);
    timerSet_ = true;
  }
}

void FileSinkBuckets::snapshotState() {
  FileSinkWriterState state;
  state.uid = uid_;
  state.subtask = context_.getIndexOfThisSubtask();
  state.nextPartCounter = nextPartCounter_;
  for (auto& [id, b] : buckets_) {
    if (!b.file) continue;
    state.inProgress.push_back({id, b.finalFile, static_cast<int64_t>(b.written)});
    b.checkpointed = true;
  }
  state_->update({std::move(state)});
}

void FileSinkBuckets::initializeState(FunctionInitializationContext& context) {
  state_ = &context.getOperatorStateStore().getUnionListState(
      ListStateDescriptor<FileSinkWriterState>("weir.file-sink.writers"));
  if (context.isRestored()) {
    const int parallelism = context_.getNumberOfParallelSubtasks();
    const int index = context_.getIndexOfThisSubtask();
    std::map<std::string, int64_t> nextPartCounters;
    std::vector<FileSinkWriterState> writers = state_->get();
    for (const auto& w : writers) nextPartCounters[w.uid] = w.nextPartCounter;
    // The writers of the restored checkpoint whose subtask index maps to this subtask.
    for (const auto& w : writers)
      if (w.subtask % parallelism == index)
        for (const auto& f : w.inProgress) publishRestored(f);
    removeUncovered(nextPartCounters);
  }
  state_->clear();
}

void FileSinkBuckets::publishRestored(const FileSinkInProgressFile& f) {
  checkBucketId(f.bucketId);
  const std::string folder = join(settings_.basePath, f.bucketId);
  const std::string hidden = folder + "/" + hiddenName(f.finalFile), published = folder + "/" + f.finalFile;
  uint64_t size = 0;
  std::error_code ec = fileSystem_->fileSize(hidden, size);
  if (ec == std::errc::no_such_file_or_directory) {
    if (!fileSystem_->fileSize(published, size)) return;  // published by an earlier restore
    throw Error(ErrorCode::kIo, "FileSink: the part file '" + hidden + "' that the restored checkpoint was writing is gone");
  }
  if (ec) fail("cannot read", hidden, ec);
  if (size < static_cast<uint64_t>(f.size))
    throw Error(ErrorCode::kIo, "FileSink: the part file '" + hidden + "' holds " + std::to_string(size) +
                                    " bytes, fewer than the " + std::to_string(f.size) +
                                    " bytes the restored checkpoint covers");
  if ((ec = fileSystem_->truncate(hidden, static_cast<uint64_t>(f.size)))) fail("cannot truncate", hidden, ec);
  syncFile(*fileSystem_, hidden, ec);
  if (ec) fail("cannot sync", hidden, ec);
  if ((ec = fileSystem_->rename(hidden, published))) fail("cannot publish", hidden, ec);
  if ((ec = fileSystem_->syncDirectory(folder))) fail("cannot sync folder", folder, ec);
}

void FileSinkBuckets::removeUncovered(const std::map<std::string, int64_t>& nextPartCounters) {
  const int parallelism = context_.getNumberOfParallelSubtasks();
  const int index = context_.getIndexOfThisSubtask();
  size_t removed = 0;
  std::vector<std::pair<std::string, int>> folders{{settings_.basePath, 0}};
  while (!folders.empty()) {
    auto [folder, depth] = folders.back();
    folders.pop_back();
    std::vector<std::string> names;
    if (auto ec = fileSystem_->list(folder, names)) fail("cannot list", folder, ec);
    for (const auto& name : names) {
      const std::string path = folder + "/" + name;
      uint64_t size = 0;
      std::error_code ec = fileSystem_->fileSize(path, size);
      if (ec == core::notARegularFile()) {
        if (depth < 32) folders.push_back({path, depth + 1});
        continue;
      }
      ParsedName parsed;
      if (ec || !parseHidden(name, settings_.outputFileConfig, parsed)) continue;
      if (parsed.subtask % parallelism != index) continue;  // another subtask's
      auto it = nextPartCounters.find(parsed.uid);
      if (it != nextPartCounters.end() && parsed.counter < it->second) continue;  // covered: a pending file
      if ((ec = fileSystem_->remove(path)) && ec != std::errc::no_such_file_or_directory) fail("cannot remove", path, ec);
      ++removed;
    }
  }
  if (removed > 0)
    std::fprintf(stderr, "weir: %s: removed %zu hidden part file%s under '%s' that no completed checkpoint covers\n",
                 context_.getTaskNameWithSubtasks().c_str(), removed, removed == 1 ? "" : "s",
                 settings_.basePath.c_str());
}

void FileSinkBuckets::close() {
  for (auto& [id, b] : buckets_) b.file.reset();  // hidden; the next run removes them
  current_ = nullptr;
}

std::unique_ptr<Committer<FileSinkCommittable>> FileSinkBuckets::makeCommitter(const FileSinkSettings& settings,
                                                                               RuntimeContext& context) {
  return std::make_unique<FileSinkCommitter>(settings.basePath, fileSystemOf(context));
}

}  // namespace weir::detail
