#include "support/kafka_cluster.h"

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
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

Handle client(rd_kafka_type_t type, const std::string& bootstrap, const std::string& group = "weir-test-reader") {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const char* key, const char* value) {
    if (rd_kafka_conf_set(conf, key, value, error, sizeof error) != RD_KAFKA_CONF_OK)
      throw std::runtime_error(std::string("kafka test client: ") + error);
  };
  set("bootstrap.servers", bootstrap.c_str());
  set("log_level", "3");
  if (type == RD_KAFKA_CONSUMER) {
    set("group.id", group.c_str());
    set("enable.auto.commit", "false");
    set("enable.partition.eof", "true");  // a partition whose end is a transaction marker ends too
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof error);
  if (rk == nullptr) throw std::runtime_error(std::string("kafka test client: ") + error);
  return Handle(rk, &rd_kafka_destroy);
}

}  // namespace

KafkaCluster::KafkaCluster(int brokers) {
  if (const char* external = std::getenv("WEIR_KAFKA_BROKERS"); external != nullptr && *external != 0) {
    bootstrap_ = external;
    return;
  }
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
  if (!isMock()) throw std::runtime_error("KafkaCluster: '" + line + "' needs the mock cluster (WEIR_KAFKA_BROKERS is set)");
  std::fputs((line + "\n").c_str(), in_);
  std::fflush(in_);
  std::string answer = readLine(out_);
  if (answer != "ok") throw std::runtime_error("KafkaCluster: '" + line + "': " + answer);
}

namespace {

// Runs one admin request on a real cluster and waits for its result event.
void adminRequest(const std::string& bootstrap, const std::string& what,
                  const std::function<void(rd_kafka_t*, rd_kafka_queue_t*)>& request) {
  Handle admin = client(RD_KAFKA_PRODUCER, bootstrap);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(admin.get());
  request(admin.get(), queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 30000);
  std::string error = event == nullptr ? "no answer within 30 s" : "";
  if (event != nullptr && rd_kafka_event_error(event)) error = rd_kafka_event_error_string(event);
  if (event != nullptr) rd_kafka_event_destroy(event);
  rd_kafka_queue_destroy(queue);
  if (!error.empty()) throw std::runtime_error("KafkaCluster: " + what + ": " + error);
}

}  // namespace

void KafkaCluster::createTopic(const std::string& topic, int partitions) {
  if (isMock()) {
    command("topic " + topic + " " + std::to_string(partitions));
    return;
  }
  // A real cluster: the topic is made afresh (what an earlier run left is deleted).
  adminRequest(bootstrap_, "delete topic '" + topic + "'", [&](rd_kafka_t* rk, rd_kafka_queue_t* q) {
    rd_kafka_DeleteTopic_t* del = rd_kafka_DeleteTopic_new(topic.c_str());
    rd_kafka_DeleteTopics(rk, &del, 1, nullptr, q);
    rd_kafka_DeleteTopic_destroy(del);
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  adminRequest(bootstrap_, "create topic '" + topic + "'", [&](rd_kafka_t* rk, rd_kafka_queue_t* q) {
    char error[256];
    rd_kafka_NewTopic_t* add = rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, error, sizeof error);
    rd_kafka_CreateTopics(rk, &add, 1, nullptr, q);
    rd_kafka_NewTopic_destroy(add);
  });
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
      if (low > 0)  // the topics of a test are new: nothing was ever deleted on purpose
        throw std::runtime_error("read '" + topic + "': partition " + std::to_string(partition) + " starts at offset " +
                                 std::to_string(low) +
                                 ", not 0: its oldest records are gone (the mock cluster keeps 5 MiB or 100,000 "
                                 "batches per partition: use more partitions)");
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
  auto ended = [&](std::pair<int32_t, int64_t>* end) {
    if (end == nullptr || end->second < 0) return;
    end->second = -1;
    --open;
  };
  while (open > 0) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 10000);
    if (m == nullptr) throw std::runtime_error("read '" + topic + "': no record within 10 s");
    if (m->err) {
      const rd_kafka_resp_err_t failed = m->err;
      const int32_t partition = m->partition;
      const int64_t at = m->offset;
      std::string why = rd_kafka_message_errstr(m);
      rd_kafka_message_destroy(m);
      if (failed != RD_KAFKA_RESP_ERR__PARTITION_EOF) throw std::runtime_error("read '" + topic + "': " + why);
      if (auto* end = endOf(partition); end != nullptr && at >= end->second) ended(end);
      continue;
    }
    KafkaReadRecord r;
    r.partition = m->partition;
    r.offset = m->offset;
    if (m->key) r.key.assign(static_cast<const char*>(m->key), m->key_len);
    if (m->payload) r.value.assign(static_cast<const char*>(m->payload), m->len);
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name;
      const void* value;
      size_t size;
      for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i)
        r.headers.emplace_back(name, value ? std::string(static_cast<const char*>(value), size) : std::string());
    }
    r.timestamp = rd_kafka_message_timestamp(m, nullptr);
    rd_kafka_message_destroy(m);
    auto* end = endOf(r.partition);
    if (end != nullptr && r.offset < end->second) {
      out.push_back(std::move(r));
      if (out.back().offset + 1 == end->second) ended(end);
    }
  }
  rd_kafka_consumer_close(consumer.get());
  return out;
}

std::map<int32_t, int64_t> committedOffsets(const std::string& bootstrap, const std::string& group,
                                            const std::string& topic, int partitions) {
  Handle consumer = client(RD_KAFKA_CONSUMER, bootstrap, group);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
  const rd_kafka_resp_err_t err = rd_kafka_committed(consumer.get(), list, 10000);
  std::map<int32_t, int64_t> out;
  for (int i = 0; i < list->cnt; ++i)
    out[list->elems[i].partition] = list->elems[i].offset >= 0 ? list->elems[i].offset : -1;
  rd_kafka_topic_partition_list_destroy(list);
  if (err) throw std::runtime_error("committed offsets of group '" + group + "': " + rd_kafka_err2str(err));
  return out;
}

}  // namespace weir::test
