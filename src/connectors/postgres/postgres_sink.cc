// PostgresSink's machinery (weir/detail/connectors/postgres_writer.h) on libpq. Its
// exactly-once protocol, in short (docs/postgres.md has the argument): the records
// between two barriers are one transaction, named <prefix>-<subtask>-<n> where n is one
// past the last checkpoint the subtask took before it began; at the barrier it is
// PREPAREd, and its name goes into the checkpoint; when the checkpoint completed it is
// COMMITted PREPARED, and a repeat finds it gone. A restore from checkpoint C commits
// what C holds (n <= C) and rolls back the prepared transactions of the prefix with
// n > C, which no completed checkpoint covers and whose records the job writes again.
#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <thread>

#include "connectors/postgres/postgres_connection.h"
#include "core/sync_point.h"
#include "weir/detail/connectors/postgres_writer.h"
#include "weir/error.h"

namespace weir::detail {

namespace {

// Every wait for an answer is bounded by this; a server silent for longer counts as lost.
constexpr std::chrono::milliseconds kRequestTimeout{30000};
// EXACTLY_ONCE: a statement waiting for a row lock longer than this fails (well within
// the request timeout, so that the failure names the lock).
constexpr std::chrono::milliseconds kLockTimeout{20000};

bool validPrefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 150) return false;
  return std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

std::string transactionId(const std::string& prefix, int subtask, int64_t number) {
  return prefix + "-" + std::to_string(subtask) + "-" + std::to_string(number);
}

// <prefix>-<subtask>-<n> of exactly this prefix: its subtask and n. A longer prefix
// that starts the same ("job-1" beside "job") is another job's, and does not parse.
bool parseTransactionId(const std::string& prefix, const std::string& id, int& subtask, int64_t& number) {
  if (id.size() <= prefix.size() + 1 || id.compare(0, prefix.size(), prefix) != 0 || id[prefix.size()] != '-')
    return false;
  const char* p = id.data() + prefix.size() + 1;
  const char* end = id.data() + id.size();
  auto [afterSubtask, e1] = std::from_chars(p, end, subtask);
  if (e1 != std::errc() || afterSubtask == p || afterSubtask == end || *afterSubtask != '-') return false;
  auto [afterNumber, e2] = std::from_chars(afterSubtask + 1, end, number);
  return e2 == std::errc() && afterNumber == end && afterNumber != afterSubtask + 1 && subtask >= 0 && number > 0;
}

// A string literal of SQL ('it''s').
std::string literal(const std::string& text) {
  std::string s = "'";
  for (char c : text) {
    if (c == '\'') s += '\'';
    s += c;
  }
  return s + "'";
}

std::string describe(const PostgresFailure& f) {
  return f.sqlState.empty() ? f.message : f.message + " (SQLSTATE " + f.sqlState + ")";
}

// The parameters of one row, for a message: ($1='a', $2=NULL), each value cut at 64 bytes.
std::string rowText(const PostgresRows& rows, size_t row) {
  std::string s = "(";
  for (int i = 0; i < rows.width; ++i) {
    const size_t at = row * static_cast<size_t>(rows.width) + static_cast<size_t>(i);
    if (i) s += ", ";
    s += "$" + std::to_string(i + 1) + "=";
    if (rows.nulls[at]) {
      s += "NULL";
    } else {
      const std::string& v = rows.values[at];
      s += literal(v.size() > 64 ? v.substr(0, 64) + "…" : v);
    }
  }
  return s + ")";
}

// A row of parameters as bytes, for the checkpoint: per value a null flag, its length and
// its bytes.
std::string encodeRow(const PostgresRows& rows, size_t row) {
  std::string out;
  for (int i = 0; i < rows.width; ++i) {
    const size_t at = row * static_cast<size_t>(rows.width) + static_cast<size_t>(i);
    const uint32_t n = static_cast<uint32_t>(rows.values[at].size());
    out += rows.nulls[at] ? '\1' : '\0';
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += rows.values[at];
  }
  return out;
}

void decodeRow(const std::string& bytes, PostgresRows& rows) {
  size_t at = 0;
  for (int i = 0; i < rows.width; ++i) {
    uint32_t n = 0;
    if (at + 1 + sizeof n > bytes.size()) throw Error(ErrorCode::kCheckpoint, "postgres sink: a held row is cut short");
    const bool null = bytes[at] != 0;
    std::memcpy(&n, bytes.data() + at + 1, sizeof n);
    at += 1 + sizeof n;
    if (at + n > bytes.size()) throw Error(ErrorCode::kCheckpoint, "postgres sink: a held row is cut short");
    rows.nulls.push_back(null);
    rows.values.emplace_back(bytes, at, n);
    rows.bytes += n;
    at += n;
  }
  if (at != bytes.size())
    throw Error(ErrorCode::kCheckpoint, "postgres sink: a held row does not fit the statement's parameters");
  ++rows.rows;
}

std::unique_ptr<PostgresConnection> open(const PostgresSinkConfig& config) {
  return std::make_unique<PostgresConnection>(config.connectionString, config.connectTimeout, kRequestTimeout);
}

}  // namespace

