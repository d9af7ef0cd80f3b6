// KafkaSink's machinery on librdkafka's C API. NONE and AT_LEAST_ONCE write through one
// producer per subtask. EXACTLY_ONCE writes each checkpoint's records in a transaction
// of its own producer (transactional id <prefix>-<subtask>-<n>), keeps the records in
// the committable, and leaves a durable marker per transaction (open, committing,
// committed, aborted) in <checkpoint-dir>/kafka-transactions/<prefix>/, so that after a
// crash the committer knows whether a commit happened: when it did not, it produces the
// records again in a fresh transaction (docs/kafka.md argues each case).
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <type_traits>

#include "connectors/kafka/kafka_client.h"
#include "core/file_system.h"
#include "core/sync_point.h"
#include "weir/detail/connectors/kafka_producer.h"
#include "weir/error.h"

namespace weir::detail {

namespace {

const std::string kWho = "kafka sink";

Error invalid(const std::string& what) { return kafkaInvalid(kWho, what); }
Error failed(const std::string& what) { return Error(ErrorCode::kIo, kWho + ": " + what); }

// Throws weir::Error naming `what` when `error` is one (and frees it).
void check(rd_kafka_error_t* error, const std::string& what) {
  if (error == nullptr) return;
  std::string message = rd_kafka_error_string(error);
  rd_kafka_error_destroy(error);
  throw failed(what + ": " + message);
}

// ---- the records of a transaction, as its committable keeps them

void putU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void putI64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void putBytes(std::string& out, std::string_view bytes) {
  putU32(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}
void putOptional(std::string& out, const std::optional<std::string>& bytes) {
  out.push_back(bytes ? 1 : 0);
  if (bytes) putBytes(out, *bytes);
}

void encodeRecord(std::string& out, const ProducerRecord& r) {
  putBytes(out, r.topic);
  putU32(out, static_cast<uint32_t>(r.partition));
  putOptional(out, r.key);
  putOptional(out, r.value);
  putI64(out, r.timestamp);
  putU32(out, static_cast<uint32_t>(r.headers.size()));
  for (const auto& [key, value] : r.headers) {
    putBytes(out, key);
    putOptional(out, value);
  }
}

class RecordDecoder {
 public:
  RecordDecoder(std::string_view bytes, std::string id) : bytes_(bytes), id_(std::move(id)) {}
  bool next(ProducerRecord& r) {
    if (bytes_.empty()) return false;
    r.topic = bytes(u32());
    r.partition = static_cast<int32_t>(u32());
    r.key = optional();
    r.value = optional();
    r.timestamp = take(8, [](const char* p) { int64_t v; std::memcpy(&v, p, 8); return v; });
    r.headers.resize(u32());
    for (auto& [key, value] : r.headers) {
      key = bytes(u32());
      value = optional();
    }
    return true;
  }

 private:
  template <class F>
  std::invoke_result_t<F, const char*> take(size_t n, F read) {
    if (bytes_.size() < n)
      throw Error(ErrorCode::kCheckpoint, kWho + ": the records of transaction '" + id_ + "' in the checkpoint are cut short");
    auto v = read(bytes_.data());
    bytes_.remove_prefix(n);
    return v;
  }
  uint32_t u32() { return take(4, [](const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }); }
  std::string bytes(uint32_t n) { return take(n, [n](const char* p) { return std::string(p, n); }); }
  std::optional<std::string> optional() {
    if (!take(1, [](const char* p) { return *p != 0; })) return std::nullopt;
    return bytes(u32());
  }

  std::string_view bytes_;
  std::string id_;
};

// ---- durable transaction markers, one small file per transaction

enum class Marker { kNone, kOpen, kCommitting, kCommitted, kAborted };
constexpr const char* kMarkerNames[] = {"none", "open", "committing", "committed", "aborted"};

Marker readMarker(core::FileSystem& fs, const std::string& folder, const std::string& id) {
  const std::string path = folder + "/" + id;
  std::string text;
  if (std::error_code ec = fs.readFile(path, text, 64)) {
    if (ec == std::errc::no_such_file_or_directory) return Marker::kNone;
    throw failed("cannot read the transaction marker '" + path + "': " + ec.message());
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (int m = 1; m <= 4; ++m)
    if (text == kMarkerNames[m]) return static_cast<Marker>(m);
  throw Error(ErrorCode::kCheckpoint, kWho + ": the transaction marker '" + path + "' holds '" + text +
                                          "', not one of open, committing, committed, aborted");
}

// Replaces the marker of `id` with `marker`, durably (written aside, synced, renamed).
void writeMarker(core::FileSystem& fs, const std::string& folder, const std::string& id, Marker marker) {
  const std::string path = folder + "/" + id;
  const std::string aside = folder + "/." + id + ".tmp";
  std::error_code ec;
  auto file = fs.openForWrite(aside, core::FileSystem::WriteMode::kTruncate, ec);
  if (file) ec = file->append(std::string(kMarkerNames[static_cast<int>(marker)]) + "\n");
  if (file && !ec) ec = file->sync();
  if (file && !ec) ec = file->close();
  if (!ec) ec = fs.rename(aside, path);
  if (!ec) ec = fs.syncDirectory(folder);
  if (ec) throw failed("cannot write the transaction marker '" + path + "': " + ec.message());
}

std::string transactionalId(const std::string& prefix, int subtask, int64_t number) {
  return prefix + "-" + std::to_string(subtask) + "-" + std::to_string(number);
}

// Splits <prefix>-<subtask>-<n>; false when `id` is not one of `prefix`.
bool parseTransactionalId(const std::string& prefix, const std::string& id, int& subtask, int64_t& number) {
  if (id.size() <= prefix.size() + 1 || id.compare(0, prefix.size(), prefix) != 0 || id[prefix.size()] != '-')
    return false;
  const std::string rest = id.substr(prefix.size() + 1);
  const size_t dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size()) return false;
  const std::string s = rest.substr(0, dash), n = rest.substr(dash + 1);
  auto digits = [](const std::string& t) { return t.size() < 18 && std::all_of(t.begin(), t.end(), ::isdigit); };
  if (!digits(s) || !digits(n)) return false;
  subtask = std::stoi(s);
  number = std::stoll(n);
  return true;
}

// The consumer group whose committed offset marks the transactions of one subtask's
// ids committed: <prefix>-<subtask>.
std::string markerGroup(const std::string& id) { return id.substr(0, id.rfind('-')); }

}  // namespace

// ---- producers

struct KafkaProducer {
  rd_kafka_t* rk = nullptr;
  std::string transactionalId;  // empty: not transactional
  int64_t number = 0;           // the n of <prefix>-<subtask>-<n>
  // From the delivery reports.
  int64_t undelivered = 0;
  std::string firstError;
  Counter sendErrors;  // the writer's numRecordsSendErrors
  std::string markerTopic;  // where its first record went
  int32_t markerPartition = -1;
  // EXACTLY_ONCE: every record of the open transaction.
  std::string records;
  int64_t count = 0;
  size_t sincePoll = 0;

