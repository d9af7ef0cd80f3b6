// RedisSink's machinery (weir/detail/connectors/redis_writer.h) on hiredis. Exactly
// once, in short (docs/redis.md has the argument): the commands between two barriers are
// one committable, numbered n (one past the subtask's last checkpoint) and kept in the
// checkpoint; when it completes they are applied in one MULTI/EXEC together with
// ZADD <fence> n n, under WATCH <fence>, and only when the fence (a sorted set of the
// numbers applied, per subtask that prepared them) does not hold n. So a commit repeated
// after a restore finds n there and does nothing, in whatever order the committables of
// one subtask come (a rescaled job splits them among its subtasks), and a crash halfway
// through a MULTI applies none of it (the server drops a MULTI whose connection closes
// before EXEC).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <thread>

#include "connectors/redis/redis_connection.h"
#include "core/sync_point.h"
#include "weir/detail/connectors/redis_writer.h"
#include "weir/error.h"

namespace weir::detail {

namespace {

// The numbers a fence remembers: the newest this many of its subtask. A committable older
// than that still waiting for its commit would be taken as applied; none waits that long
// (a commit that cannot be made fails the job within a few checkpoints).
constexpr int kFenceRemembers = 1000;

std::string commandText(const std::string* args, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) {
    if (i) s += ' ';
    s += args[i].size() > 64 ? args[i].substr(0, 64) + "…" : args[i];
  }
  return s;
}

void putLength(std::string& out, uint32_t n) { out.append(reinterpret_cast<const char*>(&n), sizeof n); }

// The encoded commands of a committable, back as arguments and counts.
void decode(const std::string& bytes, std::vector<std::string>& args, std::vector<uint32_t>& counts) {
  size_t at = 0;
  auto length = [&] {
    uint32_t n = 0;
    if (at + sizeof n > bytes.size()) throw Error(ErrorCode::kCheckpoint, "redis sink: a committable is cut short");
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    return n;
  };
  while (at < bytes.size()) {
    const uint32_t count = length();
    counts.push_back(count);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t n = length();
      if (at + n > bytes.size()) throw Error(ErrorCode::kCheckpoint, "redis sink: a committable is cut short");
      args.emplace_back(bytes, at, n);
      at += n;
    }
  }
}

RedisEndpoint endpointOf(const RedisSinkConfig& c) {
  RedisEndpoint e;
  e.host = c.host;
  e.port = c.port;
  e.username = c.username;
  e.password = c.password;
  e.connectTimeout = c.connectTimeout;
  e.requestTimeout = c.requestTimeout;
  return e;
}

// A connection, tried again as the sink's retries allow; throws weir::Error when none
// can be made.
std::unique_ptr<RedisConnection> connectWithRetries(const RedisSinkConfig& config) {
  for (int attempt = 0;; ++attempt) {
    std::string why;
    if (auto c = RedisConnection::open(endpointOf(config), config.who(), why)) return c;
    if (attempt >= config.maxRetries)
      throw Error(ErrorCode::kIo, config.who() + ": cannot connect" +
                                      (attempt ? " after " + std::to_string(attempt) + " retries" : "") + ": " + why);
    std::fprintf(stderr, "weir: %s: cannot connect: %s; retrying (%d of %d)\n", config.who().c_str(), why.c_str(),
                 attempt + 1, config.maxRetries);
    std::this_thread::sleep_for(config.retryBackoff * (attempt + 1));
  }
}

}  // namespace

// ---- the configuration

