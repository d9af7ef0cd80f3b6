// KafkaSource's machinery on librdkafka's C API: the enumerator asks the cluster's
// metadata for partitions; each reader is one consumer that assigns its partitions
// itself (no group membership, no rebalancing: the checkpoint, not the group, holds
// the offsets) and polls them all through one queue.
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <limits>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "connectors/kafka/kafka_client.h"
#include "weir/detail/connectors/kafka_partition_reader.h"
#include "weir/error.h"

namespace weir::detail {

namespace {

using Clock = std::chrono::steady_clock;

Error invalid(const std::string& what) { return kafkaInvalid("kafka source", what); }

// A client of the source: the user's properties over `defaults`.
rd_kafka_t* makeClient(const KafkaSourceConfig& config, const std::map<std::string, std::string>& defaults) {
  return makeKafkaClient("kafka source", RD_KAFKA_CONSUMER,
                         makeKafkaConf("kafka source", config.bootstrapServers, defaults, config.properties));
}

// librdkafka's offset commit callback (served on the reader's thread, during a poll);
// `opaque`: the reader.
void onCommitted(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  auto* reader = static_cast<KafkaPartitionReader*>(opaque);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR && offsets != nullptr) {
    for (int i = 0; i < offsets->cnt; ++i) {
      const rd_kafka_topic_partition_t& tp = offsets->elems[i];
      if (tp.err != RD_KAFKA_RESP_ERR_NO_ERROR) err = tp.err;
      else reader->offsetCommitted(tp.topic, tp.partition, tp.offset);
    }
  }
  reader->commitEnded(err);
}

// librdkafka calls it, on a thread of its own, when the reader's queue stops being
// empty; `opaque`: the reader's wake-up.
void onQueueNonEmpty(rd_kafka_t*, void* opaque) { (*static_cast<const std::function<void()>*>(opaque))(); }

std::string partitionName(const std::string& topic, int32_t partition) {
  return "partition " + std::to_string(partition) + " of topic '" + topic + "'";
}

// Java's String.hashCode, as Flink's enumerator hashes a topic (for ASCII names).
int32_t javaHashCode(const std::string& s) {
  uint32_t h = 0;
  for (unsigned char c : s) h = 31 * h + c;
  return static_cast<int32_t>(h);
}

class KafkaEnumerator final : public SplitEnumerator {
 public:
  KafkaEnumerator(std::shared_ptr<const KafkaSourceConfig> config, int parallelism)
      : config_(std::move(config)),
        parallelism_(parallelism),
        client_(makeClient(*config_, {{"group.id", "weir-kafka-metadata"}, {"allow.auto.create.topics", "false"}})),
        queues_(static_cast<size_t>(parallelism)) {
    try {
      discover(true);
    } catch (...) {
      rd_kafka_destroy(client_);
      throw;
    }
    nextDiscovery_ = Clock::now() + config_->discoveryInterval;
  }
  ~KafkaEnumerator() override { rd_kafka_destroy(client_); }

  std::unique_ptr<SourceSplit> nextSplit(int subtask) override {
    std::lock_guard lock(mutex_);
    if (config_->discoveryInterval.count() > 0 && !config_->bounded && Clock::now() >= nextDiscovery_) {
      try {
        discover(false);
      } catch (const Error& e) {
        std::cerr << "weir: " << e.what() << "; trying again in " << config_->discoveryInterval.count() << " ms"
                  << std::endl;
      }
      nextDiscovery_ = Clock::now() + config_->discoveryInterval;
    }
    auto& queue = queues_.at(static_cast<size_t>(subtask));
    if (queue.empty()) return nullptr;
    auto split = std::make_unique<KafkaPartitionSplit>(std::move(queue.front()));
    queue.pop_front();
    return split;
  }

