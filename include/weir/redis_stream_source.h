// Reads Redis streams through hiredis. Each stream is a split, read by one subtask;
// the ID of the last entry each one read is in the checkpoint, so a job resumes right
// after the last entry its checkpoint covers.
//
//   auto source = RedisStreamSource<std::string>::builder()
//                     .setAddress("localhost:6379")
//                     .setStreams({"clicks"})
//                     .setStartingId("0")
//                     .setValueOnlyDeserializer("payload", SimpleStringSchema())
//                     .build();
//   env.fromSource(source, WatermarkStrategy<std::string>::forBoundedOutOfOrderness(5s), "clicks");
//
// Records carry the time of their entry's ID (or of a field, setTimestampField): a
// WatermarkStrategy without a timestamp assigner uses it, and watermarks are made per
// stream. docs/redis.md says what a Flink user should know.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/bad_record.h"
#include "weir/detail/connectors/redis_address.h"
#include "weir/detail/connectors/redis_stream_reader.h"
#include "weir/error.h"
#include "weir/redis_stream_deserialization_schema.h"
#include "weir/source.h"

namespace weir {

namespace detail {

template <class T>
class RedisStreamSourceReader final : public SourceReader<T> {
 public:
  RedisStreamSourceReader(std::shared_ptr<const RedisStreamSourceConfig> config,
                          std::unique_ptr<RedisStreamDeserializationSchema<T>> deserializer,
                          const SourceReaderContext& context)
      : timestampField_(config->timestampField),
        streams_(std::move(config), context),
        deserializer_(std::move(deserializer)),
        badRecords_(context.badRecords != nullptr ? context.badRecords : &failing_) {}

  InputStatus pollNext(std::vector<T>& out, size_t maxRecords) override {
    timestamps_.clear();
    const size_t before = out.size();
    Collector<T> collector(&out, &timestamps_, nullptr, std::numeric_limits<size_t>::max());
    return streams_.poll(maxRecords, [&](const RedisStreamEntry& entry) -> size_t {
      const size_t at = out.size();
      try {
        collector.setTimestamp(true, redisEntryTimestamp(entry, timestampField_));
        deserializer_->deserialize(entry, collector);
      } catch (const SerializationError& e) {
        out.resize(at);
        timestamps_.resize(at - before);
        badRecords_->handle(entry.stream, idMillis(entry.id), "entry " + entry.id + ": " + e.what(), rawBytes(entry));
      }
      return out.size() - at;
    });
  }
  std::chrono::steady_clock::time_point nextPollTime() const override { return streams_.nextPollTime(); }
  std::span<const SplitRun> splitRuns() const override { return streams_.runs(); }
  std::span<const int64_t> recordTimestamps() const override { return timestamps_; }
  std::vector<std::string> snapshotState(int64_t checkpointId) override { return streams_.snapshotState(checkpointId); }
  void addSplits(std::vector<std::string> splits) override { streams_.addSplits(splits); }
  void close() override { streams_.close(); }

 private:
  // A bad record's position: its ID's millisecond part (the whole ID is in the reason).
  static int64_t idMillis(const std::string& id) {
    int64_t ms = 0;
    for (char c : id) {
      if (c < '0' || c > '9') break;
      ms = ms * 10 + (c - '0');
    }
    return ms;
  }
  // A bad record's bytes: its fields as "name=value" lines.
  static std::string rawBytes(const RedisStreamEntry& entry) {
    std::string out;
    for (const auto& [name, value] : entry.fields) {
      if (!out.empty()) out += '\n';
      out += name + "=" + value;
    }
    return out;
  }