void RedisSinkConfig::validate() const {
  auto invalid = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, "redis sink: " + what); };
  if (host.empty()) throw invalid("the host is empty");
  if (port <= 0 || port > 65535) throw invalid("the port " + std::to_string(port) + " is not between 1 and 65535");
  if (!username.empty() && password.empty()) throw invalid("setUsername(...) needs setPassword(...) too");
  if (guarantee == DeliveryGuarantee::EXACTLY_ONCE && transactionIdPrefix.empty())
    throw invalid("EXACTLY_ONCE needs setTransactionIdPrefix(...): the fence keys are named from it");
  // Its fence keys are found by a SCAN pattern: no glob characters.
  if (!std::all_of(transactionIdPrefix.begin(), transactionIdPrefix.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      }) || transactionIdPrefix.size() > 150)
    throw invalid("the transaction id prefix '" + transactionIdPrefix +
                  "' must be at most 150 letters, digits, '_', '.' or '-'");
  if (batchSize < 1) throw invalid("the batch size must be at least 1, not " + std::to_string(batchSize));
  if (maxRetries < 0) throw invalid("max retries must be at least 0, not " + std::to_string(maxRetries));
}

std::string RedisSinkConfig::who() const { return "redis sink (" + host + ":" + std::to_string(port) + ")"; }

std::string RedisSinkConfig::fenceKey(int subtask) const {
  return "weir:fence:" + transactionIdPrefix + ":" + std::to_string(subtask);
}

void RedisSinkConfig::checkSettings(const CheckpointConfig& checkpoints, RuntimeExecutionMode mode) const {
  if (guarantee == DeliveryGuarantee::EXACTLY_ONCE && mode == RuntimeExecutionMode::BATCH)
    throw Error(ErrorCode::kInvalidJob, who() + ": EXACTLY_ONCE applies a subtask's commands in one MULTI/EXEC when "
                                                "its checkpoint completes, and in BATCH that is the end of its stage: "
                                                "the stage would hold every command it sends in memory; use "
                                                "AT_LEAST_ONCE (a re-run stage sends its commands again) or STREAMING");
  if (guarantee == DeliveryGuarantee::EXACTLY_ONCE && !checkpoints.isCheckpointingEnabled())
    throw Error(ErrorCode::kInvalidJob, who() + ": EXACTLY_ONCE applies its commands when checkpoints complete, and "
                                                "the job takes none: enable checkpointing "
                                                "(execution.checkpointing.interval) in a STREAMING job, or use "
                                                "AT_LEAST_ONCE");
  std::string why;
  std::unique_ptr<RedisConnection> c;
  try {
    c = RedisConnection::open(endpointOf(*this), who(), why);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidJob, e.what());
  }
  if (!c) throw Error(ErrorCode::kInvalidJob, who() + ": cannot connect: " + why);
  RedisReply pong = c->command({"PING"});
  if (!pong || pong->type == REDIS_REPLY_ERROR)
    throw Error(ErrorCode::kInvalidJob,
                who() + ": PING failed: " + (pong ? std::string(replyText(pong.get())) : c->error()));
}

// ---- the writer

RedisWriter::RedisWriter(std::shared_ptr<const RedisSinkConfig> config, RuntimeContext& context)
    : config_(std::move(config)),
      subtask_(context.getIndexOfThisSubtask()),
      parallelism_(context.getNumberOfParallelSubtasks()),
      name_(context.getTaskNameWithSubtasks()),
      bytesOut_(context.getMetricGroup().getIOMetricGroup().getNumBytesOutCounter()),
      sendErrors_(context.getMetricGroup().counter("numRecordsSendErrors")) {
  pending_.subtask = subtask_;
}

RedisWriter::~RedisWriter() { close(); }

void RedisWriter::add() {
  const auto& args = commands_.args();
  const auto& counts = commands_.counts();
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE) {
    size_t at = 0;
    for (uint32_t count : counts) {
      putLength(pending_.commands, count);
      for (uint32_t i = 0; i < count; ++i, ++at) {
        putLength(pending_.commands, static_cast<uint32_t>(args[at].size()));
        pending_.commands += args[at];
        bytesOut_.inc(args[at].size());
      }
    }
    pending_.commandCount += static_cast<int64_t>(counts.size());
    ++pending_.records;
  } else {
    size_t at = 0;
    for (uint32_t count : counts) {
      batch_.add(std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(at),
                                          args.begin() + static_cast<std::ptrdiff_t>(at + count)));
      recordOf_.push_back(records_);
      at += count;
    }
    if (batch_.counts().size() >= static_cast<size_t>(config_->batchSize)) send();
  }
  ++records_;
  commands_.clear();
}