 private:
  // Adds the partitions not known yet; at the start, every topic named must exist.
  void discover(bool first) {
    const rd_kafka_metadata_t* metadata = nullptr;
    const int timeout = static_cast<int>(config_->requestTimeout.count());
    rd_kafka_resp_err_t err = rd_kafka_metadata(client_, 1, nullptr, &metadata, timeout);
    if (err)
      throw Error(ErrorCode::kIo, "kafka source: no metadata from '" + config_->bootstrapServers + "' within " +
                                      std::to_string(timeout) + " ms: " + rd_kafka_err2str(err));
    std::map<std::string, std::vector<int32_t>> found;
    for (int t = 0; t < metadata->topic_cnt; ++t) {
      const auto& topic = metadata->topics[t];
      if (topic.err) continue;
      auto& ids = found[topic.topic];
      for (int p = 0; p < topic.partition_cnt; ++p) ids.push_back(topic.partitions[p].id);
    }
    rd_kafka_metadata_destroy(metadata);
    std::vector<std::pair<std::string, int32_t>> wanted;
    if (!config_->partitions.empty()) {
      for (const auto& [topic, partition] : config_->partitions) {
        auto it = found.find(topic);
        if (it == found.end() || std::find(it->second.begin(), it->second.end(), partition) == it->second.end()) {
          if (first) throw invalid(partitionName(topic, partition) + " does not exist on '" + config_->bootstrapServers + "'");
          continue;
        }
        wanted.emplace_back(topic, partition);
      }
    } else if (!config_->topicPattern.empty()) {
      const std::regex pattern(config_->topicPattern);
      for (const auto& [topic, ids] : found)
        if (std::regex_match(topic, pattern))
          for (int32_t p : ids) wanted.emplace_back(topic, p);
    } else {
      for (const auto& topic : config_->topics) {
        auto it = found.find(topic);
        if (it == found.end()) {
          if (first) throw invalid("topic '" + topic + "' does not exist on '" + config_->bootstrapServers + "'");
          continue;
        }
        for (int32_t p : it->second) wanted.emplace_back(topic, p);
      }
    }
    std::sort(wanted.begin(), wanted.end());
    for (const auto& [topic, partition] : wanted) {
      if (!known_.insert({topic, partition}).second) continue;
      KafkaPartitionSplit split;
      split.topic = topic;
      split.partition = partition;
      queues_[static_cast<size_t>(kafkaPartitionOwner(topic, partition, parallelism_))].push_back(std::move(split));
    }
    if (first && known_.empty())
      throw invalid("no partition to read on '" + config_->bootstrapServers + "' matches the pattern '" +
                    config_->topicPattern + "'");
  }

  const std::shared_ptr<const KafkaSourceConfig> config_;
  const int parallelism_;
  rd_kafka_t* const client_;
  std::mutex mutex_;
  std::vector<std::deque<KafkaPartitionSplit>> queues_;      // guarded by mutex_; by reader
  std::set<std::pair<std::string, int32_t>> known_;          // guarded by mutex_
  Clock::time_point nextDiscovery_;                          // guarded by mutex_
};

using MessagePtr = std::unique_ptr<rd_kafka_message_t, decltype(&rd_kafka_message_destroy)>;

}  // namespace

void KafkaSourceConfig::validate() const {
  if (bootstrapServers.empty()) throw invalid("setBootstrapServers(...) is required");
  const int ways = (topics.empty() ? 0 : 1) + (topicPattern.empty() ? 0 : 1) + (partitions.empty() ? 0 : 1);
  if (ways != 1) throw invalid("set exactly one of setTopics, setTopicPattern and setPartitions");
  if (!topicPattern.empty()) {
    try {
      std::regex check(topicPattern);
    } catch (const std::regex_error& e) {
      throw invalid("the topic pattern '" + topicPattern + "' is not a regular expression: " + e.what());
    }
  }
  if (starting.kind() == OffsetsInitializer::Kind::kCommitted && groupId.empty())
    throw invalid("committedOffsets() needs setGroupId(...)");
  if (stopping && stopping->kind() == OffsetsInitializer::Kind::kCommitted && groupId.empty())
    throw invalid("committed stopping offsets need setGroupId(...)");
  if (discoveryInterval.count() < 0) throw invalid("the partition discovery interval must not be negative");
  rd_kafka_conf_destroy(makeKafkaConf("kafka source", bootstrapServers, {}, properties));  // every property is known
}

std::string KafkaPartitionSplit::encode() const {
  return std::to_string(partition) + " " + std::to_string(offset) + " " + std::to_string(stoppingOffset) + " " + topic;
}

