// The machinery of KafkaSink (weir/kafka_sink.h), compiled once in
// src/connectors/kafka/: its configuration, the producer side of one sink subtask
// (records in, transactions pre-committed at barriers) and the committer that commits
// them, or produces their records again when a crash left a commit undone.
// docs/kafka.md, "Exactly once without resuming transactions", argues why that is
// exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "weir/checkpoint_config.h"
#include "weir/checkpointed_function.h"
#include "weir/committer.h"
#include "weir/delivery_guarantee.h"
#include "weir/kafka_record_serialization_schema.h"
#include "weir/restart_strategy.h"
#include "weir/runtime_context.h"
#include "weir/runtime_execution_mode.h"
#include "weir/serializer.h"

struct rd_kafka_s;

namespace weir {

// One transaction an exactly-once writer pre-committed at a barrier. It holds the
// transaction's records so that a restore can produce them again when the transaction's
// own commit did not happen (librdkafka cannot resume another producer's transaction).
// In BATCH it holds neither records nor a marker folder: nothing is restored, and the
// stage's transaction is committed by the producer that wrote it.
struct KafkaCommittable {
  std::string transactionalId;  // <prefix>-<subtask>-<n>
  int64_t transactionNumber = 0;  // n: one past the last checkpoint before it began
  std::string markerFolder;     // where its durable commit marker is
  std::string markerTopic;      // the partition whose group offset marks it committed
  int32_t markerPartition = 0;
  int64_t recordCount = 0;
  std::string records;          // encoded ProducerRecords
};
WEIR_STRUCT(KafkaCommittable, transactionalId, transactionNumber, markerFolder, markerTopic, markerPartition,
            recordCount, records);

namespace detail {

struct KafkaSinkConfig {
  std::string bootstrapServers;
  DeliveryGuarantee guarantee = DeliveryGuarantee::NONE;
  std::string transactionalIdPrefix;                // EXACTLY_ONCE
  std::map<std::string, std::string> properties;    // passed to librdkafka as they are
  std::chrono::milliseconds transactionTimeout{900000};  // transaction.timeout.ms
  std::chrono::milliseconds requestTimeout{30000};  // bounds transactional calls and marker lookups
  // Checks the configuration and every property (librdkafka's own message, named);
  // throws weir::Error (kInvalidArgument).
  void validate() const;
  // Checks the job's settings before it runs: EXACTLY_ONCE needs checkpoints in
  // STREAMING (BATCH commits at the end of the sink's stage), and a transaction must
  // outlive the checkpoint interval plus the restart delay. Throws weir::Error
  // (kInvalidJob) with the numbers.
  void checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy& restarts,
                     RuntimeExecutionMode mode) const;
};

// One librdkafka producer and what its delivery reports said (kafka_sink.cc).
struct KafkaProducer;

// The producer side of one KafkaSink subtask, fed ProducerRecords.
class KafkaProducerWriter {
 public:
  KafkaProducerWriter(std::shared_ptr<const KafkaSinkConfig> config, RuntimeContext& context);
  ~KafkaProducerWriter();
  KafkaProducerWriter(const KafkaProducerWriter&) = delete;
  KafkaProducerWriter& operator=(const KafkaProducerWriter&) = delete;

  void write(const ProducerRecord& record);
  // AT_LEAST_ONCE and EXACTLY_ONCE, and NONE at the end of input: returns once the
  // broker acknowledged every record written; one it refused throws weir::Error (the
  // checkpoint does not complete, the job fails and resumes from the last one).
  void flush(bool endOfInput);
  // EXACTLY_ONCE: pre-commits the open transaction; nothing otherwise.
  std::vector<KafkaCommittable> prepareCommit();
  // Restores the writer's own state; EXACTLY_ONCE: aborts the transactions of this
  // subtask's share of the prefix that a crash left open.
  void initializeState(FunctionInitializationContext& context);
  void snapshotState(const FunctionSnapshotContext& context);
  // Aborts what was not committed (a checkpoint that holds it produces it again) and
  // lets go of the producers.
  void close();

 private:
  // The producer to write a record to `topic` to now (EXACTLY_ONCE: begins a transaction).
  KafkaProducer& producer(const std::string& topic);
  void abortLingering(int64_t restoredCheckpoint, const std::vector<std::string>& folders);
  void removeOldMarkers();

  // The markers of ended transactions are kept this many checkpoints.
  static constexpr int64_t kMarkersKept = 100;

  std::shared_ptr<const KafkaSinkConfig> config_;
  std::shared_ptr<core::FileSystem> fileSystem_;
  int subtask_;
  int parallelism_;
  std::string name_;                       // "sink (i/n)", for messages
  bool batch_;                             // RuntimeExecutionMode::BATCH: no markers, no copies
  std::string markerFolder_;               // EXACTLY_ONCE in STREAMING
  std::unique_ptr<KafkaProducer> plain_;   // NONE and AT_LEAST_ONCE
  std::unique_ptr<KafkaProducer> current_;  // EXACTLY_ONCE: the open transaction, if any
  std::vector<std::string> precommitted_;  // ids handed to the committer, not yet committed
  std::set<std::string> topics_;  // EXACTLY_ONCE: those the last transaction wrote, whose metadata the next learns
  const std::string* lastTopic_ = nullptr;  // in topics_
  int64_t lastCheckpoint_ = 0;
  ListState<std::string>* state_ = nullptr;
  Counter bytesOut_;  // numBytesOut: keys and values handed to the producer
  // Flink's sink writer metrics: records handed to the producer, records the broker
  // refused; and transactions this subtask aborted (KafkaSink.transactionsAborted).
  Counter recordsSend_;
  Counter sendErrors_;
  Counter transactionsAborted_;
};

// A transaction marker an exactly-once KafkaSink left under a checkpoint directory
// (`weir transactions`).
struct KafkaTransactionMarker {
  std::string folder;  // <checkpoint-dir>/kafka-transactions/<prefix>
  std::string prefix;
  std::string transactionalId;
  std::string state;  // open, committing, committed, aborted
};
// Every marker under `checkpointDirectory`, by prefix and id. Throws weir::Error when a
// marker cannot be read.
std::vector<KafkaTransactionMarker> findKafkaTransactions(const std::string& checkpointDirectory);
// Aborts the transaction of `marker` on the cluster by initializing its id (which
// fences a producer still using it), and marks it aborted. Throws weir::Error naming
// what failed.
void abortKafkaTransaction(const std::string& bootstrapServers, const std::map<std::string, std::string>& properties,
                           const KafkaTransactionMarker& marker);

// The committer of one KafkaSink subtask.
std::unique_ptr<Committer<KafkaCommittable>> makeKafkaCommitter(std::shared_ptr<const KafkaSinkConfig> config,
                                                                RuntimeContext& context);

}  // namespace detail
}  // namespace weir
