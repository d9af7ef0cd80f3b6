// Reads Kafka topics (Flink's KafkaSource) through librdkafka. Partitions are the
// splits, each read by one subtask; where each one got to is in the checkpoint, not in
// the consumer group, so a job resumes at exactly the offsets its checkpoint covers.
//
//   auto source = KafkaSource<std::string>::builder()
//                     .setBootstrapServers("localhost:9092")
//                     .setTopics({"clicks"})
//                     .setStartingOffsets(OffsetsInitializer::earliest())
//                     .setValueOnlyDeserializer(SimpleStringSchema())
//                     .build();
//   env.fromSource(source, WatermarkStrategy<std::string>::forBoundedOutOfOrderness(5s), "clicks");
//
// Records carry their Kafka timestamp: a WatermarkStrategy without a timestamp assigner
// uses it, and watermarks are made per partition (an idle one, withIdleness, does not
// hold them back).
#pragma once

#include <chrono>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/bad_record.h"
#include "weir/detail/connectors/kafka_partition_reader.h"
#include "weir/error.h"
#include "weir/kafka_record_deserialization_schema.h"
#include "weir/offsets_initializer.h"
#include "weir/source.h"

namespace weir {

namespace detail {

template <class T>
class KafkaSourceReader final : public SourceReader<T> {
 public:
  KafkaSourceReader(std::shared_ptr<const KafkaSourceConfig> config,
                    std::unique_ptr<KafkaRecordDeserializationSchema<T>> deserializer, const SourceReaderContext& context)
      : partitions_(std::move(config), context),
        deserializer_(std::move(deserializer)),
        badRecords_(context.badRecords != nullptr ? context.badRecords : &failing_) {}

  InputStatus pollNext(std::vector<T>& out, size_t maxRecords) override {
    timestamps_.clear();
    const size_t before = out.size();
    Collector<T> collector(&out, &timestamps_, nullptr, std::numeric_limits<size_t>::max());
    InputStatus status = partitions_.poll(maxRecords, [&](const ConsumerRecord& record) -> size_t {
      const size_t at = out.size();
      collector.setTimestamp(true, record.timestamp);
      try {
        deserializer_->deserialize(record, collector);
      } catch (const SerializationError& e) {
        out.resize(at);
        timestamps_.resize(at - before);
        badRecords_->handle(std::string(record.topic) + "-" + std::to_string(record.partition), record.offset,
                            e.what(), record.value.value_or(std::string_view()));
      }
      return out.size() - at;
    });
    return status;
  }
  std::chrono::steady_clock::time_point nextPollTime() const override { return partitions_.nextPollTime(); }
  std::span<const SplitRun> splitRuns() const override { return partitions_.runs(); }
  std::span<const int64_t> recordTimestamps() const override { return timestamps_; }
  std::vector<std::string> snapshotState(int64_t checkpointId) override {
    return partitions_.snapshotState(checkpointId);
  }
  void notifyCheckpointComplete(int64_t checkpointId) override { partitions_.commitOffsets(checkpointId); }
  void addSplits(std::vector<std::string> splits) override { partitions_.addSplits(splits); }
  bool pauseOrResumeSplits(const std::vector<std::string>& toPause, const std::vector<std::string>& toResume) override {
    partitions_.pauseOrResume(toPause, toResume);
    return true;
  }
  void close() override { partitions_.close(); }

 private:
  KafkaPartitionReader partitions_;
  std::unique_ptr<KafkaRecordDeserializationSchema<T>> deserializer_;
  BadRecordHandler failing_;  // outside a job: FAIL
  BadRecordHandler* badRecords_;
  std::vector<int64_t> timestamps_;
};

}  // namespace detail

template <class T>
class KafkaSource final : public Source<T> {
  using MakeDeserializer = std::function<std::unique_ptr<KafkaRecordDeserializationSchema<T>>()>;