  ~KafkaProducer() {
    if (rk != nullptr) rd_kafka_destroy(rk);
  }

  static void onDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<KafkaProducer*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Records purged at an abort or a close were not refused by the broker.
      if (m->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE && m->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        self->sendErrors.inc();
      if (self->undelivered++ == 0)
        self->firstError = std::string(rd_kafka_err2str(m->err)) + " (topic '" + rd_kafka_topic_name(m->rkt) + "')";
    } else if (self->markerPartition < 0) {
      self->markerTopic = rd_kafka_topic_name(m->rkt);
      self->markerPartition = m->partition;
    }
  }

  // A producer of `config`; transactional (and initialized: a producer that had this id
  // before is fenced and its open transaction aborted) when `id` is not empty.
  static std::unique_ptr<KafkaProducer> make(const KafkaSinkConfig& config, const std::string& id, int64_t number) {
    auto p = std::make_unique<KafkaProducer>();
    p->transactionalId = id;
    p->number = number;
    std::map<std::string, std::string> defaults{{"partitioner", "murmur2_random"}};  // the Java client's
    if (config.guarantee != DeliveryGuarantee::NONE) defaults["enable.idempotence"] = "true";
    if (!id.empty()) {
      defaults["transactional.id"] = id;
      defaults["transaction.timeout.ms"] = std::to_string(config.transactionTimeout.count());
    }
    rd_kafka_conf_t* conf = makeKafkaConf(kWho, config.bootstrapServers, defaults, config.properties);
    rd_kafka_conf_set_dr_msg_cb(conf, &KafkaProducer::onDelivery);
    rd_kafka_conf_set_opaque(conf, p.get());
    p->rk = makeKafkaClient(kWho, RD_KAFKA_PRODUCER, conf);
    if (!id.empty())
      check(rd_kafka_init_transactions(p->rk, static_cast<int>(config.requestTimeout.count())),
            "cannot initialize transactional id '" + id + "'");
    return p;
  }