// ---- the configuration

void PostgresSinkConfig::validate() {
  auto invalid = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, "postgres sink: " + what); };
  if (connectionString.empty()) throw invalid("setConnectionString(...) is required");
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(connectionString.c_str(), &error);
  if (options == nullptr) {
    std::string message = error ? error : "out of memory";
    PQfreemem(error);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    throw invalid("the connection string is not valid: " + message);
  }
  PQconninfoFree(options);
  if (sql.empty()) throw invalid("setSql(...) is required");
  if (badRecordPolicy == BadRecordPolicy::DEAD_LETTER &&
      (deadLetterTable.empty() || !std::all_of(deadLetterTable.begin(), deadLetterTable.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
      })))
    throw invalid(deadLetterTable.empty() ? "DEAD_LETTER needs setDeadLetterTable(...)"
                                          : "the dead-letter table '" + deadLetterTable +
                                                "' must be a name of letters, digits, '_' and '.'");
  if (guarantee == DeliveryGuarantee::EXACTLY_ONCE && !validPrefix(transactionIdPrefix))
    throw invalid(transactionIdPrefix.empty()
                      ? "EXACTLY_ONCE needs setTransactionIdPrefix(...): the prepared transactions are named from it"
                      : "the transaction id prefix '" + transactionIdPrefix +
                            "' must be 1 to 150 letters, digits, '_', '.' or '-'");
  // JDBC's ? parameters become $1 … $n, outside quoted strings and names; a statement
  // that already uses $n keeps its ? (PostgreSQL's jsonb operators).
  statement.clear();
  parameterCount = 0;
  bool dollars = false;
  for (size_t i = 0; i + 1 < sql.size(); ++i)
    if (sql[i] == '$' && std::isdigit(static_cast<unsigned char>(sql[i + 1]))) {
      dollars = true;
      parameterCount = std::max(parameterCount, std::atoi(sql.c_str() + i + 1));
    }
  char quote = 0;
  for (char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '?' && !dollars) {
      statement += "$" + std::to_string(++parameterCount);
      continue;
    }
    statement += c;
  }
}

std::string PostgresSinkConfig::who() const {
  std::string host, port = "5432", db;
  if (PQconninfoOption* options = PQconninfoParse(connectionString.c_str(), nullptr)) {
    for (PQconninfoOption* o = options; o->keyword; ++o) {
      if (o->val == nullptr) continue;
      const std::string key = o->keyword;
      if (key == "host" || (key == "hostaddr" && host.empty())) host = o->val;
      else if (key == "port") port = o->val;
      else if (key == "dbname") db = o->val;
    }
    PQconninfoFree(options);
  }
  if (host.empty()) host = "localhost";
  return "postgres sink (" + host + ":" + port + (db.empty() ? "" : "/" + db) + ")";
}