 public:
  class Builder {
   public:
    Builder& setBootstrapServers(std::string servers) {
      config_.bootstrapServers = std::move(servers);
      return *this;
    }
    Builder& setTopics(std::vector<std::string> topics) {
      config_.topics = std::move(topics);
      return *this;
    }
    // Every topic whose whole name matches `regex` (ECMAScript), also those created
    // later when partition discovery is on.
    Builder& setTopicPattern(std::string regex) {
      config_.topicPattern = std::move(regex);
      return *this;
    }
    Builder& setPartitions(std::vector<std::pair<std::string, int32_t>> partitions) {
      config_.partitions = std::move(partitions);
      return *this;
    }
    // The consumer group: for committedOffsets() (weir keeps its offsets in checkpoints).
    Builder& setGroupId(std::string groupId) {
      config_.groupId = std::move(groupId);
      return *this;
    }
    // Default: earliest().
    Builder& setStartingOffsets(OffsetsInitializer offsets) {
      config_.starting = std::move(offsets);
      return *this;
    }
    // A bounded source: each partition is read up to `stopping` (decided when the
    // partition is first read), then the source ends.
    Builder& setBounded(OffsetsInitializer stopping) {
      config_.stopping = std::move(stopping);
      config_.bounded = true;
      return *this;
    }
    // Unbounded, but each partition stops at `stopping` (the source does not end).
    Builder& setUnbounded(OffsetsInitializer stopping) {
      config_.stopping = std::move(stopping);
      config_.bounded = false;
      return *this;
    }
    // A KafkaRecordDeserializationSchema<T> that sees the whole record.
    template <class Schema>
    Builder& setDeserializer(Schema schema) {
      static_assert(std::is_base_of_v<KafkaRecordDeserializationSchema<T>, Schema>,
                    "setDeserializer(s): s must derive from KafkaRecordDeserializationSchema<T>");
      makeDeserializer_ = [schema] { return std::make_unique<Schema>(schema); };
      return *this;
    }
    // A DeserializationSchema<T> of the record's value.
    template <class Schema>
    Builder& setValueOnlyDeserializer(Schema schema) {
      return setDeserializer(KafkaRecordDeserializationSchema<T>::valueOnly(std::move(schema)));
    }
    // Any librdkafka property ("fetch.max.bytes", "security.protocol", ...;
    // "socket.timeout.ms", default 10000 here, also bounds the source's metadata and
    // offset lookups: an unreachable cluster is an error after that long), and two of
    // Flink's own: "partition.discovery.interval.ms" (0: off, the default for a bounded
    // source; 300000 otherwise) and "commit.offsets.on.checkpoint" (true or false;
    // default true with a group id): each completed checkpoint's offsets are committed
    // to the group, for monitoring (lag); a restore reads the checkpoint's, never these.
    Builder& setProperty(const std::string& key, std::string value) {
      if (key == "commit.offsets.on.checkpoint") {
        if (value != "true" && value != "false")
          throw Error(ErrorCode::kInvalidArgument,
                      "kafka source: commit.offsets.on.checkpoint must be true or false, got '" + value + "'");
        commitOffsets_ = value == "true";
      } else if (key == "partition.discovery.interval.ms") {
        try {
          discovery_ = std::chrono::milliseconds(std::stoll(value));
        } catch (const std::exception&) {
          throw Error(ErrorCode::kInvalidArgument, "kafka source: partition.discovery.interval.ms must be a number of ms, got '" + value + "'");
        }
      } else {
        config_.properties[key] = std::move(value);
      }
      return *this;
    }
    Builder& setBadRecordPolicy(BadRecordPolicy policy) {
      policy_ = policy;
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming what is missing or wrong.
    KafkaSource build() const {
      if (!makeDeserializer_)
        throw Error(ErrorCode::kInvalidArgument, "kafka source: setDeserializer(...) or setValueOnlyDeserializer(...) is required");
      auto config = std::make_shared<detail::KafkaSourceConfig>(config_);
      config->discoveryInterval =
          discovery_.value_or(config->bounded ? std::chrono::milliseconds(0) : std::chrono::milliseconds(300000));
      if (commitOffsets_ && *commitOffsets_ && config->groupId.empty())
        throw Error(ErrorCode::kInvalidArgument, "kafka source: commit.offsets.on.checkpoint needs setGroupId(...)");
      config->commitOffsetsOnCheckpoint = commitOffsets_.value_or(!config->groupId.empty());
      if (auto it = config->properties.find("socket.timeout.ms"); it != config->properties.end())
        config->requestTimeout = std::chrono::milliseconds(std::atoll(it->second.c_str()));
      config->validate();
      return KafkaSource(std::move(config), makeDeserializer_, policy_);
    }

   private:
    detail::KafkaSourceConfig config_;
    std::optional<std::chrono::milliseconds> discovery_;
    std::optional<bool> commitOffsets_;
    MakeDeserializer makeDeserializer_;
    BadRecordPolicy policy_ = BadRecordPolicy::FAIL;
  };

  static Builder builder() { return Builder(); }

  Boundedness getBoundedness() const override {
    return config_->bounded ? Boundedness::BOUNDED : Boundedness::CONTINUOUS_UNBOUNDED;
  }
  bool supportsCheckpointing() const override { return true; }
  bool carriesTimestamps() const override { return true; }
  BadRecordPolicy badRecordPolicy() const override { return policy_; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const override {
    return detail::createKafkaEnumerator(config_, parallelism);
  }
  std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext& context) const override {
    return std::make_unique<detail::KafkaSourceReader<T>>(config_, makeDeserializer_(), context);
  }

 private:
  KafkaSource(std::shared_ptr<const detail::KafkaSourceConfig> config, MakeDeserializer make, BadRecordPolicy policy)
      : config_(std::move(config)), makeDeserializer_(std::move(make)), policy_(policy) {}
  std::shared_ptr<const detail::KafkaSourceConfig> config_;
  MakeDeserializer makeDeserializer_;
  BadRecordPolicy policy_;
};

}  // namespace weir