KafkaPartitionSplit KafkaPartitionSplit::decode(const std::string& bytes) {
  std::istringstream in(bytes);
  KafkaPartitionSplit split;
  in >> split.partition >> split.offset >> split.stoppingOffset;
  if (!in || in.get() != ' ' || !std::getline(in, split.topic) || split.topic.empty())
    throw Error(ErrorCode::kCheckpoint, "a Kafka source's checkpointed split does not parse: '" + bytes + "'");
  return split;
}

int kafkaPartitionOwner(const std::string& topic, int32_t partition, int parallelism) {
  const int start = static_cast<int>((static_cast<uint32_t>(javaHashCode(topic)) * 31u & 0x7FFFFFFFu) %
                                     static_cast<uint32_t>(parallelism));
  return (start + partition) % parallelism;
}

std::unique_ptr<SplitEnumerator> createKafkaEnumerator(std::shared_ptr<const KafkaSourceConfig> config,
                                                       int parallelism) {
  config->validate();
  return std::make_unique<KafkaEnumerator>(std::move(config), parallelism);
}

KafkaPartitionReader::KafkaPartitionReader(std::shared_ptr<const KafkaSourceConfig> config,
                                           const SourceReaderContext& context)
    : config_(std::move(config)),
      context_(context),
      readerGroup_(context_.metricGroup.addGroup("KafkaSourceReader")),
      commitsSucceeded_(readerGroup_.counter("commitsSucceeded")),
      commitsFailed_(readerGroup_.counter("commitsFailed")),
      fetchEventTimeLag_(std::numeric_limits<double>::quiet_NaN()) {
  // Flink's standard source metrics (FLIP-33).
  context_.metricGroup.gauge("currentFetchEventTimeLag", [this] { return fetchEventTimeLag_; });
  context_.metricGroup.gauge("pendingRecords", [this] {
    double sum = 0;
    for (const auto& [id, p] : partitions_) sum += pendingRecords(p);
    return sum;  // NaN while any partition's high watermark is unknown
  });
  rd_kafka_conf_t* conf =
      makeKafkaConf("kafka source", config_->bootstrapServers,
                    {{"group.id", config_->groupId.empty() ? "weir-kafka-source" : config_->groupId},
                     {"enable.auto.commit", "false"},
                     {"enable.auto.offset.store", "false"},
                     {"auto.offset.reset", "earliest"},
                     // The reader never joins the group; this bounds how long close() waits
                     // for a commit still in flight (librdkafka waits up to it).
                     {"session.timeout.ms", std::to_string(std::max<int64_t>(config_->requestTimeout.count(), 6000))}},
                    config_->properties);
  rd_kafka_conf_set_offset_commit_cb(conf, &onCommitted);
  rd_kafka_conf_set_opaque(conf, this);
  consumer_ = makeKafkaClient("kafka source", RD_KAFKA_CONSUMER, conf);
  rd_kafka_poll_set_consumer(consumer_);
  queue_ = rd_kafka_queue_get_consumer(consumer_);
  // Records, commit results and errors all arrive on this queue: its first element
  // wakes the subtask, which need not poll an empty queue meanwhile.
  if (context_.wakeUp) rd_kafka_queue_cb_event_enable(queue_, &onQueueNonEmpty, &context_.wakeUp);
}

std::chrono::steady_clock::time_point KafkaPartitionReader::nextPollTime() const {
  return std::chrono::steady_clock::now() + (context_.wakeUp ? kSplitCheck : std::chrono::milliseconds(2));
}

KafkaPartitionReader::~KafkaPartitionReader() { close(); }

void KafkaPartitionReader::close() {
  if (queue_ != nullptr) {
    rd_kafka_queue_cb_event_enable(queue_, nullptr, nullptr);  // no wake-up after this returns
    rd_kafka_queue_destroy(queue_);
  }
  queue_ = nullptr;
  if (consumer_ != nullptr) {
    rd_kafka_consumer_close(consumer_);
    rd_kafka_destroy(consumer_);
  }
  consumer_ = nullptr;
}