  // Fetches the metadata of `topics` now: a producer that does not know a topic holds
  // its records until its next periodic metadata scan, up to a second later (librdkafka).
  void learnTopics(const std::set<std::string>& topics, const KafkaSinkConfig& config) {
    if (topics.empty()) return;
    std::vector<rd_kafka_topic_t*> handles;
    for (const auto& topic : topics) handles.push_back(rd_kafka_topic_new(rk, topic.c_str(), nullptr));
    const rd_kafka_metadata_t* metadata = nullptr;
    // all_topics = 0 and no topic: the topics this producer knows of, those above
    if (rd_kafka_metadata(rk, 0, nullptr, &metadata, static_cast<int>(config.requestTimeout.count())) ==
        RD_KAFKA_RESP_ERR_NO_ERROR)
      rd_kafka_metadata_destroy(metadata);  // on failure the records wait for the scan
    for (rd_kafka_topic_t* handle : handles) rd_kafka_topic_destroy(handle);
  }

  void produce(const ProducerRecord& r) {
    rd_kafka_headers_t* headers = nullptr;
    if (!r.headers.empty()) {
      headers = rd_kafka_headers_new(r.headers.size());
      for (const auto& [key, value] : r.headers)
        rd_kafka_header_add(headers, key.data(), static_cast<ssize_t>(key.size()), value ? value->data() : nullptr,
                            value ? static_cast<ssize_t>(value->size()) : 0);
    }
    const char* key = r.key ? r.key->data() : nullptr;
    const size_t keySize = r.key ? r.key->size() : 0;
    char* value = r.value ? const_cast<char*>(r.value->data()) : nullptr;  // copied (RD_KAFKA_MSG_F_COPY)
    const size_t valueSize = r.value ? r.value->size() : 0;
    for (;;) {
      rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(r.topic.c_str()), RD_KAFKA_V_PARTITION(r.partition), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_KEY(key, keySize), RD_KAFKA_V_VALUE(value, valueSize),
          RD_KAFKA_V_TIMESTAMP(r.timestamp), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(rk, 10);  // delivery reports make room
        continue;
      }
      if (headers != nullptr) rd_kafka_headers_destroy(headers);
      throw failed("cannot produce to topic '" + r.topic + "': " + rd_kafka_err2str(err));
    }
    if (++sincePoll == 1000) {
      sincePoll = 0;
      rd_kafka_poll(rk, 0);
    }
    throwDeliveryErrors();
  }

  // Waits until the broker acknowledged (or refused) every record produced.
  void flushAll() {
    while (rd_kafka_outq_len(rk) > 0) rd_kafka_flush(rk, 100);
    throwDeliveryErrors();
  }

  void throwDeliveryErrors() const {
    if (undelivered > 0)
      throw failed(std::to_string(undelivered) + (undelivered == 1 ? " record was" : " records were") +
                   " not delivered: " + firstError);
  }

  // Adds the marker of a committed transaction to it: the group <prefix>-<subtask>
  // commits offset n on the partition of the transaction's first record, with the id as
  // metadata, visible only once the transaction is committed.
  void sendMarker(const std::string& topic, int32_t partition, const KafkaSinkConfig& config) {
    rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_t* tp = rd_kafka_topic_partition_list_add(offsets, topic.c_str(), partition);
    tp->offset = number;
    tp->metadata = std::malloc(transactionalId.size());
    std::memcpy(tp->metadata, transactionalId.data(), transactionalId.size());
    tp->metadata_size = transactionalId.size();
    rd_kafka_consumer_group_metadata_t* group = rd_kafka_consumer_group_metadata_new(markerGroup(transactionalId).c_str());
    rd_kafka_error_t* error =
        rd_kafka_send_offsets_to_transaction(rk, offsets, group, static_cast<int>(config.requestTimeout.count()));
    rd_kafka_consumer_group_metadata_destroy(group);
    rd_kafka_topic_partition_list_destroy(offsets);
    check(error, "cannot add the commit marker to transaction '" + transactionalId + "'");
  }

