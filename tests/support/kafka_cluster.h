// A Kafka cluster for a test: weir_kafka_mock (kafka_mock_main.cc) started as a process
// of its own, driven through its stdin; plus a producer and a reader that talk to it
// over the Kafka protocol as any client does (librdkafka).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace weir::test {

class KafkaCluster {
 public:
  // Starts a mock cluster of `brokers` brokers; throws std::runtime_error when it
  // cannot. When WEIR_KAFKA_BROKERS names a real cluster (host:port,...), uses that one
  // instead: createTopic then deletes and recreates the topic, and what only the mock
  // can do (brokers down, injected errors) throws.
  explicit KafkaCluster(int brokers = 3);
  ~KafkaCluster();  // closes its stdin: it exits
  KafkaCluster(const KafkaCluster&) = delete;
  KafkaCluster& operator=(const KafkaCluster&) = delete;

  const std::string& bootstrapServers() const { return bootstrap_; }
  bool isMock() const { return pid_ > 0; }
  void createTopic(const std::string& topic, int partitions);
  void setBrokerDown(int id);
  void setBrokerUp(int id);
  // The next `count` requests of `apiKey` fail with Kafka error `code`.
  void pushRequestErrors(int apiKey, int code, int count);

 private:
  void command(const std::string& line);
  pid_t pid_ = -1;
  FILE* in_ = nullptr;   // its stdin
  FILE* out_ = nullptr;  // its stdout
  std::string bootstrap_;
};

struct KafkaTestRecord {
  std::string key;
  std::string value;
  int32_t partition = -1;  // -1: by the key's hash
  int64_t timestamp = 0;   // 0: the producer's clock
};

// Produces `records` into `topic` and waits until every one is acknowledged; throws
// std::runtime_error naming a record that failed.
void produce(const std::string& bootstrap, const std::string& topic, const std::vector<KafkaTestRecord>& records);

// Every record of `topic` as (partition, offset, key, value), read from the beginning of
// each partition to its end at the time of the call.
struct KafkaReadRecord {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;
  std::string value;
  int64_t timestamp = 0;
  std::vector<std::pair<std::string, std::string>> headers;
};
// Reads as librdkafka's default, read_committed: a real broker hides what aborted
// transactions wrote, the mock cluster does not. Throws when a partition no longer
// starts at offset 0: the mock cluster drops the oldest batches of a partition beyond
// 5 MiB or 100,000 batches, so a test spreads a large topic over many partitions.
std::vector<KafkaReadRecord> readAll(const std::string& bootstrap, const std::string& topic);

// The offset group `group` committed on each partition [0, partitions) of `topic`; -1
// where it committed none.
std::map<int32_t, int64_t> committedOffsets(const std::string& bootstrap, const std::string& group,
                                            const std::string& topic, int partitions);

}  // namespace weir::test
