// Writes to PostgreSQL (Flink's JdbcSink, for PostgreSQL) through libpq: a SQL statement,
// a builder that sets its parameters from each record, batches, and two guarantees:
//
//   auto sink = PostgresSink<Count>::builder()
//                   .setConnectionString("host=127.0.0.1 port=5432 dbname=shop user=weir")
//                   .setSql("INSERT INTO counts (word, n) VALUES (?, ?) "
//                           "ON CONFLICT (word) DO UPDATE SET n = EXCLUDED.n")
//                   .setStatementBuilder([](PreparedStatement& ps, const Count& c) {
//                     ps.setString(1, c.word);
//                     ps.setLong(2, c.n);
//                   })
//                   .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
//                   .setTransactionIdPrefix("word-counts")
//                   .build();
//   counts.sinkTo(sink);
//
// AT_LEAST_ONCE (the default, as Flink's JdbcSink.sink) sends every batch before a
// barrier passes: an upsert makes a replay after a restore harmless. EXACTLY_ONCE (as
// Flink's JdbcSink.exactlyOnceSink with XA) writes each checkpoint's records in one
// transaction, PREPARE TRANSACTION at the barrier and COMMIT PREPARED once the
// checkpoint completed (docs/postgres.md).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weir/checkpoint_listener.h"
#include "weir/checkpointed_function.h"
#include "weir/delivery_guarantee.h"
#include "weir/detail/connectors/postgres_writer.h"
#include "weir/error.h"
#include "weir/jdbc_execution_options.h"
#include "weir/prepared_statement.h"
#include "weir/two_phase_committing_sink.h"

namespace weir {

template <class T>
class PostgresSink final : public TwoPhaseCommittingSink<T, PostgresCommittable> {
 public:
  class Builder {
   public:
    // libpq's connection string ("host=… port=… dbname=… user=… password=…") or URI
    // ("postgresql://user@host:port/db"). Required.
    Builder& setConnectionString(std::string connection) {
      config_.connectionString = std::move(connection);
      return *this;
    }
    // The statement each record executes, with ? (JDBC's) or $1 … $n parameters.
    // Required.
    Builder& setSql(std::string sql) {
      config_.sql = std::move(sql);
      return *this;
    }
    // Sets the parameters from a record. Required.
    Builder& setStatementBuilder(JdbcStatementBuilder<T> builder) {
      builder_ = std::move(builder);
      return *this;
    }
    // Default: JdbcExecutionOptions::defaults() (batches of 5000, 3 retries).
    Builder& setExecutionOptions(JdbcExecutionOptions options) {
      config_.execution = options;
      return *this;
    }
    // AT_LEAST_ONCE (default) or EXACTLY_ONCE; NONE is AT_LEAST_ONCE without the flush
    // at each barrier.
    Builder& setDeliveryGuarantee(DeliveryGuarantee guarantee) {
      config_.guarantee = guarantee;
      return *this;
    }
    // EXACTLY_ONCE: the transaction ids are <prefix>-<subtask>-<n>. Required then, at
    // most 150 of [A-Za-z0-9_.-], and it must differ between jobs writing to the same
    // server (a job rolls back the prepared transactions of its prefix that its
    // checkpoint does not cover when it starts).
    Builder& setTransactionIdPrefix(std::string prefix) {
      config_.transactionIdPrefix = std::move(prefix);
      return *this;
    }
    // What a record the server refuses for good (a constraint, a value of the wrong type)
    // does: FAIL the job naming it (default), SKIP it (counted in numRecordsSendErrors,
    // and one line on stderr), or DEAD_LETTER: a row in setDeadLetterTable's table,
    // written with the batch (in the same transaction when EXACTLY_ONCE).
    Builder& setBadRecordPolicy(BadRecordPolicy policy) {
      config_.badRecordPolicy = policy;
      return *this;
    }
    // DEAD_LETTER: a table with columns sink text, record bigint, parameters text,
    // reason text. Required then.
    Builder& setDeadLetterTable(std::string table) {
      config_.deadLetterTable = std::move(table);
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming what is missing or wrong.
    PostgresSink build() const {
      if (!builder_) throw Error(ErrorCode::kInvalidArgument, "postgres sink: setStatementBuilder(...) is required");
      auto config = std::make_shared<detail::PostgresSinkConfig>(config_);
      config->validate();
      return PostgresSink(std::move(config), builder_);
    }

   private:
    detail::PostgresSinkConfig config_;
    JdbcStatementBuilder<T> builder_;
  };

  static Builder builder() { return Builder(); }

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(config_, context, builder_);
  }
  std::unique_ptr<Committer<PostgresCommittable>> createCommitter(RuntimeContext& context) const override {
    return detail::makePostgresCommitter(config_, context);
  }
  void checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy&, RuntimeExecutionMode mode) const override {
    config_->checkSettings(checkpoints, mode);
  }

 private:
  PostgresSink(std::shared_ptr<const detail::PostgresSinkConfig> config, JdbcStatementBuilder<T> builder)
      : config_(std::move(config)), builder_(std::move(builder)) {}

  class Writer final : public PrecommittingSinkWriter<T, PostgresCommittable>,
                       public CheckpointedFunction,
                       public CheckpointListener {
   public:
    Writer(std::shared_ptr<const detail::PostgresSinkConfig> config, RuntimeContext& context,
           JdbcStatementBuilder<T> builder)
        : writer_(std::move(config), context), builder_(std::move(builder)) {}

    void write(const T& record) override {
      builder_(writer_.statement(), record);
      writer_.add();
    }
    void writeBatch(std::span<T> records) override {
      for (const T& r : records) write(r);
    }
    void flush(bool endOfInput) override { writer_.flush(endOfInput); }
    std::vector<PostgresCommittable> prepareCommit() override { return writer_.prepareCommit(); }
    void initializeState(FunctionInitializationContext& context) override { writer_.initializeState(context); }
    void snapshotState(const FunctionSnapshotContext& context) override { writer_.snapshotState(context); }
    void notifyCheckpointComplete(int64_t checkpointId) override { writer_.notifyCheckpointComplete(checkpointId); }
    void close() override { writer_.close(); }

   private:
    detail::PostgresWriter writer_;
    JdbcStatementBuilder<T> builder_;
  };

  std::shared_ptr<const detail::PostgresSinkConfig> config_;
  JdbcStatementBuilder<T> builder_;
};

}  // namespace weir