void PostgresSinkConfig::checkSettings(const CheckpointConfig& checkpoints, RuntimeExecutionMode mode) const {
  auto refuse = [&](const std::string& what) { return Error(ErrorCode::kInvalidJob, who() + ": " + what); };
  // BATCH: each subtask's transaction spans its stage, committed once every subtask of
  // the stage has ended its input (docs/postgres.md, "In a batch job").
  if (guarantee == DeliveryGuarantee::EXACTLY_ONCE && mode == RuntimeExecutionMode::STREAMING &&
      !checkpoints.isCheckpointingEnabled())
    throw refuse("EXACTLY_ONCE commits its transactions when checkpoints complete, and the job takes none: "
                 "enable checkpointing (execution.checkpointing.interval), run the bounded job in BATCH, or use "
                 "AT_LEAST_ONCE");
  try {
    auto connection = open(*this);
    if (guarantee == DeliveryGuarantee::EXACTLY_ONCE) {
      const auto rows = connection->run("SHOW max_prepared_transactions");
      if (rows.empty() || rows[0].empty() || std::atoi(rows[0][0].c_str()) <= 0)
        throw refuse("EXACTLY_ONCE needs prepared transactions, and the server's max_prepared_transactions is 0: "
                     "set it above the sink's parallelism in postgresql.conf and restart the server");
    }
    const int parameters = connection->prepare(statement);
    if (parameters != parameterCount)
      throw refuse("the statement has " + std::to_string(parameters) + " parameters, and weir counted " +
                   std::to_string(parameterCount) + " in '" + sql + "'");
  } catch (const PostgresException& e) {
    throw refuse("cannot prepare '" + sql + "': " + describe(e.failure));
  }
  if (badRecordPolicy == BadRecordPolicy::DEAD_LETTER) {
    try {
      open(*this)->run("SELECT sink, record, parameters, reason FROM " + deadLetterTable + " LIMIT 0");
    } catch (const PostgresException& e) {
      throw refuse("the dead-letter table '" + deadLetterTable + "' cannot take rows: " + describe(e.failure));
    }
  }
}

// ---- the writer

struct PostgresWriter::Batch {
  PostgresRows rows;
  std::vector<int64_t> numbers;  // each row's record: its number among those this subtask took
  // DEAD_LETTER: the rows refused since the batch was last sent, as INSERT statements.
  std::vector<std::string> deadLetters;

  void clear() {
    rows.clear();
    numbers.clear();
  }
};

PostgresWriter::PostgresWriter(std::shared_ptr<const PostgresSinkConfig> config, RuntimeContext& context)
    : config_(std::move(config)),
      context_(context),
      subtask_(context.getIndexOfThisSubtask()),
      parallelism_(context.getNumberOfParallelSubtasks()),
      name_(context.getTaskNameWithSubtasks()),
      statement_(config_->parameterCount),
      batch_(std::make_unique<Batch>()),
      bytesOut_(context.getMetricGroup().getIOMetricGroup().getNumBytesOutCounter()),
      sendErrors_(context.getMetricGroup().counter("numRecordsSendErrors")),
      transactionsAborted_(context.getMetricGroup().addGroup("PostgresSink").counter("transactionsAborted")) {
  batch_->rows.width = config_->parameterCount;
}

// Not close(): it may throw, and the operator closes the writer before it goes.
PostgresWriter::~PostgresWriter() = default;

void PostgresWriter::connect() {
  connection_ = open(*config_);
  const int parameters = connection_->prepare(config_->statement);
  if (parameters != config_->parameterCount)
    throw Error(ErrorCode::kInvalidJob, config_->who() + ": the statement has " + std::to_string(parameters) +
                                            " parameters, and weir counted " + std::to_string(config_->parameterCount));
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE)
    // A statement that waits for a row lock held by a transaction nobody commits (another
    // subtask's, prepared) fails rather than holding the job forever.
    connection_->run("SET lock_timeout = " + std::to_string(kLockTimeout.count()));
}

