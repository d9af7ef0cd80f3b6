// Writes to Redis through hiredis: each record becomes the commands a builder writes
// (XADD, SET, HSET, INCRBY, any), with two guarantees:
//
//   auto sink = RedisSink<Count>::builder()
//                   .setAddress("127.0.0.1:6379")
//                   .setCommandBuilder([](const Count& c, RedisCommands& out) {
//                     out.add({"HSET", "counts", c.word, std::to_string(c.n)});
//                   })
//                   .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
//                   .setTransactionIdPrefix("word-counts")
//                   .build();
//   counts.sinkTo(sink);
//
// AT_LEAST_ONCE (default) pipelines the commands and waits at each barrier until the
// server acknowledged them all. EXACTLY_ONCE keeps a checkpoint's commands and applies
// them when the checkpoint completes, in one MULTI/EXEC that also adds the checkpoint's
// number to the subtask's fence key, so that applying them again after a restore is a
// no-op (docs/redis.md).
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "weir/checkpointed_function.h"
#include "weir/delivery_guarantee.h"
#include "weir/detail/connectors/redis_address.h"
#include "weir/detail/connectors/redis_writer.h"
#include "weir/error.h"
#include "weir/redis_commands.h"
#include "weir/two_phase_committing_sink.h"

namespace weir {

template <class T>
class RedisSink final : public TwoPhaseCommittingSink<T, RedisCommittable> {
 public:
  class Builder {
   public:
    // Default: 127.0.0.1, port 6379.
    Builder& setHost(std::string host) {
      config_.host = std::move(host);
      return *this;
    }
    Builder& setPort(int port) {
      config_.port = port;
      return *this;
    }
    // "host:port" (the last colon separates them).
    Builder& setAddress(const std::string& address) {
      detail::parseRedisAddress("redis sink", address, config_.host, config_.port);
      return *this;
    }
    // AUTH <password> (and <username>, Redis 6 ACL users) after connecting. Default: none.
    Builder& setPassword(std::string password) {
      config_.password = std::move(password);
      return *this;
    }
    Builder& setUsername(std::string username) {
      config_.username = std::move(username);
      return *this;
    }
    // Writes the commands of a record. Required.
    Builder& setCommandBuilder(RedisCommandBuilder<T> builder) {
      builder_ = std::move(builder);
      return *this;
    }
    // AT_LEAST_ONCE (default) or EXACTLY_ONCE; NONE is AT_LEAST_ONCE without the wait at
    // each barrier.
    Builder& setDeliveryGuarantee(DeliveryGuarantee guarantee) {
      config_.guarantee = guarantee;
      return *this;
    }
    // EXACTLY_ONCE: the fence keys are weir:fence:<prefix>:<subtask>. Required then, and
    // it must differ between jobs writing to the same server.
    Builder& setTransactionIdPrefix(std::string prefix) {
      config_.transactionIdPrefix = std::move(prefix);
      return *this;
    }
    // AT_LEAST_ONCE: commands pipelined before their replies are read. Default 1000.
    Builder& setBatchSize(int commands) {
      config_.batchSize = commands;
      return *this;
    }
    // A lost connection (or a server loading its data) is tried again this many times,
    // waiting 1 s, 2 s, … between. Default 3.
    Builder& setMaxRetries(int retries) {
      config_.maxRetries = retries;
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming what is missing or wrong.
    RedisSink build() const {
      if (!builder_) throw Error(ErrorCode::kInvalidArgument, "redis sink: setCommandBuilder(...) is required");
      config_.validate();
      return RedisSink(std::make_shared<detail::RedisSinkConfig>(config_), builder_);
    }

   private:
    detail::RedisSinkConfig config_;
    RedisCommandBuilder<T> builder_;
  };

  static Builder builder() { return Builder(); }

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(config_, context, builder_);
  }
  std::unique_ptr<Committer<RedisCommittable>> createCommitter(RuntimeContext& context) const override {
    return detail::makeRedisCommitter(config_, context);
  }
  void checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy&, RuntimeExecutionMode mode) const override {
    config_->checkSettings(checkpoints, mode);
  }

 private:
  RedisSink(std::shared_ptr<const detail::RedisSinkConfig> config, RedisCommandBuilder<T> builder)
      : config_(std::move(config)), builder_(std::move(builder)) {}

  class Writer final : public PrecommittingSinkWriter<T, RedisCommittable>, public CheckpointedFunction {
   public:
    Writer(std::shared_ptr<const detail::RedisSinkConfig> config, RuntimeContext& context, RedisCommandBuilder<T> b)
        : writer_(std::move(config), context), builder_(std::move(b)) {}

    void write(const T& record) override {
      builder_(record, writer_.commands());
      writer_.add();
    }
    void writeBatch(std::span<T> records) override {
      for (const T& r : records) write(r);
    }
    void flush(bool endOfInput) override { writer_.flush(endOfInput); }
    std::vector<RedisCommittable> prepareCommit() override { return writer_.prepareCommit(); }
    void initializeState(FunctionInitializationContext& context) override { writer_.initializeState(context); }
    void snapshotState(const FunctionSnapshotContext& context) override { writer_.snapshotState(context); }
    void close() override { writer_.close(); }

   private:
    detail::RedisWriter writer_;
    RedisCommandBuilder<T> builder_;
  };

  std::shared_ptr<const detail::RedisSinkConfig> config_;
  RedisCommandBuilder<T> builder_;
};

}  // namespace weir