// Pipelines the batch and reads every reply. After a lost connection the whole batch is
// sent again: at least once.
void RedisWriter::send() {
  const auto& counts = batch_.counts();
  if (counts.empty()) return;
  const auto& args = batch_.args();
  for (int attempt = 0;; ++attempt) {
    std::string why;
    if (!connection_) connection_ = connectWithRetries(*config_);
    size_t at = 0;
    for (uint32_t count : counts) {
      connection_->append(args.data() + at, count);
      at += count;
    }
    at = 0;
    bool transient = false;
    for (size_t i = 0; i < counts.size(); ++i) {
      RedisReply reply = connection_->nextReply();
      if (!reply) {
        why = connection_->error();
        transient = true;
        break;
      }
      if (reply->type == REDIS_REPLY_ERROR) {
        const std::string error(replyText(reply.get()));
        if (!transientRedisError(error)) {
          sendErrors_.inc();
          connection_.reset();  // its other replies are not read
          throw Error(ErrorCode::kIo, config_->who() + ": record " + std::to_string(recordOf_[i] + 1) + " of " +
                                          name_ + ": '" + commandText(args.data() + at, counts[i]) +
                                          "' was refused: " + error);
        }
        why = error;
        transient = true;  // read the rest, then send the batch again
      }
      at += counts[i];
    }
    if (!transient) break;
    connection_.reset();
    if (attempt >= config_->maxRetries)
      throw Error(ErrorCode::kIo, config_->who() + ": cannot write a batch of " + std::to_string(counts.size()) +
                                      " commands" + (attempt ? " after " + std::to_string(attempt) + " retries" : "") +
                                      ": " + why);
    std::fprintf(stderr, "weir: %s: %s; retrying (%d of %d)\n", config_->who().c_str(), why.c_str(), attempt + 1,
                 config_->maxRetries);
    std::this_thread::sleep_for(config_->retryBackoff * (attempt + 1));
  }
  for (const auto& a : args) bytesOut_.inc(a.size());
  batch_.clear();
  recordOf_.clear();
}

void RedisWriter::flush(bool endOfInput) {
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE) return;
  if (config_->guarantee == DeliveryGuarantee::NONE && !endOfInput) return;
  send();
}

std::vector<RedisCommittable> RedisWriter::prepareCommit() {
  if (config_->guarantee != DeliveryGuarantee::EXACTLY_ONCE || pending_.commandCount == 0) return {};
  RedisCommittable c = std::move(pending_);
  c.number = lastCheckpoint_ + 1;
  pending_ = RedisCommittable{};
  pending_.subtask = subtask_;
  std::string id = config_->fenceKey(c.subtask) + " " + std::to_string(c.number);
  WEIR_COLD_SYNC_POINT_CALLBACK("RedisSink::AfterPrepare", &id);
  return {std::move(c)};
}

void RedisWriter::initializeState(FunctionInitializationContext& context) {
  state_ = &context.getOperatorStateStore().getUnionListState(ListStateDescriptor<std::string>("weir.redis.sink.writer"));
  int64_t restored = 0;
  for (const std::string& entry : state_->get()) restored = std::max<int64_t>(restored, std::atoll(entry.c_str()));
  lastCheckpoint_ = restored;
  if (config_->guarantee == DeliveryGuarantee::EXACTLY_ONCE) resetFences(restored);
}