  // Aborts the open transaction, if the broker answers within a few seconds (a producer
  // given up on lets the broker abort it after transaction.timeout.ms, or the next
  // producer with its id).
  bool abort() {
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
    rd_kafka_error_t* error = rd_kafka_abort_transaction(rk, 5000);
    if (error == nullptr) return true;
    rd_kafka_error_destroy(error);
    return false;
  }
};

namespace {

// Producers whose transactions were pre-committed, waiting for their subtask's
// committer; by transactional id.
class Precommitted {
 public:
  static Precommitted& instance() {
    static Precommitted registry;
    return registry;
  }
  void put(std::unique_ptr<KafkaProducer> p) {
    std::lock_guard lock(mutex_);
    const std::string id = p->transactionalId;
    producers_[id] = std::move(p);
  }
  bool holds(const std::string& id) {
    std::lock_guard lock(mutex_);
    return producers_.count(id) > 0;
  }
  std::unique_ptr<KafkaProducer> take(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto it = producers_.find(id);
    if (it == producers_.end()) return nullptr;
    auto p = std::move(it->second);
    producers_.erase(it);
    return p;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<KafkaProducer>> producers_;
};

std::shared_ptr<core::FileSystem> fileSystemOf(RuntimeContext& context) {
  return context.fileSystem() ? context.fileSystem() : core::FileSystem::local();
}

std::string markerFolderOf(const KafkaSinkConfig& config, RuntimeContext& context) {
  return (std::filesystem::path(context.getCheckpointDirectory()) / "kafka-transactions" / config.transactionalIdPrefix)
      .string();
}

}  // namespace

// ---- the configuration

void KafkaSinkConfig::validate() const {
  if (bootstrapServers.empty()) throw invalid("setBootstrapServers(...) is required");
  if (guarantee == DeliveryGuarantee::EXACTLY_ONCE) {
    if (transactionalIdPrefix.empty())
      throw invalid("EXACTLY_ONCE needs setTransactionalIdPrefix(...): the transactional ids are made from it");
    if (transactionalIdPrefix.find('/') != std::string::npos || transactionalIdPrefix[0] == '.')
      throw invalid("the transactional id prefix '" + transactionalIdPrefix + "' must not contain '/' nor start with '.'");
  }
  if (properties.count("transactional.id"))
    throw invalid("property 'transactional.id' is weir's to set: use setTransactionalIdPrefix(...)");
  if (transactionTimeout.count() <= 0) throw invalid("transaction.timeout.ms must be a positive number of ms");
  rd_kafka_conf_destroy(makeKafkaConf(kWho, bootstrapServers, {}, properties));  // every property is known
}

void KafkaSinkConfig::checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy& restarts,
                                    RuntimeExecutionMode mode) const {
  if (guarantee != DeliveryGuarantee::EXACTLY_ONCE) return;
  // BATCH: each subtask's transaction spans its stage, committed once every subtask of
  // the stage has ended its input (docs/kafka.md, "In a batch job").
  if (mode == RuntimeExecutionMode::BATCH) return;
  if (!checkpoints.isCheckpointingEnabled())
    throw Error(ErrorCode::kInvalidJob,
                "kafka sink: EXACTLY_ONCE commits its transactions when checkpoints complete, and the job takes "
                "none: enable checkpointing (execution.checkpointing.interval), run the bounded job in BATCH, or use "
                "AT_LEAST_ONCE");
  using Kind = RestartStrategy::Kind;
  const int64_t delay = restarts.kind() == Kind::kExponentialDelay ? restarts.maxBackoff.count()
                        : restarts.kind() == Kind::kNone           ? 0
                                                                   : restarts.delay.count();
  const int64_t interval = checkpoints.getCheckpointInterval().count();
  if (transactionTimeout.count() < interval + delay)
    throw Error(ErrorCode::kInvalidJob,
                "kafka sink: transaction.timeout.ms (" + std::to_string(transactionTimeout.count()) +
                    " ms) is shorter than the checkpoint interval (" + std::to_string(interval) +
                    " ms) plus the restart delay (" + std::to_string(delay) +
                    " ms): a transaction could expire before the checkpoint that commits it; raise it");
}

// ---- the writer