void PostgresWriter::add() {
  if (const int unset = statement_.firstUnset())
    throw Error(ErrorCode::kInvalidArgument, config_->who() + ": the statement builder left parameter $" +
                                                 std::to_string(unset) + " unset for record " +
                                                 std::to_string(taken_ + 1));
  PostgresRows& rows = batch_->rows;
  batch_->numbers.push_back(++taken_);
  for (int i = 1; i <= rows.width; ++i) {
    const std::string* value = statement_.value(i);
    rows.nulls.push_back(value == nullptr);
    rows.values.emplace_back(value ? *value : std::string());
    if (value) rows.bytes += value->size();
  }
  ++rows.rows;
  statement_.reset(config_->parameterCount);
  // EXACTLY_ONCE holds records back while its last prepared transaction awaits its
  // commit: they could wait for its row locks, and only this subtask's thread commits it.
  const bool held = config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE && uncommitted_ != 0;
  if (rows.rows >= static_cast<size_t>(config_->execution.getBatchSize()) && !held) {
    send();
  } else if (rows.rows == 1 && config_->execution.getBatchIntervalMs() > 0 && !timerSet_) {
    timerSet_ = true;
    context_.processingTimeService().registerTimer(
        context_.clock()->currentTimeMillis() + config_->execution.getBatchIntervalMs(), this);
  }
}

void PostgresWriter::onProcessingTime(int64_t) {
  timerSet_ = false;
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE && uncommitted_ != 0) return;
  send();
}

void PostgresWriter::send() {
  PostgresRows& rows = batch_->rows;
  if (rows.rows == 0) return;
  const bool exactlyOnce = config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE;
  const int maxRetries = config_->execution.getMaxRetries();
  for (int attempt = 0;; ++attempt) {
    PostgresFailure failure;
    try {
      if (!connection_) connect();
      if (exactlyOnce && !inTransaction_) {
        connection_->run("BEGIN");
        inTransaction_ = true;
      }
      // Inside a transaction a refused row aborts it: a savepoint lets the rest go on.
      const bool savepoint = exactlyOnce && config_->badRecordPolicy != BadRecordPolicy::FAIL;
      if (savepoint) connection_->run("SAVEPOINT weir_batch");
      auto refused = connection_->executeBatch(rows);
      if (!refused) {
        for (const std::string& insert : batch_->deadLetters) connection_->run(insert);
        batch_->deadLetters.clear();
        break;
      }
      if (!refused->second.transient()) {
        if (savepoint) connection_->run("ROLLBACK TO SAVEPOINT weir_batch");
        refuse(refused->first, refused->second);
        --attempt;  // not a retry: the batch without the row
        continue;
      }
      failure = refused->second;
    } catch (const PostgresException& e) {
      failure = e.failure;
    }
    connection_.reset();
    if (exactlyOnce && inTransaction_)
      throw Error(ErrorCode::kIo, config_->who() + ": " + name_ +
                                      " lost its open transaction: " + describe(failure) +
                                      "; the job resumes from its last checkpoint");
    if (!failure.transient() || attempt >= maxRetries)
      throw Error(ErrorCode::kIo, config_->who() + ": cannot write a batch of " + std::to_string(rows.rows) +
                                      " records" + (attempt ? " after " + std::to_string(attempt) + " retries" : "") +
                                      ": " + describe(failure));
    std::fprintf(stderr, "weir: %s: %s; retrying (%d of %d)\n", config_->who().c_str(), describe(failure).c_str(),
                 attempt + 1, maxRetries);
    std::this_thread::sleep_for(config_->retryBackoff * (attempt + 1));
  }
  bytesOut_.inc(rows.bytes);
  batch_->clear();
}

