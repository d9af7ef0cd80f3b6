// The machinery of one FileSink subtask (Flink's Buckets): the part files it writes, one
// per bucket, their rolling, hiding and publishing, and its share of the checkpoint.
// FileSink's writer encodes the records; everything about files is here, compiled once
// (src/connectors/file/file_sink.cc), and goes through the job's core::FileSystem.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weir/checkpointed_function.h"
#include "weir/committer.h"
#include "weir/metrics.h"
#include "weir/output_file_config.h"
#include "weir/rolling_policy.h"
#include "weir/runtime_context.h"
#include "weir/serializer.h"

namespace weir {

// What a FileSink commits: a closed part file, hidden as `pendingFile`, to be published
// as `finalFile` in folder `bucketId` of the base path.
struct FileSinkCommittable {
  std::string bucketId;
  std::string pendingFile;
  std::string finalFile;
};
WEIR_STRUCT(FileSinkCommittable, bucketId, pendingFile, finalFile);

namespace detail {

// A part file open across a checkpoint: its name (published) and the bytes the
// checkpoint covers.
struct FileSinkInProgressFile {
  std::string bucketId;
  std::string finalFile;
  int64_t size = 0;
};
WEIR_STRUCT(FileSinkInProgressFile, bucketId, finalFile, size);

// One subtask's writer in a checkpoint (union state: every subtask sees every writer's).
struct FileSinkWriterState {
  std::string uid;
  int32_t subtask = 0;
  int64_t nextPartCounter = 0;
  std::vector<FileSinkInProgressFile> inProgress;
};
WEIR_STRUCT(FileSinkWriterState, uid, subtask, nextPartCounter, inProgress);

struct FileSinkSettings {
  std::string basePath;
  OutputFileConfig outputFileConfig;
  std::shared_ptr<const RollingPolicy> rollingPolicy;
  int64_t bucketCheckInterval = 60'000;
};

// What a bulk format does at the ends of a part file (FileSink::forBulkFormat).
class PartFileEnds {
 public:
  virtual ~PartFileEnds() = default;
  // Bucket `bucketId` began a new part file.
  virtual void opened(const std::string& bucketId) = 0;
  // Its part file is about to close: the last bytes go into `buffer`.
  virtual void closing(const std::string& bucketId, std::string& buffer) = 0;
};

class FileSinkBuckets final : public ProcessingTimeCallback {
 public:
  // Makes the base path if missing; throws weir::Error (kIo) naming it when it cannot.
  // `ends` (null for a row format) hears when part files open and close.
  FileSinkBuckets(FileSinkSettings settings, RuntimeContext& context, PartFileEnds* ends = nullptr);
  ~FileSinkBuckets() override;
  FileSinkBuckets(const FileSinkBuckets&) = delete;
  FileSinkBuckets& operator=(const FileSinkBuckets&) = delete;

  // Where the next record of bucket `bucketId` is encoded: the buffer of the bucket's
  // part file, opened (or rolled, as the policy says) first. Then call recordWritten.
  std::string& bufferFor(const std::string& bucketId, int64_t now) {
    if (current_ == nullptr || current_->id != bucketId) current_ = &bucket(bucketId);
    if (current_->file == nullptr || rollingPolicy_.shouldRollOnEvent(info(*current_))) openPartFile(*current_, now);
    return current_->buffer;
  }
  // The record just encoded into bufferFor's buffer.
  void recordWritten(int64_t now) {
    current_->lastUpdate = now;
    if (current_->buffer.size() >= kBufferBytes) writeBuffer(*current_);
  }

  // At a barrier (or, with `endOfInput`, at the end): every part file is written out and
  // synced; those the policy rolls (all at the end) are closed, and returned with the
  // files rolled since the last call, to be published when the checkpoint completes.
  // A part file that disappeared meanwhile (removed by someone else) fails it: the
  // checkpoint is declined and the job resumes from the last one, writing it again
  // (unless a completed checkpoint covered part of it: that part is lost, and said so).
  std::vector<FileSinkCommittable> prepareCommit(bool endOfInput);
  // Restores the writers of the restored checkpoint this subtask now owns: their part
  // files open at the checkpoint are cut back to its length and published (what they
  // hold up to there is committed), and their hidden files that no completed checkpoint
  // covers are removed.
  void initializeState(FunctionInitializationContext& context);
  // This writer into the checkpoint (after prepareCommit).
  void snapshotState();
  void onProcessingTime(int64_t time) override;
  // Closes the part files, leaving them hidden (what no checkpoint covers stays unpublished).
  void close();

  // Publishes committables: the committer's work (FileSink::createCommitter).
  static std::unique_ptr<Committer<FileSinkCommittable>> makeCommitter(const FileSinkSettings& settings,
                                                                       RuntimeContext& context);

 private:
  static constexpr size_t kBufferBytes = 64 * 1024;
  struct PartFile;
  struct Bucket {
    std::string id;
    std::string folder;  // base path / id
    std::unique_ptr<PartFile> file;
    std::string finalFile;
    uint64_t written = 0;  // bytes in the file (the buffer holds more)
    bool checkpointed = false;  // a checkpoint recorded the file in progress
    int64_t created = 0;
    int64_t lastUpdate = 0;
    std::string buffer;
  };

  Bucket& bucket(const std::string& id);
  PartFileInfo info(const Bucket& b) const {
    return PartFileInfo(b.id, b.created, b.written + b.buffer.size(), b.lastUpdate);
  }
  void openPartFile(Bucket& b, int64_t now);
  void writeBuffer(Bucket& b);
  void roll(Bucket& b);
  void syncNames();
  void publishRestored(const FileSinkInProgressFile& file);
  void removeUncovered(const std::map<std::string, int64_t>& nextPartCounters);
  [[noreturn]] void fail(const std::string& what, const std::string& path, std::error_code ec) const;

  // Throws when the part file at `path` is gone; `covered`: a checkpoint holds part of it.
  void expectPresent(const std::string& path, bool covered) const;

  FileSinkSettings settings_;
  PartFileEnds* ends_;
  const RollingPolicy& rollingPolicy_;
  RuntimeContext& context_;
  std::shared_ptr<core::FileSystem> fileSystem_;
  Counter bytesOut_;
  std::string uid_;
  int64_t nextPartCounter_ = 0;
  std::map<std::string, Bucket> buckets_;
  Bucket* current_ = nullptr;
  std::vector<FileSinkCommittable> rolled_;  // closed since the last prepareCommit
  std::vector<std::string> foldersToSync_;   // names made in them since the last prepareCommit
  ListState<FileSinkWriterState>* state_ = nullptr;
  bool timerSet_ = false;
};

}  // namespace detail
}  // namespace weir