KafkaProducerWriter::KafkaProducerWriter(std::shared_ptr<const KafkaSinkConfig> config, RuntimeContext& context)
    : config_(std::move(config)),
      fileSystem_(fileSystemOf(context)),
      subtask_(context.getIndexOfThisSubtask()),
      parallelism_(context.getNumberOfParallelSubtasks()),
      name_(context.getTaskNameWithSubtasks()),
      batch_(context.isBatch()),
      bytesOut_(context.getMetricGroup().getIOMetricGroup().getNumBytesOutCounter()),
      recordsSend_(context.getMetricGroup().counter("numRecordsSend")),
      sendErrors_(context.getMetricGroup().counter("numRecordsSendErrors")),
      transactionsAborted_(context.getMetricGroup().addGroup("KafkaSink").counter("transactionsAborted")) {
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE) {
    if (!batch_) markerFolder_ = markerFolderOf(*config_, context);
  } else {
    plain_ = KafkaProducer::make(*config_, "", 0);
    plain_->sendErrors = sendErrors_;
  }
}

KafkaProducerWriter::~KafkaProducerWriter() { close(); }

KafkaProducer& KafkaProducerWriter::producer(const std::string& topic) {
  if (plain_) return *plain_;
  if (!current_) {
    const int64_t number = lastCheckpoint_ + 1;
    const std::string id = transactionalId(config_->transactionalIdPrefix, subtask_, number);
    if (!batch_) writeMarker(*fileSystem_, markerFolder_, id, Marker::kOpen);  // before the broker knows it
    current_ = KafkaProducer::make(*config_, id, number);
    current_->sendErrors = sendErrors_;
    topics_.insert(topic);
    current_->learnTopics(topics_, *config_);  // the last transaction's, and this record's
    topics_.clear();                           // from now on, those of this transaction
    lastTopic_ = nullptr;
    check(rd_kafka_begin_transaction(current_->rk), "cannot begin transaction '" + id + "'");
  }
  return *current_;
}

void KafkaProducerWriter::write(const ProducerRecord& record) {
  KafkaProducer& p = producer(record.topic);
  if (!plain_ && (lastTopic_ == nullptr || *lastTopic_ != record.topic))
    lastTopic_ = &*topics_.insert(record.topic).first;
  p.produce(record);
  recordsSend_.inc();
  bytesOut_.inc((record.key ? record.key->size() : 0) + (record.value ? record.value->size() : 0));
  if (&p == current_.get()) {
    if (!batch_) encodeRecord(p.records, record);  // a batch job restores nothing to produce again
    ++p.count;
  }
}

void KafkaProducerWriter::flush(bool endOfInput) {
  if (plain_ && (endOfInput || config_->guarantee == DeliveryGuarantee::AT_LEAST_ONCE)) plain_->flushAll();
  if (current_) current_->flushAll();
}

std::vector<KafkaCommittable> KafkaProducerWriter::prepareCommit() {
  if (!current_) return {};
  current_->flushAll();
  KafkaCommittable c;
  c.transactionalId = current_->transactionalId;
  c.transactionNumber = current_->number;
  // A batch job restores nothing, so nothing reads the markers that settle a restored
  // transaction: it writes none (and leaves no group offset a later job could misread).
  if (!batch_) {
    if (current_->markerPartition < 0)  // every record was acknowledged, so one said where it went
      throw failed("transaction '" + current_->transactionalId + "' has no acknowledged record to mark");
    c.markerFolder = markerFolder_;
    c.markerTopic = current_->markerTopic;
    c.markerPartition = current_->markerPartition;
    current_->sendMarker(c.markerTopic, c.markerPartition, *config_);
  }
  c.recordCount = current_->count;
  c.records = std::move(current_->records);
  Precommitted::instance().put(std::move(current_));
  std::erase_if(precommitted_, [](const std::string& id) { return !Precommitted::instance().holds(id); });
  precommitted_.push_back(c.transactionalId);
  WEIR_COLD_SYNC_POINT_CALLBACK("KafkaSink::AfterPreCommit", &c.transactionalId);
  return {std::move(c)};
}