int64_t KafkaPartitionReader::resolveOffset(const OffsetsInitializer& initializer, const std::string& topic,
                                            int32_t partition, bool stopping) {
  const int timeout = static_cast<int>(config_->requestTimeout.count());
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(consumer_, topic.c_str(), partition, &low, &high, timeout);
  if (err)
    throw Error(ErrorCode::kIo, "kafka source: cannot look up the offsets of " + partitionName(topic, partition) +
                                    " on '" + config_->bootstrapServers + "': " + rd_kafka_err2str(err));
  auto reset = [&](const std::string& why) -> int64_t {
    switch (initializer.resetStrategy()) {
      case OffsetResetStrategy::EARLIEST: return low;
      case OffsetResetStrategy::LATEST: return high;
      case OffsetResetStrategy::NONE: break;
    }
    throw Error(ErrorCode::kInvalidArgument, "kafka source: " + partitionName(topic, partition) + " has no " + why +
                                                 " offset and the reset strategy is NONE");
  };
  switch (initializer.kind()) {
    case OffsetsInitializer::Kind::kEarliest: return low;
    case OffsetsInitializer::Kind::kLatest: return high;
    case OffsetsInitializer::Kind::kTimestamp: {
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset = initializer.timestampMillis();
      err = rd_kafka_offsets_for_times(consumer_, list, timeout);
      int64_t offset = list->elems[0].offset;
      if (!err) err = list->elems[0].err;
      rd_kafka_topic_partition_list_destroy(list);
      if (err)
        throw Error(ErrorCode::kIo, "kafka source: cannot look up the offset of time " +
                                        std::to_string(initializer.timestampMillis()) + " in " +
                                        partitionName(topic, partition) + ": " + rd_kafka_err2str(err));
      return offset >= 0 ? offset : high;  // no record that late: the end
    }
    case OffsetsInitializer::Kind::kCommitted: {
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(list, topic.c_str(), partition);
      err = rd_kafka_committed(consumer_, list, timeout);
      int64_t offset = list->elems[0].offset;
      rd_kafka_topic_partition_list_destroy(list);
      if (err)
        throw Error(ErrorCode::kIo, "kafka source: cannot look up the committed offset of " +
                                        partitionName(topic, partition) + " for group '" + config_->groupId +
                                        "': " + rd_kafka_err2str(err));
      return offset >= 0 ? offset : reset("committed");
    }
    case OffsetsInitializer::Kind::kOffsets: {
      auto it = initializer.partitionOffsets().find({topic, partition});
      return it != initializer.partitionOffsets().end() ? it->second : reset(stopping ? "stopping" : "given");
    }
  }
  return low;
}

void KafkaPartitionReader::resolve(KafkaPartitionSplit& split) {
  if (split.offset == KafkaPartitionSplit::kUnresolved)
    split.offset = resolveOffset(config_->starting, split.topic, split.partition, false);
  if (split.stoppingOffset == KafkaPartitionSplit::kUnresolved)
    split.stoppingOffset = config_->stopping ? resolveOffset(*config_->stopping, split.topic, split.partition, true)
                                             : KafkaPartitionSplit::kNoStop;
}

void KafkaPartitionReader::start(KafkaPartitionSplit split) {
  resolve(split);
  const std::string id = split.splitId();
  if (split.offset >= split.stoppingOffset) {
    announced_.push_back({id, 0, true});  // nothing to read: released at once
    return;
  }
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, split.topic.c_str(), split.partition)->offset = split.offset;
  rd_kafka_error_t* error = rd_kafka_incremental_assign(consumer_, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (error != nullptr) {
    std::string why = rd_kafka_error_string(error);
    rd_kafka_error_destroy(error);
    throw Error(ErrorCode::kIo, "kafka source: cannot read " + partitionName(split.topic, split.partition) + ": " + why);
  }
  partitions_[id] = Partition{std::move(split), false};
  registerMetrics(id);
  // Said at once, with no record: its watermark holds the source's back from now on,
  // so the records of the splits read first do not make its records late.
  announced_.push_back({id, 0, false});
}

