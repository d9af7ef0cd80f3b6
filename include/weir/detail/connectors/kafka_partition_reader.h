// The machinery of KafkaSource (weir/kafka_source.h), compiled once in
// src/connectors/kafka/: its configuration, partitions as splits, the enumerator that
// finds them and hands each to one reader, and the librdkafka consumer of one reader.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weir/kafka_record_deserialization_schema.h"
#include "weir/offsets_initializer.h"
#include "weir/source.h"

struct rd_kafka_s;
struct rd_kafka_queue_s;
struct rd_kafka_message_s;

namespace weir::detail {

struct KafkaSourceConfig {
  std::string bootstrapServers;
  std::vector<std::string> topics;
  std::string topicPattern;                                 // an ECMAScript regex over topic names
  std::vector<std::pair<std::string, int32_t>> partitions;  // setPartitions
  std::string groupId;
  OffsetsInitializer starting = OffsetsInitializer::earliest();
  std::optional<OffsetsInitializer> stopping;  // setBounded / setUnbounded
  bool bounded = false;
  std::map<std::string, std::string> properties;  // passed to librdkafka as they are
  std::chrono::milliseconds discoveryInterval{0};  // 0: the partitions found at the start only
  bool commitOffsetsOnCheckpoint = false;           // to groupId, when a checkpoint completes
  std::chrono::milliseconds requestTimeout{10000};  // metadata and offset lookups
  // Checks the configuration and every property (librdkafka's own message, named);
  // throws weir::Error (kInvalidArgument).
  void validate() const;
};

// One partition: a split. Offsets are resolved (concrete) once the split is read.
struct KafkaPartitionSplit final : SourceSplit {
  static constexpr int64_t kUnresolved = -1;  // the source's OffsetsInitializer decides
  static constexpr int64_t kNoStop = INT64_MAX;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = kUnresolved;           // of the next record to read
  int64_t stoppingOffset = kUnresolved;   // bounded: of the first record not read; kNoStop: none
  std::string splitId() const override { return topic + "-" + std::to_string(partition); }
  std::string encode() const;
  // Throws weir::Error (kCheckpoint) when `bytes` are not a Kafka split's state.
  static KafkaPartitionSplit decode(const std::string& bytes);
};

// Finds the partitions (and, with discovery, new ones as they appear) and hands each to
// the reader Flink's KafkaSourceEnumerator would: the topic's hash picks the first
// reader, its partitions go round from there. Throws weir::Error naming the problem:
// the bootstrap servers unreachable within the request timeout, a topic that does not
// exist, no partition at all.
std::unique_ptr<SplitEnumerator> createKafkaEnumerator(std::shared_ptr<const KafkaSourceConfig> config,
                                                       int parallelism);

// The reader a subtask Flink's enumerator gives partition `partition` of `topic` to.
int kafkaPartitionOwner(const std::string& topic, int32_t partition, int parallelism);

// One reader's librdkafka consumer over the partitions it holds: it resolves each new
// split's offsets, reads them all at once, tracks each one's next offset for the
// checkpoint and releases a bounded split at its stopping offset.
class KafkaPartitionReader {
 public:
  KafkaPartitionReader(std::shared_ptr<const KafkaSourceConfig> config, const SourceReaderContext& context);
  ~KafkaPartitionReader();
  KafkaPartitionReader(const KafkaPartitionReader&) = delete;
  KafkaPartitionReader& operator=(const KafkaPartitionReader&) = delete;

  // Takes the enumerator's new splits, then reads up to `maxRecords` Kafka records,
  // handing each to `visit` in order, which returns how many records of the job it made.
  InputStatus poll(size_t maxRecords, const std::function<size_t(const ConsumerRecord&)>& visit);
  // After poll: which split the records it made came from, as runs in order.
  std::span<const SplitRun> runs() const { return runs_; }
  // After NOTHING_AVAILABLE: when to poll again. Soon, unless librdkafka wakes the
  // subtask when records arrive (SourceReaderContext::wakeUp); then only to look for
  // new splits.
  std::chrono::steady_clock::time_point nextPollTime() const;
  // The splits' state; with commitOffsetsOnCheckpoint, also keeps their offsets for
  // commitOffsets(checkpointId).
  std::vector<std::string> snapshotState(int64_t checkpointId);
  void addSplits(const std::vector<std::string>& splits);
  // Watermark alignment: stops fetching the partitions (split ids) `toPause` and fetches
  // `toResume` again; unknown and finished ones are skipped. Records of a paused
  // partition already fetched are dropped by librdkafka and fetched again on resume.
  void pauseOrResume(const std::vector<std::string>& toPause, const std::vector<std::string>& toResume);
  // Commits the offsets checkpoint `checkpointId` holds to the group, asynchronously,
  // and forgets those of older checkpoints. A failed commit is reported on stderr (when
  // commits start failing, and when they work again) and does not fail the job.
  void commitOffsets(int64_t checkpointId);
  // How a commit ended (an rd_kafka_resp_err_t; librdkafka's commit callback calls it).
  void commitEnded(int err);
  // A partition's offset the group now holds (librdkafka's commit callback).
  void offsetCommitted(const std::string& topic, int32_t partition, int64_t offset);
  void close();

 private:
  struct Partition {
    KafkaPartitionSplit split;
    bool finished = false;
    bool paused = false;  // by watermark alignment
    int64_t committedOffset = -1;  // the last one committed to the group; -1: none
  };
  // Records between the partition's offset and the broker's high watermark (or its
  // stopping offset), as the last fetch saw it; NaN before any fetch.
  double pendingRecords(const Partition& p) const;
  void registerMetrics(const std::string& splitId);
  void takeNewSplits();
  void start(KafkaPartitionSplit split);
  void resolve(KafkaPartitionSplit& split);
  int64_t resolveOffset(const OffsetsInitializer& initializer, const std::string& topic, int32_t partition,
                        bool stopping);
  SplitRun& runOf(const std::string& splitId);

  static constexpr std::chrono::milliseconds kSplitCheck{100};  // how often to ask for new splits

  std::shared_ptr<const KafkaSourceConfig> config_;
  SourceReaderContext context_;
  rd_kafka_s* consumer_ = nullptr;
  rd_kafka_queue_s* queue_ = nullptr;
  std::map<std::string, Partition> partitions_;  // by split id
  std::vector<SplitRun> runs_;
  std::vector<rd_kafka_message_s*> batch_;  // what one poll takes from librdkafka
  std::vector<SplitRun> announced_;  // splits started since the last poll, as runs of no record
  bool enumeratorDone_ = false;
  // commit.offsets.on.checkpoint: each pending checkpoint's offsets, by topic and partition.
  using CommitOffsets = std::vector<std::pair<std::pair<std::string, int32_t>, int64_t>>;
  static constexpr size_t kPendingCommitsKept = 32;
  CommitOffsets currentOffsets() const;
  std::map<int64_t, CommitOffsets> offsetsToCommit_;
  CommitOffsets lastCommitted_;
  bool commitsFailing_ = false;  // the last commit failed (its callback runs on this thread)
  std::chrono::steady_clock::time_point nextSplitCheck_{};
  // Flink's KafkaSourceReader metrics; read by gauges on this reader's thread.
  MetricGroup readerGroup_;
  Counter commitsSucceeded_;
  Counter commitsFailed_;
  double fetchEventTimeLag_;  // ms from the last record's timestamp to its fetch; NaN: none yet
};

}  // namespace weir::detail