void PostgresWriter::refuse(size_t row, const PostgresFailure& why) {
  PostgresRows& rows = batch_->rows;
  const std::string what = config_->who() + ": record " + std::to_string(batch_->numbers[row]) + " of " + name_ +
                           " " + rowText(rows, row) + " was refused: " + describe(why);
  sendErrors_.inc();
  switch (config_->badRecordPolicy) {
    case BadRecordPolicy::FAIL:
      throw Error(ErrorCode::kIo, what);
    case BadRecordPolicy::SKIP:
      std::fprintf(stderr, "weir: %s; skipped\n", what.c_str());
      break;
    case BadRecordPolicy::DEAD_LETTER: {
      std::string parameters;
      for (int i = 0; i < rows.width; ++i) {
        const size_t at = row * static_cast<size_t>(rows.width) + static_cast<size_t>(i);
        parameters += (i ? ", $" : "$") + std::to_string(i + 1) + "=" + (rows.nulls[at] ? "NULL" : literal(rows.values[at]));
      }
      batch_->deadLetters.push_back("INSERT INTO " + config_->deadLetterTable +
                                    " (sink, record, parameters, reason) VALUES (" + literal(name_) + ", " +
                                    std::to_string(batch_->numbers[row]) + ", " + literal(parameters) + ", " +
                                    literal(describe(why)) + ")");
      std::fprintf(stderr, "weir: %s; written to %s\n", what.c_str(), config_->deadLetterTable.c_str());
      break;
    }
  }
  rows.erase(row);
  batch_->numbers.erase(batch_->numbers.begin() + static_cast<std::ptrdiff_t>(row));
}

void PostgresWriter::flush(bool endOfInput) {
  endOfInput_ = endOfInput_ || endOfInput;
  if (config_->guarantee == DeliveryGuarantee::NONE && !endOfInput) return;
  // EXACTLY_ONCE: prepareCommit, right after this, sends what is held.
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE) return;
  send();
}

std::vector<PostgresCommittable> PostgresWriter::prepareCommit() {
  if (config_->guarantee != DeliveryGuarantee::EXACTLY_ONCE) return {};
  // The transaction prepared at an earlier barrier waits for a later checkpoint (its own
  // was aborted): rows sent now could wait for its locks, which only this thread
  // releases. They stay held, in the checkpoint; at the end of the input, until the
  // job's final notice has committed every prepared transaction (close()).
  if (uncommitted_ != 0) return {};
  send();
  if (!inTransaction_) return {};
  PostgresCommittable c{transactionId(config_->transactionIdPrefix, subtask_, lastCheckpoint_ + 1)};
  try {
    connection_->run("PREPARE TRANSACTION " + literal(c.transactionId));
  } catch (const PostgresException& e) {
    connection_.reset();
    inTransaction_ = false;
    throw Error(ErrorCode::kIo, config_->who() + ": cannot prepare transaction '" + c.transactionId +
                                    "': " + describe(e.failure) + "; the job resumes from its last checkpoint");
  }
  inTransaction_ = false;
  uncommitted_ = lastCheckpoint_ + 1;
  WEIR_COLD_SYNC_POINT_CALLBACK("PostgresSink::AfterPrepare", &c.transactionId);
  return {std::move(c)};
}

void PostgresWriter::notifyCheckpointComplete(int64_t checkpointId) {
  // The notice after the end of the input with an id past every checkpoint: the job has
  // finished, and nothing it processed will be replayed.
  if (endOfInput_ && checkpointId > lastCheckpoint_) finalNotice_ = true;
  if (uncommitted_ != 0 && uncommitted_ <= checkpointId) uncommitted_ = 0;
}

void PostgresWriter::initializeState(FunctionInitializationContext& context) {
  state_ = &context.getOperatorStateStore().getUnionListState(ListStateDescriptor<std::string>("weir.postgres.sink.writer"));
  heldRows_ = &context.getOperatorStateStore().getListState(ListStateDescriptor<std::string>("weir.postgres.sink.held"));
  int64_t restored = 0;
  for (const std::string& entry : state_->get()) restored = std::max<int64_t>(restored, std::atoll(entry.c_str()));
  lastCheckpoint_ = restored;
  for (const std::string& row : heldRows_->get()) {
    decodeRow(row, batch_->rows);
    batch_->numbers.push_back(++taken_);
  }
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE) rollBackLingering(restored);
}