// A fence holding numbers above the restored checkpoint remembers commits the job is
// about to make again (it resumes from an older checkpoint, or starts afresh): they are
// forgotten (the fence removed when starting afresh), so that the commits from there are
// applied. Commits the restored checkpoint holds (n <= C) stay no-ops. Each subtask
// resets the fences of the subtask indexes it stands for (its own, and those beyond the
// parallelism, round robin).
void RedisWriter::resetFences(int64_t restoredCheckpoint) {
  if (!connection_) connection_ = connectWithRetries(*config_);
  const std::string pattern = "weir:fence:" + config_->transactionIdPrefix + ":*";
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    RedisReply reply = connection_->command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
      const std::string why = reply ? std::string(replyText(reply.get())) : connection_->error();
      connection_.reset();
      throw Error(ErrorCode::kIo, config_->who() + ": cannot list the fence keys: " + why);
    }
    cursor = std::string(replyText(reply->element[0]));
    for (size_t i = 0; i < reply->element[1]->elements; ++i) keys.emplace_back(replyText(reply->element[1]->element[i]));
  } while (cursor != "0");
  for (const std::string& key : keys) {
    const std::string index = key.substr(pattern.size() - 1);
    int subtask = 0;
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), subtask);
    if (ec != std::errc() || end != index.data() + index.size() || subtask % parallelism_ != subtask_) continue;
    RedisReply done = restoredCheckpoint == 0
                          ? connection_->command({"DEL", key})
                          : connection_->command({"ZREMRANGEBYSCORE", key, "(" + std::to_string(restoredCheckpoint), "+inf"});
    if (!done || done->type == REDIS_REPLY_ERROR)
      throw Error(ErrorCode::kIo, config_->who() + ": cannot reset fence '" + key + "': " +
                                      (done ? std::string(replyText(done.get())) : connection_->error()));
  }
}

void RedisWriter::snapshotState(const FunctionSnapshotContext& context) {
  lastCheckpoint_ = context.getCheckpointId();
  state_->update({std::to_string(lastCheckpoint_)});
}

void RedisWriter::close() { connection_.reset(); }

// ---- the committer

namespace {

class RedisCommitter final : public Committer<RedisCommittable> {
 public:
  RedisCommitter(std::shared_ptr<const RedisSinkConfig> config, RuntimeContext& context)
      : config_(std::move(config)),
        committed_(context.getMetricGroup().addGroup("RedisSink").counter("transactionsCommitted")) {}

  void commit(std::vector<CommitRequest<RedisCommittable>>& requests) override {
    for (auto& request : requests) {
      try {
        commitOne(request);
      } catch (...) {
        connection_.reset();  // a MULTI left half-queued is dropped with it
        throw;
      }
    }
  }

 private:
  void commitOne(CommitRequest<RedisCommittable>& request) {
    const RedisCommittable& c = request.getCommittable();
    const std::string fence = config_->fenceKey(c.subtask);
    std::string id = fence + " " + std::to_string(c.number);
    std::vector<std::string> args;
    std::vector<uint32_t> counts;
    decode(c.commands, args, counts);
    for (int attempt = 0, raced = 0;; ++attempt) {
      std::string why;
      switch (tryCommit(c, fence, id, args, counts, why)) {
        case Result::kRaced:  // another subtask changed the fence meanwhile: look again
          if (++raced < 1000) {
            --attempt;
            continue;
          }
          why = "its fence kept changing under WATCH";
          break;
        case Result::kCommitted:
          committed_.inc();
          return;
        case Result::kAlreadyCommitted:
          request.signalAlreadyCommitted();
          return;
        case Result::kRefused:
          request.signalFailedWithUnknownReason(config_->who() + ": " + why);
          return;
        case Result::kLost:
          break;
      }
      connection_.reset();
      if (attempt >= config_->maxRetries) {
        std::fprintf(stderr, "weir: %s: cannot apply the commands of '%s' now (%s); trying again at the next "
                     "checkpoint\n", config_->who().c_str(), id.c_str(), why.c_str());
        request.retryLater();
        return;
      }
      std::this_thread::sleep_for(config_->retryBackoff * (attempt + 1));
    }
  }

  enum class Result { kCommitted, kAlreadyCommitted, kRefused, kLost, kRaced };

