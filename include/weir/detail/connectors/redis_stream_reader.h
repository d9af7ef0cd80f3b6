// The machinery of RedisStreamSource (weir/redis_stream_source.h), compiled once in
// src/connectors/redis/: its configuration, streams as splits, the enumerator that
// hands each stream to one reader, and the reader of one subtask, whose thread of its
// own reads all its streams through one hiredis connection. No hiredis type shows here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "weir/redis_stream_deserialization_schema.h"
#include "weir/source.h"

namespace weir::detail {

struct RedisStreamSourceConfig {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string username;  // AUTH <username> <password> when set (Redis 6 ACLs)
  std::string password;  // AUTH <password> when set
  std::vector<std::string> streams;
  std::string startingId = "0";                    // "0" / "-", "$", or an ID (inclusive)
  std::map<std::string, std::string> startingIds;  // per stream, over startingId
  bool bounded = false;
  std::map<std::string, std::string> stoppingIds;  // bounded: the last ID to read (inclusive), per stream
  std::string timestampField;                      // empty: the ID's millisecond part
  size_t batchSize = 1000;                         // XREAD COUNT, per stream
  std::chrono::milliseconds connectTimeout{5000};    // the start: how long to try to reach the server
  std::chrono::milliseconds reconnectTimeout{60000}; // a lost connection: how long to try again
  std::chrono::milliseconds requestTimeout{10000};   // a reply slower than this: the connection is lost
  // "host:port", as messages name the server.
  std::string address() const { return host + ":" + std::to_string(port); }
  // Throws weir::Error (kInvalidArgument) naming what is wrong.
  void validate() const;
};

// One stream: a split. Its position is the ID of the last entry read (XREAD reads
// after it), decided when the split is first read, as is a bounded split's stop.
struct RedisStreamSplit final : SourceSplit {
  std::string stream;
  std::string position;  // "<ms>-<seq>"; empty: not decided yet (the starting ID decides)
  std::string stopId;    // the last ID to read; empty: none decided (a bounded source decides it)
  std::string splitId() const override { return stream; }
  std::string encode() const;
  // Throws weir::Error (kCheckpoint) when `bytes` are not a Redis split's state.
  static RedisStreamSplit decode(const std::string& bytes);
};

// Checks that the server answers (trying for the connect timeout), that AUTH works, and
// that every stream is a stream or does not exist yet; then hands stream i to reader
// i % parallelism. Throws weir::Error naming the server, the key and the reason.
std::unique_ptr<SplitEnumerator> createRedisStreamEnumerator(std::shared_ptr<const RedisStreamSourceConfig> config,
                                                             int parallelism);

// The timestamp of `entry`: its ID's millisecond part, or with a timestamp field, that
// field as an integer of ms since the epoch. Throws weir::SerializationError when the
// field is missing or not an integer.
int64_t redisEntryTimestamp(const RedisStreamEntry& entry, const std::string& timestampField);

// One reader's streams. A thread of its own holds the connection: it resolves each new
// split's IDs, reads every stream at once with XREAD (blocking when nothing is there),
// reconnects with backoff when the connection drops (reading on after the last entry
// it fetched), and queues what it read; poll() hands the queue on, in order, on the
// subtask's thread, which alone tracks what the checkpoint holds.
class RedisStreamReader {
 public:
  RedisStreamReader(std::shared_ptr<const RedisStreamSourceConfig> config, const SourceReaderContext& context);
  ~RedisStreamReader();
  RedisStreamReader(const RedisStreamReader&) = delete;
  RedisStreamReader& operator=(const RedisStreamReader&) = delete;

  // Takes the enumerator's new splits, then hands up to `maxRecords` queued entries to
  // `visit` in order, which returns how many records of the job it made. Throws
  // weir::Error when the reading thread gave up (naming the server, key and reason).
  InputStatus poll(size_t maxRecords, const std::function<size_t(const RedisStreamEntry&)>& visit);
  // After poll: which split the records it made came from, as runs in order.
  std::span<const SplitRun> runs() const { return runs_; }
  // After NOTHING_AVAILABLE: when to poll again. The reading thread wakes the subtask
  // when it queues something (SourceReaderContext::wakeUp); without one, soon.
  std::chrono::steady_clock::time_point nextPollTime() const;
  std::vector<std::string> snapshotState(int64_t checkpointId);
  void addSplits(const std::vector<std::string>& splits);
  void close();

  struct Fetcher;  // the reading thread and what it shares with the subtask (the .cc's)

 private:
  struct Split {
    RedisStreamSplit split;
    bool finished = false;
  };
  void start(RedisStreamSplit split);
  SplitRun& runOf(const std::string& splitId);

  std::shared_ptr<const RedisStreamSourceConfig> config_;
  SourceReaderContext context_;
  std::map<std::string, Split> splits_;  // by stream
  std::vector<SplitRun> runs_;
  std::vector<SplitRun> announced_;  // splits started since the last poll, as runs of no record
  bool enumeratorDone_ = false;
  std::unique_ptr<Fetcher> fetcher_;  // started with the first split
  // Flink's source metrics; the gauge reads this on the subtask's thread.
  double fetchEventTimeLag_;  // ms from the last entry's ID time to its hand-over; NaN: none yet
  Counter reconnects_;
};

}  // namespace weir::detail