// The prepared transactions of the prefix begun after the restored checkpoint (or,
// starting afresh, any): no completed checkpoint holds them, and the job writes their
// records again. Each subtask rolls back those of the subtask indexes it stands for now
// (its own, and those beyond the parallelism, round robin).
void PostgresWriter::rollBackLingering(int64_t restoredCheckpoint) {
  std::vector<PostgresPreparedTransaction> prepared;
  for (int attempt = 0;; ++attempt) {
    try {
      if (!connection_) connect();
      for (auto& row : connection_->run("SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                                        "AND starts_with(gid, " + literal(config_->transactionIdPrefix + "-") +
                                        ") ORDER BY gid"))
        prepared.push_back({row[0], "", "", "", true});
      break;
    } catch (const PostgresException& e) {
      connection_.reset();
      if (!e.failure.transient() || attempt >= config_->execution.getMaxRetries())
        throw Error(ErrorCode::kIo, config_->who() + ": cannot list the prepared transactions: " + describe(e.failure));
      std::this_thread::sleep_for(config_->retryBackoff * (attempt + 1));
    }
  }
  for (const auto& p : prepared) {
    int subtask = 0;
    int64_t number = 0;
    if (!parseTransactionId(config_->transactionIdPrefix, p.transactionId, subtask, number)) continue;
    if (subtask % parallelism_ != subtask_ || number <= restoredCheckpoint) continue;
    try {
      connection_->run("ROLLBACK PREPARED " + literal(p.transactionId));
    } catch (const PostgresException& e) {
      if (e.failure.sqlState == "42704") continue;  // gone meanwhile
      throw Error(ErrorCode::kIo, config_->who() + ": cannot roll back the lingering transaction '" +
                                      p.transactionId + "': " + describe(e.failure));
    }
    transactionsAborted_.inc();
    std::fprintf(stderr, "weir: %s rolled back the lingering PostgreSQL transaction '%s'\n", name_.c_str(),
                 p.transactionId.c_str());
    std::string id = p.transactionId;
    WEIR_COLD_SYNC_POINT_CALLBACK("PostgresSink::RolledBackLingering", &id);
  }
}

void PostgresWriter::snapshotState(const FunctionSnapshotContext& context) {
  lastCheckpoint_ = context.getCheckpointId();
  state_->update({std::to_string(lastCheckpoint_)});
  // What prepareCommit held back (nothing else is left in the batch after a barrier).
  std::vector<std::string> held;
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE)
    for (size_t row = 0; row < batch_->rows.rows; ++row) held.push_back(encodeRow(batch_->rows, row));
  heldRows_->update(std::move(held));
}

// An open transaction, not prepared, ends with the connection: the server rolls it back.
// Rows still held at the end of a job that finished are written now, in a transaction of
// their own: the final notice has committed every prepared one (the committer runs
// right after the writer hears it, before the close), and nothing will be replayed.
void PostgresWriter::close() {
  if (finalNotice_ && config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE && batch_->rows.rows > 0) {
    finalNotice_ = false;
    uncommitted_ = 0;
    send();
    try {
      connection_->run("COMMIT");
    } catch (const PostgresException& e) {
      connection_.reset();
      throw Error(ErrorCode::kIo, config_->who() + ": cannot commit the last rows of the job: " + describe(e.failure));
    }
    inTransaction_ = false;
  }
  connection_.reset();
}

// ---- the committer

namespace {

class PostgresCommitter final : public Committer<PostgresCommittable> {
 public:
  PostgresCommitter(std::shared_ptr<const PostgresSinkConfig> config, RuntimeContext& context)
      : config_(std::move(config)),
        batch_(context.isBatch()),
        committed_(context.getMetricGroup().addGroup("PostgresSink").counter("transactionsCommitted")) {}