void KafkaProducerWriter::initializeState(FunctionInitializationContext& context) {
  state_ = &context.getOperatorStateStore().getUnionListState(ListStateDescriptor<std::string>("weir.kafka.sink.writer"));
  // Each subtask wrote "<checkpoint id> <marker folder>".
  std::vector<std::string> folders;
  int64_t restored = 0;
  for (const std::string& entry : state_->get()) {
    const size_t space = entry.find(' ');
    if (space == std::string::npos) throw Error(ErrorCode::kCheckpoint, kWho + ": unreadable writer state '" + entry + "'");
    restored = std::max<int64_t>(restored, std::stoll(entry.substr(0, space)));
    std::string folder = entry.substr(space + 1);
    if (!folder.empty() && std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
  }
  lastCheckpoint_ = restored;
  // BATCH: a stage re-run after a failure uses the same ids, and the first record of
  // each fences what the failed run left open.
  if (config_->guarantee != DeliveryGuarantee::EXACTLY_ONCE || batch_) return;
  if (std::error_code ec = fileSystem_->createDirectories(markerFolder_))
    throw failed("cannot create the transaction marker folder '" + markerFolder_ + "': " + ec.message());
  if (std::find(folders.begin(), folders.end(), markerFolder_) == folders.end()) folders.push_back(markerFolder_);
  abortLingering(restored, folders);
}

// The transactions begun after the restored checkpoint (or, starting afresh, any) that
// are still open: nothing holds their records, which the job will write again. Each
// subtask aborts those of the subtask indexes it stands for now (its own, and those of
// subtasks beyond the parallelism, round robin), by initializing their ids.
void KafkaProducerWriter::abortLingering(int64_t restoredCheckpoint, const std::vector<std::string>& folders) {
  for (const std::string& folder : folders) {
    std::vector<std::string> names;
    if (std::error_code ec = fileSystem_->list(folder, names)) {
      if (ec == std::errc::no_such_file_or_directory) continue;
      throw failed("cannot list the transaction markers in '" + folder + "': " + ec.message());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& id : names) {
      int subtask = 0;
      int64_t number = 0;
      if (!parseTransactionalId(config_->transactionalIdPrefix, id, subtask, number)) continue;
      if (subtask % parallelism_ != subtask_ || number <= restoredCheckpoint) continue;
      if (readMarker(*fileSystem_, folder, id) != Marker::kOpen) continue;
      KafkaProducer::make(*config_, id, number);  // initializing the id fences and aborts
      transactionsAborted_.inc();
      writeMarker(*fileSystem_, folder, id, Marker::kAborted);
      std::fprintf(stderr, "weir: %s aborted the lingering Kafka transaction '%s'\n", name_.c_str(), id.c_str());
      std::string aborted = id;
      WEIR_COLD_SYNC_POINT_CALLBACK("KafkaSink::AbortedLingering", &aborted);
    }
  }
}

void KafkaProducerWriter::snapshotState(const FunctionSnapshotContext& context) {
  lastCheckpoint_ = context.getCheckpointId();
  state_->update({std::to_string(lastCheckpoint_) + " " + markerFolder_});
  if (!markerFolder_.empty() && lastCheckpoint_ % kMarkersKept == 0) removeOldMarkers();
}

// The markers of this subtask's transactions that ended (committed or aborted) more than
// kMarkersKept checkpoints ago: restoring a checkpoint that old is all that needs them.
void KafkaProducerWriter::removeOldMarkers() {
  std::vector<std::string> names;
  if (fileSystem_->list(markerFolder_, names)) return;  // tried again later
  for (const std::string& id : names) {
    int subtask = 0;
    int64_t number = 0;
    if (!parseTransactionalId(config_->transactionalIdPrefix, id, subtask, number)) continue;
    if (subtask != subtask_ || number > lastCheckpoint_ - kMarkersKept) continue;
    const Marker marker = readMarker(*fileSystem_, markerFolder_, id);
    if (marker == Marker::kCommitted || marker == Marker::kAborted) fileSystem_->remove(markerFolder_ + "/" + id);
  }
}

void KafkaProducerWriter::close() {
  if (plain_) {
    rd_kafka_purge(plain_->rk, RD_KAFKA_PURGE_F_QUEUE);
    plain_.reset();
  }
  // Uncommitted transactions are aborted: the checkpoint that holds one (if any) makes
  // the committer produce its records again.
  auto abort = [&](std::unique_ptr<KafkaProducer> p) {
    if (p && p->abort()) {
      if (!batch_) writeMarker(*fileSystem_, markerFolder_, p->transactionalId, Marker::kAborted);
      transactionsAborted_.inc();
    }
  };
  try {
    abort(std::move(current_));
    for (const std::string& id : precommitted_) abort(Precommitted::instance().take(id));
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s: %s\n", name_.c_str(), e.what());
  }
  precommitted_.clear();
}

// ---- the committer

namespace {

class KafkaCommitter final : public Committer<KafkaCommittable> {
 public:
  KafkaCommitter(std::shared_ptr<const KafkaSinkConfig> config, RuntimeContext& context)
      : config_(std::move(config)),
        fileSystem_(fileSystemOf(context)),
        name_(context.getTaskNameWithSubtasks()),
        batch_(context.isBatch()),
        recordsSend_(context.getMetricGroup().counter("numRecordsSend")),  // the writer's counters
        sendErrors_(context.getMetricGroup().counter("numRecordsSendErrors")),
        transactionsCommitted_(context.getMetricGroup().addGroup("KafkaSink").counter("transactionsCommitted")) {}

  void commit(std::vector<CommitRequest<KafkaCommittable>>& requests) override {
    for (auto& request : requests) commitOne(request);
  }

 private:
  int timeoutMs() const { return static_cast<int>(config_->requestTimeout.count()); }

  void commitOne(CommitRequest<KafkaCommittable>& request) {
    const KafkaCommittable& c = request.getCommittable();
    std::string id = c.transactionalId;
    const bool batch = batch_;  // no marker, no records kept
    std::string why = "its producer is gone";
    if (auto live = Precommitted::instance().take(id)) {
      if (!batch) writeMarker(*fileSystem_, c.markerFolder, id, Marker::kCommitting);
      WEIR_COLD_SYNC_POINT_CALLBACK("KafkaSink::BeforeCommit", &id);
      rd_kafka_error_t* error = rd_kafka_commit_transaction(live->rk, timeoutMs());
      if (error == nullptr) {
        WEIR_COLD_SYNC_POINT_CALLBACK("KafkaSink::AfterCommit", &id);
        if (!batch) writeMarker(*fileSystem_, c.markerFolder, id, Marker::kCommitted);
        transactionsCommitted_.inc();
        return;
      }
      const bool retriable = rd_kafka_error_is_retriable(error);
      why = rd_kafka_error_string(error);
      std::fprintf(stderr, "weir: %s: committing Kafka transaction '%s' failed: %s%s\n", name_.c_str(), id.c_str(),
                   why.c_str(), !retriable ? "" : batch ? "; retried" : "; retried at the next checkpoint");
      rd_kafka_error_destroy(error);
      if (retriable) {
        Precommitted::instance().put(std::move(live));
        request.retryLater();
        return;
      }
    }
    // A batch job's stage ran in one transaction per subtask, and kept no copy of its
    // records: it cannot be produced again (docs/kafka.md, "In a batch job").
    if (batch) {
      request.signalFailedWithUnknownReason(
          kWho + ": transaction '" + id + "' failed at the end of its batch stage: " + why +
          " (the broker aborts a transaction open longer than transaction.timeout.ms, " +
          std::to_string(config_->transactionTimeout.count()) + " ms); its " + std::to_string(c.recordCount) +
          " records are not published");
      return;
    }
    recover(request);
  }

  // The transaction's producer is gone (a restore, or a commit that failed): the marker
  // says whether its commit happened, and if not its records are produced again.
  void recover(CommitRequest<KafkaCommittable>& request) {
    const KafkaCommittable& c = request.getCommittable();
    const std::string& id = c.transactionalId;
    const Marker marker = readMarker(*fileSystem_, c.markerFolder, id);
    if (marker == Marker::kCommitted) {
      recovered(id, "already-committed");
      request.signalAlreadyCommitted();
      return;
    }
    // Initializing the id fences the old producer: an open transaction is aborted, one
    // whose commit reached the broker is completed.
    auto p = KafkaProducer::make(*config_, id, c.transactionNumber);
    if (marker == Marker::kCommitting && brokerShowsCommitted(c)) {
      writeMarker(*fileSystem_, c.markerFolder, id, Marker::kCommitted);
      recovered(id, "committed-by-broker");
      request.signalAlreadyCommitted();
      return;
    }
    check(rd_kafka_begin_transaction(p->rk), "cannot begin transaction '" + id + "'");
    p->sendErrors = sendErrors_;
    RecordDecoder records(c.records, id);
    ProducerRecord record;
    while (records.next(record)) {
      p->produce(record);
      recordsSend_.inc();
    }
    p->flushAll();
    p->sendMarker(c.markerTopic, c.markerPartition, *config_);
    writeMarker(*fileSystem_, c.markerFolder, id, Marker::kCommitting);
    check(rd_kafka_commit_transaction(p->rk, timeoutMs()), "cannot commit transaction '" + id + "'");
    writeMarker(*fileSystem_, c.markerFolder, id, Marker::kCommitted);
    transactionsCommitted_.inc();
    std::fprintf(stderr, "weir: %s produced the %lld records of Kafka transaction '%s' again: its commit had not happened\n",
                 name_.c_str(), static_cast<long long>(c.recordCount), id.c_str());
    recovered(id, "produced-again");
  }

  // Whether the committed offset of the transaction's marker group holds its mark.
  bool brokerShowsCommitted(const KafkaCommittable& c) {
    rd_kafka_conf_t* conf =
        makeKafkaConf(kWho, config_->bootstrapServers, {{"group.id", markerGroup(c.transactionalId)}}, {});
    rd_kafka_t* consumer = makeKafkaClient(kWho, RD_KAFKA_CONSUMER, conf);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, c.markerTopic.c_str(), c.markerPartition);
    rd_kafka_resp_err_t err = rd_kafka_committed(consumer, list, timeoutMs());
    const rd_kafka_topic_partition_t& tp = list->elems[0];
    const bool shows = err == RD_KAFKA_RESP_ERR_NO_ERROR && tp.err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                       tp.offset == c.transactionNumber && tp.metadata_size == c.transactionalId.size() &&
                       std::memcmp(tp.metadata, c.transactionalId.data(), tp.metadata_size) == 0;
    rd_kafka_topic_partition_list_destroy(list);
    rd_kafka_destroy(consumer);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
      throw failed("cannot read the commit marker of transaction '" + c.transactionalId + "': " + rd_kafka_err2str(err));
    return shows;
  }

  void recovered(std::string id, const char* branch) {
    std::string what = id + " " + branch;
    WEIR_COLD_SYNC_POINT_CALLBACK("KafkaSink::Recovered", &what);
  }

  std::shared_ptr<const KafkaSinkConfig> config_;
  std::shared_ptr<core::FileSystem> fileSystem_;
  std::string name_;
  bool batch_;  // RuntimeExecutionMode::BATCH
  Counter recordsSend_;
  Counter sendErrors_;
  Counter transactionsCommitted_;  // KafkaSink.transactionsCommitted
};

}  // namespace

