// weir_kafka_mock: a Kafka cluster for tests — librdkafka's mock cluster (real brokers
// speaking the Kafka protocol on loopback TCP) in a process of its own, so that a job,
// kcat and a test's checker reach it as separate clients, and a job killed with
// `kill -9` leaves it running.
//
//   weir_kafka_mock [BROKERS]     (default 3)
//
// Prints "bootstrap HOST:PORT,..." and then answers commands on stdin, one per line,
// with "ok" or "error WHY":
//   topic NAME PARTITIONS        creates a topic (replication factor 1)
//   down ID | up ID              sets broker ID (1..BROKERS) down or up
//   errors APIKEY CODE COUNT     the next COUNT requests of that API key fail with CODE
// It exits when stdin closes: when its test ends, however it ends.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const int brokers = argc > 1 ? std::atoi(argv[1]) : 3;
  if (brokers < 1) {
    std::cerr << "weir_kafka_mock: BROKERS must be a positive number\n";
    return 2;
  }
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", error, sizeof error);  // errors only
  rd_kafka_t* host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (host == nullptr) {
    std::cerr << "weir_kafka_mock: " << error << "\n";
    return 1;
  }
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(host, brokers);
  if (cluster == nullptr) {
    std::cerr << "weir_kafka_mock: the mock cluster did not start\n";
    return 1;
  }
  std::cout << "bootstrap " << rd_kafka_mock_cluster_bootstraps(cluster) << std::endl;
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (command == "topic") {
      std::string name;
      int partitions = 0;
      if (!(words >> name >> partitions) || partitions < 1) {
        std::cout << "error usage: topic NAME PARTITIONS" << std::endl;
        continue;
      }
      err = rd_kafka_mock_topic_create(cluster, name.c_str(), partitions, 1);
    } else if (command == "down" || command == "up") {
      int32_t id = 0;
      if (!(words >> id)) {
        std::cout << "error usage: " << command << " ID" << std::endl;
        continue;
      }
      err = command == "down" ? rd_kafka_mock_broker_set_down(cluster, id) : rd_kafka_mock_broker_set_up(cluster, id);
    } else if (command == "errors") {
      int apiKey = 0, code = 0;
      size_t count = 0;
      if (!(words >> apiKey >> code >> count)) {
        std::cout << "error usage: errors APIKEY CODE COUNT" << std::endl;
        continue;
      }
      std::vector<rd_kafka_resp_err_t> errors(count, static_cast<rd_kafka_resp_err_t>(code));
      rd_kafka_mock_push_request_errors_array(cluster, static_cast<int16_t>(apiKey), count, errors.data());
    } else {
      std::cout << "error unknown command '" << command << "'" << std::endl;
      continue;
    }
    if (err) std::cout << "error " << rd_kafka_err2str(err) << std::endl;
    else std::cout << "ok" << std::endl;
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(host);
  return 0;
}