  void commit(std::vector<CommitRequest<PostgresCommittable>>& requests) override {
    for (auto& request : requests) commitOne(request);
  }

 private:
  void commitOne(CommitRequest<PostgresCommittable>& request) {
    std::string id = request.getCommittable().transactionId;
    for (int attempt = 0;; ++attempt) {
      PostgresFailure failure;
      try {
        if (!connection_) connection_ = open(*config_);
        WEIR_COLD_SYNC_POINT_CALLBACK("PostgresSink::BeforeCommit", &id);
        connection_->run("COMMIT PREPARED " + literal(id));
        WEIR_COLD_SYNC_POINT_CALLBACK("PostgresSink::AfterCommit", &id);
        committed_.inc();
        return;
      } catch (const PostgresException& e) {
        failure = e.failure;
      }
      // Gone: committed before (a commit repeated after a restore). Nothing of weir's
      // removes a transaction a completed checkpoint holds; a hand (`weir transactions
      // abort`, ROLLBACK PREPARED) could, so stderr says so.
      if (failure.sqlState == "42704") {
        std::fprintf(stderr, "weir: %s: prepared transaction '%s' is gone; taking it as committed by an earlier "
                     "attempt\n", config_->who().c_str(), id.c_str());
        request.signalAlreadyCommitted();
        return;
      }
      connection_.reset();
      if (!failure.transient()) {
        request.signalFailedWithUnknownReason(config_->who() + ": cannot commit prepared transaction '" + id +
                                              "': " + describe(failure));
        return;
      }
      if (attempt >= config_->execution.getMaxRetries()) {
        std::fprintf(stderr, "weir: %s: cannot commit prepared transaction '%s' now (%s); trying again %s\n",
                     config_->who().c_str(), id.c_str(), describe(failure).c_str(),
                     batch_ ? "shortly" : "at the next checkpoint");
        request.retryLater();
        return;
      }
      std::this_thread::sleep_for(config_->retryBackoff * (attempt + 1));
    }
  }

  std::shared_ptr<const PostgresSinkConfig> config_;
  std::unique_ptr<PostgresConnection> connection_;
  bool batch_;  // RuntimeExecutionMode::BATCH: no checkpoint comes, the end of the stage retries
  Counter committed_;
};

}  // namespace

std::unique_ptr<Committer<PostgresCommittable>> makePostgresCommitter(std::shared_ptr<const PostgresSinkConfig> config,
                                                                      RuntimeContext& context) {
  return std::make_unique<PostgresCommitter>(std::move(config), context);
}

// ---- weir transactions

std::vector<PostgresPreparedTransaction> findPostgresTransactions(const std::string& connectionString,
                                                                  const std::string& prefix) {
  std::vector<PostgresPreparedTransaction> found;
  try {
    auto connection = std::make_unique<PostgresConnection>(connectionString, std::chrono::seconds(10), kRequestTimeout);
    for (auto& row : connection->run("SELECT gid, database, owner, prepared, database = current_database() "
                                     "FROM pg_prepared_xacts WHERE starts_with(gid, " + literal(prefix) +
                                     ") ORDER BY gid"))
      found.push_back({row[0], row[1], row[2], row[3], row[4] == "t"});
  } catch (const PostgresException& e) {
    throw Error(ErrorCode::kIo, "postgres: cannot list the prepared transactions: " + describe(e.failure));
  }
  return found;
}

void resolvePostgresTransaction(const std::string& connectionString, const std::string& transactionId, bool commit) {
  try {
    auto connection = std::make_unique<PostgresConnection>(connectionString, std::chrono::seconds(10), kRequestTimeout);
    connection->run(std::string(commit ? "COMMIT" : "ROLLBACK") + " PREPARED " + literal(transactionId));
  } catch (const PostgresException& e) {
    throw Error(ErrorCode::kIo, "postgres: cannot " + std::string(commit ? "commit" : "roll back") +
                                    " prepared transaction '" + transactionId + "': " + describe(e.failure));
  }
}

}  // namespace weir::detail