void KafkaPartitionReader::takeNewSplits() {
  if (enumeratorDone_ || Clock::now() < nextSplitCheck_) return;
  while (auto split = context_.enumerator->nextSplit(context_.subtaskIndex))
    start(std::move(static_cast<KafkaPartitionSplit&>(*split)));
  // A bounded source's enumerator has handed out all it ever will; an unbounded one's
  // may find new partitions: asked again in a while.
  if (config_->bounded || config_->discoveryInterval.count() == 0) enumeratorDone_ = true;
  nextSplitCheck_ = Clock::now() + kSplitCheck;
}

SplitRun& KafkaPartitionReader::runOf(const std::string& splitId) {
  if (runs_.empty() || runs_.back().splitId != splitId || runs_.back().finished) runs_.push_back({splitId, 0, false});
  return runs_.back();
}

InputStatus KafkaPartitionReader::poll(size_t maxRecords, const std::function<size_t(const ConsumerRecord&)>& visit) {
  runs_.clear();
  takeNewSplits();
  for (SplitRun& run : announced_) runOf(run.splitId).finished = run.finished;
  announced_.clear();
  const bool reading = std::any_of(partitions_.begin(), partitions_.end(), [](const auto& p) { return !p.second.finished; });
  if (!reading) {
    if (!runs_.empty()) return InputStatus::MORE_AVAILABLE;  // splits released without a record
    return enumeratorDone_ && config_->bounded ? InputStatus::END_OF_INPUT : InputStatus::NOTHING_AVAILABLE;
  }
  batch_.resize(std::min<size_t>(maxRecords, 1024));
  ssize_t n = rd_kafka_consume_batch_queue(queue_, 0, batch_.data(), batch_.size());
  if (n < 0) throw Error(ErrorCode::kIo, std::string("kafka source: ") + rd_kafka_err2str(rd_kafka_last_error()));
  if (n == 0) return runs_.empty() ? InputStatus::NOTHING_AVAILABLE : InputStatus::MORE_AVAILABLE;
  const int64_t fetchedAt = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<MessagePtr> messages;  // each destroyed, however the loop below ends
  messages.reserve(static_cast<size_t>(n));
  for (ssize_t i = 0; i < n; ++i) messages.emplace_back(batch_[static_cast<size_t>(i)], &rd_kafka_message_destroy);
  size_t visited = 0;
  for (auto& message : messages) {
    rd_kafka_message_t* m = message.get();
    if (m->err) {
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      char fatal[512];
      if (rd_kafka_fatal_error(consumer_, fatal, sizeof fatal))
        throw Error(ErrorCode::kIo, std::string("kafka source: ") + fatal);
      // librdkafka retries what it can (a broker down, a leader moving): said, not fatal.
      std::cerr << "weir: kafka source: " << rd_kafka_message_errstr(m) << std::endl;
      continue;
    }
    const std::string topic = rd_kafka_topic_name(m->rkt);
    auto it = partitions_.find(topic + "-" + std::to_string(m->partition));
    if (it == partitions_.end() || it->second.finished) continue;
    KafkaPartitionSplit& split = it->second.split;
    if (m->offset < split.offset) continue;  // fetched before an earlier position was set
    if (m->offset >= split.stoppingOffset) continue;
    ConsumerRecord record;
    record.topic = topic;
    record.partition = m->partition;
    record.offset = m->offset;
    record.timestamp = rd_kafka_message_timestamp(m, nullptr);
    if (m->key != nullptr) record.key = std::string_view(static_cast<const char*>(m->key), m->key_len);
    if (m->payload != nullptr) record.value = std::string_view(static_cast<const char*>(m->payload), m->len);
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name;
      const void* value;
      size_t size;
      for (size_t h = 0; rd_kafka_header_get_all(headers, h, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++h)
        record.headers.emplace_back(name, value != nullptr ? std::optional<std::string_view>(std::string_view(
                                                                 static_cast<const char*>(value), size))
                                                           : std::nullopt);
    }
    context_.metricGroup.getIOMetricGroup().getNumBytesInCounter().inc(m->len + m->key_len);
    if (record.timestamp >= 0) fetchEventTimeLag_ = static_cast<double>(fetchedAt - record.timestamp);
    const size_t made = visit(record);
    SplitRun& run = runOf(it->first);
    run.records += made;
    split.offset = m->offset + 1;
    ++visited;
    if (split.offset >= split.stoppingOffset) {
      run.finished = true;
      it->second.finished = true;
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(list, split.topic.c_str(), split.partition);
      if (rd_kafka_error_t* error = rd_kafka_incremental_unassign(consumer_, list)) rd_kafka_error_destroy(error);
      rd_kafka_topic_partition_list_destroy(list);
    }
  }
  // A full batch may leave more in the queue, and no wake-up comes for a queue that
  // never emptied: poll again even if none of it became a record.
  const bool full = static_cast<size_t>(n) == batch_.size();
  return visited > 0 || full || !runs_.empty() ? InputStatus::MORE_AVAILABLE : InputStatus::NOTHING_AVAILABLE;
}