  std::string timestampField_;
  RedisStreamReader streams_;
  std::unique_ptr<RedisStreamDeserializationSchema<T>> deserializer_;
  BadRecordHandler failing_;  // outside a job: FAIL
  BadRecordHandler* badRecords_;
  std::vector<int64_t> timestamps_;
};

}  // namespace detail

template <class T>
class RedisStreamSource final : public Source<T> {
  using MakeDeserializer = std::function<std::unique_ptr<RedisStreamDeserializationSchema<T>>()>;

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
    // "host:port" (the last colon separates them). Throws weir::Error when the port is
    // not a number.
    Builder& setAddress(const std::string& address) {
      detail::parseRedisAddress("redis stream source", address, config_.host, config_.port);
      return *this;
    }
    // AUTH <password> after connecting. Default: none.
    Builder& setPassword(std::string password) {
      config_.password = std::move(password);
      return *this;
    }
    // AUTH <username> <password> (Redis 6 ACL users); needs setPassword too.
    Builder& setUsername(std::string username) {
      config_.username = std::move(username);
      return *this;
    }
    // The streams to read (their keys); each one is a split.
    Builder& setStreams(std::vector<std::string> streams) {
      config_.streams = std::move(streams);
      return *this;
    }
    // Where every stream starts, decided when it is first read: "0" (default; also
    // "-"): its first entry; "$": only entries added after that; an ID ("<ms>-<seq>"
    // or "<ms>"): from the first entry at or after it.
    Builder& setStartingId(std::string id) {
      config_.startingId = std::move(id);
      return *this;
    }
    // Where stream `stream` starts, over setStartingId.
    Builder& setStartingId(const std::string& stream, std::string id) {
      config_.startingIds[stream] = std::move(id);
      return *this;
    }
    // A bounded source: each stream is read up to its last entry when it is first read
    // (decided once and kept in the checkpoint), then the source ends.
    Builder& setBounded() {
      config_.bounded = true;
      return *this;
    }
    // A bounded source reading stream s up to `stoppingIds[s]` (inclusive; "<ms>" means
    // every entry of that millisecond), the others up to their last entry.
    Builder& setBounded(std::map<std::string, std::string> stoppingIds) {
      config_.bounded = true;
      config_.stoppingIds = std::move(stoppingIds);
      return *this;
    }
    // A RedisStreamDeserializationSchema<T> that sees the whole entry.
    template <class Schema>
      requires std::is_base_of_v<RedisStreamDeserializationSchema<T>, Schema>
    Builder& setDeserializer(Schema schema) {
      makeDeserializer_ = [schema] { return std::make_unique<Schema>(schema); };
      return *this;
    }
    // A function of the entry: T(const RedisStreamEntry&), or
    // void(const RedisStreamEntry&, Collector<T>&) (RedisStreamDeserializationSchema::of).
    template <class F>
      requires(!std::is_base_of_v<RedisStreamDeserializationSchema<T>, F>)
    Builder& setDeserializer(F f) {
      return setDeserializer(RedisStreamDeserializationSchema<T>::of(std::move(f)));
    }
    // A DeserializationSchema<T> of one field's value; an entry without it is a bad record.
    template <class Schema>
    Builder& setValueOnlyDeserializer(std::string field, Schema schema) {
      return setDeserializer(RedisStreamDeserializationSchema<T>::valueOnly(std::move(field), std::move(schema)));
    }
    // Record timestamps from this field (an integer, ms since the epoch) instead of the
    // ID's millisecond part; an entry without it, or not an integer, is a bad record.
    Builder& setTimestampField(std::string field) {
      config_.timestampField = std::move(field);
      return *this;
    }
    // Entries one XREAD takes per stream. Default: 1000.
    Builder& setBatchSize(size_t entries) {
      config_.batchSize = entries;
      return *this;
    }
    // How long the start keeps trying to reach the server before failing. Default 5 s.
    Builder& setConnectTimeout(std::chrono::milliseconds timeout) {
      config_.connectTimeout = timeout;
      return *this;
    }
    // How long a reader that lost its connection keeps trying again (backoff from
    // 50 ms to 2 s) before it fails the job. Default 60 s.
    Builder& setReconnectTimeout(std::chrono::milliseconds timeout) {
      config_.reconnectTimeout = timeout;
      return *this;
    }
    // A reply slower than this counts as a lost connection. Default 10 s.
    Builder& setRequestTimeout(std::chrono::milliseconds timeout) {
      config_.requestTimeout = timeout;
      return *this;
    }
    Builder& setBadRecordPolicy(BadRecordPolicy policy) {
      policy_ = policy;
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming what is missing or wrong.
    RedisStreamSource build() const {
      if (!makeDeserializer_)
        throw Error(ErrorCode::kInvalidArgument,
                    "redis stream source: setDeserializer(...) or setValueOnlyDeserializer(...) is required");
      auto config = std::make_shared<detail::RedisStreamSourceConfig>(config_);
      config->validate();
      return RedisStreamSource(std::move(config), makeDeserializer_, policy_);
    }

   private:
    detail::RedisStreamSourceConfig config_;
    MakeDeserializer makeDeserializer_;
    BadRecordPolicy policy_ = BadRecordPolicy::FAIL;
  };

  static Builder builder() { return Builder(); }

  Boundedness getBoundedness() const override {
    return config_->bounded ? Boundedness::BOUNDED : Boundedness::CONTINUOUS_UNBOUNDED;
  }
  bool supportsCheckpointing() const override { return true; }
  bool carriesTimestamps() const override { return true; }
  BadRecordPolicy badRecordPolicy() const override { return policy_; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const override {
    return detail::createRedisStreamEnumerator(config_, parallelism);
  }
  std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext& context) const override {
    return std::make_unique<detail::RedisStreamSourceReader<T>>(config_, makeDeserializer_(), context);
  }

 private:
  RedisStreamSource(std::shared_ptr<const detail::RedisStreamSourceConfig> config, MakeDeserializer make,
                    BadRecordPolicy policy)
      : config_(std::move(config)), makeDeserializer_(std::move(make)), policy_(policy) {}
  std::shared_ptr<const detail::RedisStreamSourceConfig> config_;
  MakeDeserializer makeDeserializer_;
  BadRecordPolicy policy_;
};

}  // namespace weir
