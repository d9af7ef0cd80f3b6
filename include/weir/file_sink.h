// FileSink (Flink's, row and bulk formats): writes records as bytes into part files under a base
// path, exactly once. A part file is written hidden (".<name>.inprogress"), closed when
// the rolling policy says, and published under its name by a rename, fsynced, when the
// next checkpoint completes; a bounded job publishes the rest when it finishes. After
// any failure the published files hold every record of the completed checkpoints once
// and nothing else. docs/sinks.md says how.
//
//   stream.sinkTo(FileSink<std::string>::forRowFormat("/data/out", SimpleStringEncoder<std::string>())
//                     .withRollingPolicy(DefaultRollingPolicy::builder()
//                                            .withMaxPartSize(uint64_t{1} << 30)
//                                            .withRolloverInterval(std::chrono::minutes(15))
//                                            .build())
//                     .build());
//
// One base path (and part prefix) belongs to one job: a resumed job removes the hidden
// files under it that its checkpoint does not cover.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "weir/bucket_assigner.h"
#include "weir/bulk_writer.h"
#include "weir/detail/connectors/file_sink_buckets.h"
#include "weir/encoder.h"
#include "weir/output_file_config.h"
#include "weir/rolling_policy.h"
#include "weir/two_phase_committing_sink.h"

namespace weir {

template <class T>
class FileSink final : public TwoPhaseCommittingSink<T, FileSinkCommittable> {
  // What both builders set.
  template <class Self>
  class BuilderBase {
   public:
    // Where the buckets go (default: DateTimeBucketAssigner, a folder per hour).
    template <class A>
    Self& withBucketAssigner(A assigner) {
      static_assert(std::is_base_of_v<BucketAssigner<T>, A>, "withBucketAssigner(a): a must derive from BucketAssigner<T>");
      sink_.assigner_ = [assigner] { return std::make_unique<A>(assigner); };
      return static_cast<Self&>(*this);
    }
    Self& withOutputFileConfig(OutputFileConfig config) {
      sink_.settings_.outputFileConfig = std::move(config);
      return static_cast<Self&>(*this);
    }
    // How often the rolling policy's times are checked (default 60 s).
    Self& withBucketCheckInterval(std::chrono::milliseconds interval) {
      if (interval.count() <= 0)
        throw Error(ErrorCode::kInvalidArgument, "FileSink: the bucket check interval must be positive");
      sink_.settings_.bucketCheckInterval = interval.count();
      return static_cast<Self&>(*this);
    }
    FileSink build() const { return sink_; }

   protected:
    explicit BuilderBase(std::string basePath, std::shared_ptr<const RollingPolicy> policy) {
      if (basePath.empty()) throw Error(ErrorCode::kInvalidArgument, "FileSink: the base path is empty");
      sink_.settings_.basePath = std::move(basePath);
      sink_.settings_.rollingPolicy = std::move(policy);
      sink_.assigner_ = [] { return std::make_unique<DateTimeBucketAssigner<T>>(); };
    }
    FileSink sink_;
  };

 public:
  class RowFormatBuilder final : public BuilderBase<RowFormatBuilder> {
   public:
    // When part files roll (default: DefaultRollingPolicy's defaults).
    template <class P>
    RowFormatBuilder& withRollingPolicy(P policy) {
      static_assert(std::is_base_of_v<RollingPolicy, P>, "withRollingPolicy(p): p must derive from RollingPolicy");
      this->sink_.settings_.rollingPolicy = std::make_shared<const P>(std::move(policy));
      return *this;
    }

   private:
    friend class FileSink;
    RowFormatBuilder(std::string basePath, std::function<std::unique_ptr<Encoder<T>>()> encoder)
        : BuilderBase<RowFormatBuilder>(std::move(basePath), std::make_shared<const DefaultRollingPolicy>()) {
      this->sink_.encoder_ = std::move(encoder);
    }
  };

  // A bulk format's part files roll at every checkpoint (OnCheckpointRollingPolicy), as
  // in Flink: a part file is whole when published, and never resumed.
  class BulkFormatBuilder final : public BuilderBase<BulkFormatBuilder> {
   private:
    friend class FileSink;
    BulkFormatBuilder(std::string basePath, std::function<std::unique_ptr<typename BulkWriter<T>::Factory>()> factory)
        : BuilderBase<BulkFormatBuilder>(std::move(basePath),
                                         std::make_shared<const OnCheckpointRollingPolicy>(OnCheckpointRollingPolicy::build())) {
      this->sink_.bulkFactory_ = std::move(factory);
    }
  };