void KafkaPartitionReader::pauseOrResume(const std::vector<std::string>& toPause,
                                         const std::vector<std::string>& toResume) {
  auto apply = [&](const std::vector<std::string>& ids, bool pause) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(ids.size()));
    std::vector<Partition*> listed;  // in the list's order
    for (const auto& id : ids) {
      auto it = partitions_.find(id);
      // Only what this reader reads and did (not) pause itself: librdkafka 2.0 moves a
      // partition that was not paused back to a stale offset when it is resumed.
      if (it == partitions_.end() || it->second.finished || it->second.paused == pause) continue;
      rd_kafka_topic_partition_list_add(list, it->second.split.topic.c_str(), it->second.split.partition);
      listed.push_back(&it->second);
    }
    if (list->cnt > 0) {
      if (pause) rd_kafka_pause_partitions(consumer_, list);
      else rd_kafka_resume_partitions(consumer_, list);
      for (int i = 0; i < list->cnt; ++i) {
        if (!list->elems[i].err) {
          listed[static_cast<size_t>(i)]->paused = pause;
          continue;
        }
        std::cerr << "weir: kafka source: cannot " << (pause ? "pause " : "resume ")
                  << partitionName(list->elems[i].topic, list->elems[i].partition) << ": "
                  << rd_kafka_err2str(list->elems[i].err) << std::endl;
      }
    }
    rd_kafka_topic_partition_list_destroy(list);
  };
  apply(toResume, false);  // Flink's order: an id in both lists ends up paused
  apply(toPause, true);
}

std::vector<std::string> KafkaPartitionReader::snapshotState(int64_t checkpointId) {
  std::vector<std::string> out;
  for (const auto& [id, p] : partitions_)
    if (!p.finished) out.push_back(p.split.encode());
  if (config_->commitOffsetsOnCheckpoint) {
    offsetsToCommit_[checkpointId] = currentOffsets();
    // Checkpoints that never complete (aborted, or failing with failures tolerated) are
    // forgotten once enough newer ones were taken.
    while (offsetsToCommit_.size() > kPendingCommitsKept) offsetsToCommit_.erase(offsetsToCommit_.begin());
  }
  return out;
}