std::vector<KafkaTransactionMarker> findKafkaTransactions(const std::string& checkpointDirectory) {
  const auto& fs = core::FileSystem::local();
  const std::string root = checkpointDirectory + "/kafka-transactions";
  std::vector<KafkaTransactionMarker> out;
  std::vector<std::string> prefixes;
  if (std::error_code ec = fs->list(root, prefixes)) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    throw failed("cannot list '" + root + "': " + ec.message());
  }
  std::sort(prefixes.begin(), prefixes.end());
  for (const std::string& prefix : prefixes) {
    const std::string folder = root + "/" + prefix;
    std::vector<std::string> ids;
    if (std::error_code ec = fs->list(folder, ids)) throw failed("cannot list '" + folder + "': " + ec.message());
    std::sort(ids.begin(), ids.end());
    for (const std::string& id : ids) {
      int subtask = 0;
      int64_t number = 0;
      if (!parseTransactionalId(prefix, id, subtask, number)) continue;
      out.push_back({folder, prefix, id, kMarkerNames[static_cast<int>(readMarker(*fs, folder, id))]});
    }
  }
  return out;
}

void abortKafkaTransaction(const std::string& bootstrapServers, const std::map<std::string, std::string>& properties,
                           const KafkaTransactionMarker& marker) {
  KafkaSinkConfig config;
  config.bootstrapServers = bootstrapServers;
  config.guarantee = DeliveryGuarantee::EXACTLY_ONCE;
  config.properties = properties;
  config.requestTimeout = std::chrono::milliseconds(10000);
  KafkaProducer::make(config, marker.transactionalId, 0);  // initializing the id aborts its transaction
  writeMarker(*core::FileSystem::local(), marker.folder, marker.transactionalId, Marker::kAborted);
}

std::unique_ptr<Committer<KafkaCommittable>> makeKafkaCommitter(std::shared_ptr<const KafkaSinkConfig> config,
                                                                RuntimeContext& context) {
  return std::make_unique<KafkaCommitter>(std::move(config), context);
}

}  // namespace weir::detail