  // Each record through `encoder` (an Encoder<T>; each subtask gets a copy) into part
  // files under `basePath`.
  template <class E>
  static RowFormatBuilder forRowFormat(std::string basePath, E encoder) {
    static_assert(std::is_base_of_v<Encoder<T>, E>, "forRowFormat(path, e): e must derive from Encoder<T>");
    return RowFormatBuilder(std::move(basePath), [encoder] { return std::make_unique<E>(encoder); });
  }
  // Each part file written by a BulkWriter that `factory` (a BulkWriter<T>::Factory; each
  // subtask gets a copy) makes for it.
  template <class F>
  static BulkFormatBuilder forBulkFormat(std::string basePath, F factory) {
    static_assert(std::is_base_of_v<typename BulkWriter<T>::Factory, F>,
                  "forBulkFormat(path, f): f must derive from BulkWriter<T>::Factory");
    return BulkFormatBuilder(std::move(basePath), [factory] { return std::make_unique<F>(factory); });
  }

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override {
    if (bulkFactory_) return std::make_unique<Writer>(settings_, context, nullptr, bulkFactory_(), assigner_());
    return std::make_unique<Writer>(settings_, context, encoder_(), nullptr, assigner_());
  }
  std::unique_ptr<Committer<FileSinkCommittable>> createCommitter(RuntimeContext& context) const override {
    return detail::FileSinkBuckets::makeCommitter(settings_, context);
  }

 private:
  FileSink() = default;

  class Writer final : public PrecommittingSinkWriter<T, FileSinkCommittable>,
                       public CheckpointedFunction,
                       private detail::PartFileEnds {
   public:
    // One of `encoder` (a row format) and `bulk` (a bulk format).
    Writer(const detail::FileSinkSettings& settings, RuntimeContext& context, std::unique_ptr<Encoder<T>> encoder,
           std::unique_ptr<typename BulkWriter<T>::Factory> bulk, std::unique_ptr<BucketAssigner<T>> assigner)
        : buckets_(settings, context, bulk ? this : nullptr), clock_(context.clock()), encoder_(std::move(encoder)),
          bulkFactory_(std::move(bulk)), assigner_(std::move(assigner)) {}

    void write(const T& record) override { writeBatch(std::span<const T>(&record, 1)); }
    void writeBatch(std::span<T> records) override { writeBatch(std::span<const T>(records)); }
    void flush(bool endOfInput) override { endOfInput_ = endOfInput; }
    std::vector<FileSinkCommittable> prepareCommit() override { return buckets_.prepareCommit(endOfInput_); }
    void initializeState(FunctionInitializationContext& context) override { buckets_.initializeState(context); }
    void snapshotState(const FunctionSnapshotContext&) override { buckets_.snapshotState(); }
    void close() override { buckets_.close(); }

   private:
    void writeBatch(std::span<const T> records) {
      const int64_t now = clock_->currentTimeMillis();
      const typename BucketAssigner<T>::Context context(now);
      for (const T& r : records) {
        const std::string& bucketId = assigner_->getBucketId(r, context);
        std::string& buffer = buckets_.bufferFor(bucketId, now);
        if (encoder_) {
          encoder_->encode(r, buffer);
        } else {
          bulkWriters_.at(bucketId)->addElement(r, buffer);
        }
        buckets_.recordWritten(now);
      }
    }
    void opened(const std::string& bucketId) override { bulkWriters_[bucketId] = bulkFactory_->create(); }
    void closing(const std::string& bucketId, std::string& buffer) override {
      auto it = bulkWriters_.find(bucketId);
      it->second->finish(buffer);
      bulkWriters_.erase(it);
    }

    detail::FileSinkBuckets buckets_;
    std::shared_ptr<const Clock> clock_;
    std::unique_ptr<Encoder<T>> encoder_;
    std::unique_ptr<typename BulkWriter<T>::Factory> bulkFactory_;
    std::map<std::string, std::unique_ptr<BulkWriter<T>>> bulkWriters_;  // by bucket, of its open part file
    std::unique_ptr<BucketAssigner<T>> assigner_;
    bool endOfInput_ = false;
  };

  detail::FileSinkSettings settings_;
  std::function<std::unique_ptr<Encoder<T>>()> encoder_;
  std::function<std::unique_ptr<typename BulkWriter<T>::Factory>()> bulkFactory_;
  std::function<std::unique_ptr<BucketAssigner<T>>()> assigner_;
};

}  // namespace weir