  Result tryCommit(const RedisCommittable& c, const std::string& fence, std::string& id,
                   const std::vector<std::string>& args, const std::vector<uint32_t>& counts, std::string& why) {
    if (!connection_) {
      if (!(connection_ = RedisConnection::open(endpointOf(*config_), config_->who(), why))) return Result::kLost;
    }
    RedisConnection& r = *connection_;
    auto lost = [&](const RedisReply& reply) {
      why = reply ? std::string(replyText(reply.get())) : r.error();
      return reply && !transientRedisError(why) ? Result::kRefused : Result::kLost;
    };
    RedisReply watched = r.command({"WATCH", fence});
    if (!watched || watched->type == REDIS_REPLY_ERROR) return lost(watched);
    const std::string number = std::to_string(c.number);
    RedisReply applied = r.command({"ZSCORE", fence, number});
    if (!applied || applied->type == REDIS_REPLY_ERROR) return lost(applied);
    if (applied->type != REDIS_REPLY_NIL) {
      r.command({"UNWATCH"});
      return Result::kAlreadyCommitted;
    }
    WEIR_COLD_SYNC_POINT_CALLBACK("RedisSink::BeforeCommit", &id);
    r.append(std::vector<std::string>{"MULTI"});
    size_t at = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      r.append(args.data() + at, counts[i]);
      at += counts[i];
      if (i == counts.size() / 2) {
        // Halfway: what was queued so far reaches the server, inside the MULTI.
        if (!r.sendQueued()) return lost(RedisReply(nullptr, &freeReplyObject));
        WEIR_COLD_SYNC_POINT_CALLBACK("RedisSink::InMulti", &id);
      }
    }
    r.append(std::vector<std::string>{"ZADD", fence, number, number});
    r.append(std::vector<std::string>{"ZREMRANGEBYRANK", fence, "0", std::to_string(-kFenceRemembers - 1)});
    r.append(std::vector<std::string>{"EXEC"});
    // MULTI's OK, a QUEUED per command (or an error that makes EXEC refuse them all),
    // the fence's two QUEUED, then EXEC's replies.
    std::string queueError;
    for (size_t i = 0; i < counts.size() + 3; ++i) {
      RedisReply reply = r.nextReply();
      if (!reply) return lost(reply);
      if (reply->type == REDIS_REPLY_ERROR && queueError.empty()) queueError = std::string(replyText(reply.get()));
    }
    RedisReply exec = r.nextReply();
    if (!exec) return lost(exec);
    if (exec->type == REDIS_REPLY_NIL) return Result::kRaced;  // the fence changed under WATCH
    if (exec->type == REDIS_REPLY_ERROR) {
      why = "the server refused the commands of '" + id + "': " + (queueError.empty() ? "" : queueError + "; ") +
            std::string(replyText(exec.get()));
      return transientRedisError(why) ? Result::kLost : Result::kRefused;
    }
    WEIR_COLD_SYNC_POINT_CALLBACK("RedisSink::AfterCommit", &id);
    // Redis applies the other commands of a MULTI when one fails: say which.
    at = 0;
    for (size_t i = 0; i < exec->elements && i < counts.size(); ++i) {
      if (exec->element[i]->type == REDIS_REPLY_ERROR) {
        why = "'" + commandText(args.data() + at, counts[i]) + "' of '" + id +
              "' was refused: " + std::string(replyText(exec->element[i])) +
              " (the other commands of its checkpoint were applied)";
        return Result::kRefused;
      }
      at += counts[i];
    }
    return Result::kCommitted;
  }

  std::shared_ptr<const RedisSinkConfig> config_;
  std::unique_ptr<RedisConnection> connection_;
  Counter committed_;
};

}  // namespace

std::unique_ptr<Committer<RedisCommittable>> makeRedisCommitter(std::shared_ptr<const RedisSinkConfig> config,
                                                                RuntimeContext& context) {
  return std::make_unique<RedisCommitter>(std::move(config), context);
}

}  // namespace weir::detail
