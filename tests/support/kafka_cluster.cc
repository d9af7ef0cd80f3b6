#include "support/kafka_cluster.h"

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <stdexcept>

extern char** environ;

namespace weir::test {

namespace {

std::string readLine(FILE* from) {
  std::string line;
  for (int c; (c = std::fgetc(from)) != EOF && c != '\n';) line.push_back(static_cast<char>(c));
  return line;
}

using Handle = std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)>;

Handle client(rd_kafka_type_t type, const std::string& bootstrap) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const char* key, const char* value) {
    if (rd_kafka_conf_set(conf, key, value, error, sizeof error) != RD_KAFKA_CONF_OK)
      throw std::runtime_error(std::string("kafka test client: ") + error);
  };
  set("bootstrap.servers", bootstrap.c_str());
  set("log_level", "3");
  if (type == RD_KAFKA_CONSUMER) {
    set("group.id", "weir-test-reader");
    set("enable.auto.commit", "false");
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof error);
  if (rk == nullptr) throw std::runtime_error(std::string("kafka test client: ") + error);
  return Handle(rk, &rd_kafka_destroy);
}

}  // namespace

KafkaCluster::KafkaCluster(int brokers) {
  int toChild[2], fromChild[2];
  if (pipe(toChild) != 0 || pipe(fromChild) != 0) throw std::runtime_error("KafkaCluster: pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, toChild[0], 0);
  posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1);
  posix_spawn_file_actions_addclose(&actions, toChild[1]);
  posix_spawn_file_actions_addclose(&actions, fromChild[0]);
  std::string path = WEIR_KAFKA_MOCK_PATH, count = std::to_string(brokers);
  char* argv[] = {path.data(), count.data(), nullptr};
  int spawned = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(toChild[0]);
  close(fromChild[1]);
  if (spawned != 0) throw std::runtime_error("KafkaCluster: cannot start " + path + ": " + std::strerror(spawned));
  in_ = fdopen(toChild[1], "w");
  out_ = fdopen(fromChild[0], "r");
  std::string first = readLine(out_);
  if (first.rfind("bootstrap ", 0) != 0) throw std::runtime_error("KafkaCluster: the mock cluster said '" + first + "'");
  bootstrap_ = first.substr(10);
}

KafkaCluster::~KafkaCluster() {
  if (in_ != nullptr) std::fclose(in_);
  if (out_ != nullptr) std::fclose(out_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void KafkaCluster::command(const std::string& line) {
  std::fputs((line + "\n").c_str(), in_);
  std::fflush(in_);
  std::string answer = readLine(out_);
  if (answer != "ok") throw std::runtime_error("KafkaCluster: '" + line + "': " + answer);
}

void KafkaCluster::createTopic(const std::string& topic, int partitions) {
  command("topic " + topic + " " + std::to_string(partitions));
}
void KafkaCluster::setBrokerDown(int id) { command("down " + std::to_string(id)); }
void KafkaCluster::setBrokerUp(int id) { command("up " + std::to_string(id)); }
void KafkaCluster::pushRequestErrors(int apiKey, int code, int count) {
  command("errors " + std::to_string(apiKey) + " " + std::to_string(code) + " " + std::to_string(count));
}

void produce(const std::string& bootstrap, const std::string& topic, const std::vector<KafkaTestRecord>& records) {
  Handle producer = client(RD_KAFKA_PRODUCER, bootstrap);
  for (const auto& r : records) {
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(producer.get(), RD_KAFKA_V_TOPIC(topic.c_str()),
                                    RD_KAFKA_V_PARTITION(r.partition < 0 ? RD_KAFKA_PARTITION_UA : r.partition),
                                    RD_KAFKA_V_KEY(r.key.data(), r.key.size()),
                                    RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(r.timestamp),
                                    RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(producer.get(), 10);
    if (err) throw std::runtime_error("produce to '" + topic + "': " + rd_kafka_err2str(err));
  }
  if (rd_kafka_flush(producer.get(), 30000) != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("produce to '" + topic + "': not every record was acknowledged within 30 s");
}

std::vector<KafkaReadRecord> readAll(const std::string& bootstrap, const std::string& topic) {
  Handle consumer = client(RD_KAFKA_CONSUMER, bootstrap);
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_topic_t* handle = rd_kafka_topic_new(consumer.get(), topic.c_str(), nullptr);
  rd_kafka_resp_err_t err = rd_kafka_metadata(consumer.get(), 0, handle, &metadata, 10000);
  rd_kafka_topic_destroy(handle);
  if (err) throw std::runtime_error("read '" + topic + "': " + rd_kafka_err2str(err));
  std::vector<std::pair<int32_t, int64_t>> ends;
  rd_kafka_topic_partition_list_t* assignment = rd_kafka_topic_partition_list_new(0);
  for (int i = 0; i < metadata->topic_cnt; ++i)
    for (int p = 0; p < metadata->topics[i].partition_cnt; ++p) {
      int32_t partition = metadata->topics[i].partitions[p].id;
      int64_t low = 0, high = 0;
      err = rd_kafka_query_watermark_offsets(consumer.get(), topic.c_str(), partition, &low, &high, 10000);
      if (err) throw std::runtime_error("read '" + topic + "': " + rd_kafka_err2str(err));
      if (high > low) {
        ends.emplace_back(partition, high);
        rd_kafka_topic_partition_list_add(assignment, topic.c_str(), partition)->offset = low;
      }
    }
  rd_kafka_metadata_destroy(metadata);
  rd_kafka_assign(consumer.get(), assignment);
  rd_kafka_topic_partition_list_destroy(assignment);
  std::vector<KafkaReadRecord> out;
  size_t open = ends.size();
  auto endOf = [&](int32_t partition) -> std::pair<int32_t, int64_t>* {
    for (auto& e : ends)
      if (e.first == partition) return &e;
    return nullptr;
  };
  while (open > 0) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 10000);
    if (m == nullptr) throw std::runtime_error("read '" + topic + "': no record within 10 s");
    if (m->err) {
      const rd_kafka_resp_err_t failed = m->err;
      std::string why = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      if (failed == RD_KAFKA_RESP_ERR__PARTITION_EOF) continue;
      throw std::runtime_error("read '" + topic + "': " + why);
    }
    KafkaReadRecord r;
    r.partition = m->partition;
    r.offset = m->offset;
    if (m->key) r.key.assign(static_cast<const char*>(m->key), m->key_len);
    if (m->payload) r.value.assign(static_cast<const char*>(m->payload), m->len);
    r.timestamp = rd_kafka_message_timestamp(m, nullptr);
    rd_kafka_message_destroy(m);
    auto* end = endOf(r.partition);
    if (end != nullptr && r.offset < end->second) {
      out.push_back(std::move(r));
      if (out.back().offset + 1 == end->second) --open;
    }
  }
  rd_kafka_consumer_close(consumer.get());
  return out;
}

}  // namespace weir::test