void KafkaPartitionReader::commitOffsets(int64_t checkpointId) {
  if (consumer_ == nullptr || !config_->commitOffsetsOnCheckpoint) return;
  CommitOffsets offsets;
  bool final = false;
  if (auto it = offsetsToCommit_.find(checkpointId); it != offsetsToCommit_.end()) {
    offsets = std::move(it->second);
    offsetsToCommit_.erase(offsetsToCommit_.begin(), std::next(it));
  } else if (config_->bounded && enumeratorDone_ &&
             (offsetsToCommit_.empty() || checkpointId > offsetsToCommit_.rbegin()->first) &&
             std::all_of(partitions_.begin(), partitions_.end(), [](const auto& p) { return p.second.finished; })) {
    // The notice that ends a job whose bounded input was read to its end (no snapshot has
    // its id): every record was read, and the job has drained.
    offsets = currentOffsets();
    offsetsToCommit_.clear();
    final = true;
  } else {
    return;
  }
  if (offsets.empty() || offsets == lastCommitted_) return;  // nothing read since
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  for (const auto& [where, offset] : offsets)
    rd_kafka_topic_partition_list_add(list, where.first.c_str(), where.second)->offset = offset;
  rd_kafka_resp_err_t err;
  if (final) {
    // The job ends next: committed now, its callback served by this call, so that the
    // metrics show it.
    struct Commit {
      KafkaPartitionReader* reader;
      bool served = false;
    } commit{this};
    err = rd_kafka_commit_queue(
        consumer_, list, nullptr,
        [](rd_kafka_t* rk, rd_kafka_resp_err_t e, rd_kafka_topic_partition_list_t* o, void* opaque) {
          auto* c = static_cast<Commit*>(opaque);
          c->served = true;
          onCommitted(rk, e, o, c->reader);
        },
        &commit);
    if (commit.served) err = RD_KAFKA_RESP_ERR_NO_ERROR;  // reported by the callback
  } else {
    // Asynchronous: onCommitted runs on this thread, during a later poll (or the close).
    err = rd_kafka_commit(consumer_, list, 1);
  }
  rd_kafka_topic_partition_list_destroy(list);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) commitEnded(err);
  lastCommitted_ = std::move(offsets);
}

KafkaPartitionReader::CommitOffsets KafkaPartitionReader::currentOffsets() const {
  CommitOffsets out;
  for (const auto& [id, p] : partitions_)  // finished ones too: their final offsets
    if (p.split.offset >= 0) out.push_back({{p.split.topic, p.split.partition}, p.split.offset});
  return out;
}

void KafkaPartitionReader::commitEnded(int err) {
  const bool failed = err != RD_KAFKA_RESP_ERR_NO_ERROR;
  (failed ? commitsFailed_ : commitsSucceeded_).inc();
  if (failed == commitsFailing_) return;
  commitsFailing_ = failed;
  if (failed)
    std::fprintf(stderr,
                 "weir: kafka source (subtask %d): committing offsets to group '%s' failed: %s (for monitoring only: the "
                 "checkpoints hold the offsets; reported again when commits work again)\n",
                 context_.subtaskIndex, config_->groupId.c_str(),
                 rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(err)));
  else
    std::fprintf(stderr, "weir: kafka source (subtask %d): committing offsets to group '%s' works again\n",
                 context_.subtaskIndex, config_->groupId.c_str());
}

void KafkaPartitionReader::offsetCommitted(const std::string& topic, int32_t partition, int64_t offset) {
  if (auto it = partitions_.find(topic + "-" + std::to_string(partition)); it != partitions_.end())
    it->second.committedOffset = offset;
}

double KafkaPartitionReader::pendingRecords(const Partition& p) const {
  if (p.finished) return 0;
  int64_t low = 0, high = -1;
  // The offsets the last fetch response carried: no request to the broker.
  if (rd_kafka_get_watermark_offsets(consumer_, p.split.topic.c_str(), p.split.partition, &low, &high) !=
          RD_KAFKA_RESP_ERR_NO_ERROR ||
      high < 0 || p.split.offset < 0)
    return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(std::max<int64_t>(0, std::min(high, p.split.stoppingOffset) - p.split.offset));
}

// Flink's per-partition KafkaSourceReader metrics, and the lag (pendingRecords).
void KafkaPartitionReader::registerMetrics(const std::string& splitId) {
  const KafkaPartitionSplit& split = partitions_.at(splitId).split;
  MetricGroup group = readerGroup_.addGroup("topic", split.topic).addGroup("partition", std::to_string(split.partition));
  group.gauge("currentOffset", [this, splitId] { return static_cast<double>(partitions_.at(splitId).split.offset); });
  group.gauge("committedOffset", [this, splitId] {
    const int64_t offset = partitions_.at(splitId).committedOffset;
    return offset >= 0 ? static_cast<double>(offset) : std::numeric_limits<double>::quiet_NaN();
  });
  group.gauge("pendingRecords", [this, splitId] { return pendingRecords(partitions_.at(splitId)); });
}

void KafkaPartitionReader::addSplits(const std::vector<std::string>& splits) {
  for (const auto& bytes : splits) start(KafkaPartitionSplit::decode(bytes));
}

}  // namespace weir::detail
