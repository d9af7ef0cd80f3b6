// The machinery of PostgresSink (weir/postgres_sink.h), compiled once in
// src/connectors/postgres/: its configuration, the writer of one sink subtask (rows of
// parameters in, batches pipelined to the server, at a barrier flushed or prepared as
// a two-phase transaction) and the committer that commits prepared transactions.
// docs/postgres.md says why that is exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weir/bad_record.h"
#include "weir/checkpoint_config.h"
#include "weir/checkpointed_function.h"
#include "weir/committer.h"
#include "weir/delivery_guarantee.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/jdbc_execution_options.h"
#include "weir/prepared_statement.h"
#include "weir/restart_strategy.h"
#include "weir/runtime_context.h"
#include "weir/runtime_execution_mode.h"
#include "weir/serializer.h"

namespace weir {

// One transaction an exactly-once PostgresSink writer prepared at a barrier
// (PREPARE TRANSACTION), to be committed (COMMIT PREPARED) when the checkpoint
// completes.
struct PostgresCommittable {
  std::string transactionId;  // <prefix>-<subtask>-<n>: PostgreSQL's global transaction id
};
WEIR_STRUCT(PostgresCommittable, transactionId);

namespace detail {

struct PostgresSinkConfig {
  std::string connectionString;  // libpq's: "host=… port=… dbname=… user=… password=…" or a URI
  std::string sql;               // as the user wrote it: ? or $n parameters
  std::string statement;         // with $n parameters
  int parameterCount = 0;
  JdbcExecutionOptions execution;
  DeliveryGuarantee guarantee = DeliveryGuarantee::AT_LEAST_ONCE;
  std::string transactionIdPrefix;  // EXACTLY_ONCE
  // A record the server refuses for good (a constraint, a type): FAIL the job, SKIP it
  // (counted), or DEAD_LETTER: write it to deadLetterTable, in the same transaction.
  BadRecordPolicy badRecordPolicy = BadRecordPolicy::FAIL;
  std::string deadLetterTable;  // (sink text, record bigint, parameters text, reason text)
  std::chrono::seconds connectTimeout{10};
  // The first wait before a retry; the n-th waits n times as long (Flink waits 1 s × n).
  std::chrono::milliseconds retryBackoff{1000};

  // Turns `sql`'s ? parameters into $1 … $n (outside quotes), counts them and checks the
  // options. Throws weir::Error (kInvalidArgument) naming what is wrong.
  void validate();
  // Before the job runs: EXACTLY_ONCE needs checkpoints in STREAMING (BATCH commits at
  // the end of the sink's stage) and a server whose max_prepared_transactions is above
  // 0; the server must be reachable with these credentials and the statement must
  // prepare (its table and columns exist). Throws weir::Error (kInvalidJob) naming the
  // server and the reason.
  void checkSettings(const CheckpointConfig& checkpoints, RuntimeExecutionMode mode) const;
  // "postgres sink (host:port/db)", for messages.
  std::string who() const;
};

// One libpq connection with the statement prepared (postgres_sink.cc).
class PostgresConnection;
struct PostgresFailure;

// The writer side of one PostgresSink subtask, fed bound statements.
class PostgresWriter : public ProcessingTimeCallback {
 public:
  PostgresWriter(std::shared_ptr<const PostgresSinkConfig> config, RuntimeContext& context);
  ~PostgresWriter() override;
  PostgresWriter(const PostgresWriter&) = delete;
  PostgresWriter& operator=(const PostgresWriter&) = delete;

  // The statement to bind the next record to; add() then takes it into the batch.
  PreparedStatement& statement() { return statement_; }
  void add();
  // Sends the batch (AT_LEAST_ONCE, and EXACTLY_ONCE inside its transaction); returns
  // once the server has executed it. A statement the server refuses for good (a
  // constraint, a type) throws weir::Error naming the record and the reason; a lost
  // connection is tried again as JdbcExecutionOptions say.
  void flush(bool endOfInput);
  // EXACTLY_ONCE: PREPARE TRANSACTION of what was written since the last call. While the
  // transaction prepared before is not committed yet (its checkpoint was aborted), the
  // rows stay held back and go into the checkpoint instead (snapshotState), but at the
  // end of the input.
  std::vector<PostgresCommittable> prepareCommit();
  // Restores the last checkpoint id; EXACTLY_ONCE: rolls back the prepared transactions
  // of this subtask's share of the prefix that no completed checkpoint covers.
  void initializeState(FunctionInitializationContext& context);
  void snapshotState(const FunctionSnapshotContext& context);
  // EXACTLY_ONCE: what was prepared up to `checkpointId` is being committed now, so
  // records held back meanwhile may be sent (they might wait on its row locks).
  void notifyCheckpointComplete(int64_t checkpointId);
  void close();

  // The batch interval passed.
  void onProcessingTime(int64_t time) override;

 private:
  struct Batch;
  void send();
  // A record the server refused for good: fails the job, or (SKIP, DEAD_LETTER) takes it
  // out of the batch, which is then sent again.
  void refuse(size_t row, const PostgresFailure& why);
  void connect();
  void rollBackLingering(int64_t restoredCheckpoint);

  std::shared_ptr<const PostgresSinkConfig> config_;
  RuntimeContext& context_;
  int subtask_;
  int parallelism_;
  std::string name_;  // "sink (i/n)", for messages
  std::unique_ptr<PostgresConnection> connection_;
  PreparedStatement statement_;
  std::unique_ptr<Batch> batch_;
  bool inTransaction_ = false;    // EXACTLY_ONCE: BEGIN sent, not prepared yet
  int64_t uncommitted_ = 0;       // EXACTLY_ONCE: the last number prepared and not yet committed; 0 if none
  bool endOfInput_ = false;
  bool finalNotice_ = false;      // the job finished: nothing will be replayed
  bool timerSet_ = false;
  int64_t taken_ = 0;             // records this subtask took, for messages
  int64_t lastCheckpoint_ = 0;
  ListState<std::string>* state_ = nullptr;
  // EXACTLY_ONCE: the rows held back at a barrier that came before the last prepared
  // transaction was committed (a checkpoint aborted), kept in the checkpoint instead.
  ListState<std::string>* heldRows_ = nullptr;
  Counter bytesOut_;
  Counter sendErrors_;
  Counter transactionsAborted_;
};

// The committer of one PostgresSink subtask.
std::unique_ptr<Committer<PostgresCommittable>> makePostgresCommitter(std::shared_ptr<const PostgresSinkConfig> config,
                                                                      RuntimeContext& context);

// A transaction an exactly-once PostgresSink left prepared (`weir transactions`).
struct PostgresPreparedTransaction {
  std::string transactionId;  // the gid
  std::string database;
  std::string owner;
  std::string prepared;  // when, as the server prints it
  bool inThisDatabase = true;  // the connection's: only there can it be committed or rolled back
};
// The prepared transactions on the server whose ids start with `prefix` (all when empty),
// in every database.
// Throws weir::Error naming the server and the reason.
std::vector<PostgresPreparedTransaction> findPostgresTransactions(const std::string& connectionString,
                                                                  const std::string& prefix);
// COMMIT PREPARED (commit) or ROLLBACK PREPARED one of them. Throws weir::Error naming the
// transaction, the server and the reason.
void resolvePostgresTransaction(const std::string& connectionString, const std::string& transactionId, bool commit);

}  // namespace detail
}  // namespace weir
