// The machinery of RedisSink (weir/redis_sink.h), compiled once in src/connectors/redis/:
// its configuration, the writer of one sink subtask (commands pipelined and acknowledged
// at each barrier, or kept for the checkpoint) and the committer that applies a
// checkpoint's commands in one MULTI/EXEC guarded by a fence key. docs/redis.md says why
// that is exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weir/checkpoint_config.h"
#include "weir/checkpointed_function.h"
#include "weir/committer.h"
#include "weir/delivery_guarantee.h"
#include "weir/redis_commands.h"
#include "weir/runtime_context.h"
#include "weir/runtime_execution_mode.h"
#include "weir/serializer.h"

namespace weir {

// The commands an exactly-once RedisSink writer took between two barriers, to be applied
// when the checkpoint completes.
struct RedisCommittable {
  int32_t subtask = 0;   // the writer's index when it prepared them: whose fence key guards them
  int64_t number = 0;    // one past that writer's last checkpoint; the fence holds those applied
  int64_t records = 0;
  int64_t commandCount = 0;
  std::string commands;  // encoded: per command its argument count, then each argument's length and bytes
};
WEIR_STRUCT(RedisCommittable, subtask, number, records, commandCount, commands);

namespace detail {

struct RedisSinkConfig {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string username;
  std::string password;
  DeliveryGuarantee guarantee = DeliveryGuarantee::AT_LEAST_ONCE;
  std::string transactionIdPrefix;  // EXACTLY_ONCE: names the fence keys
  int batchSize = 1000;             // commands pipelined before their replies are read
  int maxRetries = 3;
  std::chrono::milliseconds retryBackoff{1000};  // the n-th retry waits n times this
  std::chrono::milliseconds connectTimeout{10000};
  std::chrono::milliseconds requestTimeout{30000};

  // Throws weir::Error (kInvalidArgument) naming what is wrong.
  void validate() const;
  // Before the job runs: EXACTLY_ONCE needs checkpoints, and STREAMING (a BATCH stage
  // would hold all its commands in memory); the server must answer with these
  // credentials. Throws weir::Error (kInvalidJob) naming the server and reason.
  void checkSettings(const CheckpointConfig& checkpoints, RuntimeExecutionMode mode) const;
  // "redis sink (host:port)", for messages.
  std::string who() const;
  // The fence key of subtask `subtask`: weir:fence:<prefix>:<subtask>.
  std::string fenceKey(int subtask) const;
};

class RedisConnection;

// The writer side of one RedisSink subtask.
class RedisWriter {
 public:
  RedisWriter(std::shared_ptr<const RedisSinkConfig> config, RuntimeContext& context);
  ~RedisWriter();
  RedisWriter(const RedisWriter&) = delete;
  RedisWriter& operator=(const RedisWriter&) = delete;

  // Where the command builder writes the next record's commands; add() takes them.
  RedisCommands& commands() { return commands_; }
  void add();
  // AT_LEAST_ONCE: returns once the server acknowledged every command written. A command
  // it refuses (WRONGTYPE) throws weir::Error naming the record and the reply; a lost
  // connection is tried again, resending what was not acknowledged.
  void flush(bool endOfInput);
  std::vector<RedisCommittable> prepareCommit();
  // EXACTLY_ONCE: the fences of the subtask indexes this subtask stands for forget the
  // numbers above the restored checkpoint (are removed when starting afresh), so that
  // what the job writes again from there is applied.
  void initializeState(FunctionInitializationContext& context);
  void snapshotState(const FunctionSnapshotContext& context);
  void close();

 private:
  void send();
  void resetFences(int64_t restoredCheckpoint);

  std::shared_ptr<const RedisSinkConfig> config_;
  int subtask_;
  int parallelism_;
  std::string name_;
  std::unique_ptr<RedisConnection> connection_;
  RedisCommands commands_;
  // AT_LEAST_ONCE: the commands not acknowledged yet, and the record each belongs to.
  RedisCommands batch_;
  std::vector<int64_t> recordOf_;
  // EXACTLY_ONCE: the commands since the last barrier.
  RedisCommittable pending_;
  int64_t records_ = 0;  // records this subtask took, for messages
  int64_t lastCheckpoint_ = 0;
  ListState<std::string>* state_ = nullptr;
  Counter bytesOut_;
  Counter sendErrors_;
};

// The committer of one RedisSink subtask.
std::unique_ptr<Committer<RedisCommittable>> makeRedisCommitter(std::shared_ptr<const RedisSinkConfig> config,
                                                                RuntimeContext& context);

}  // namespace detail
}  // namespace weir
