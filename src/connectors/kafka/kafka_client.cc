#include "connectors/kafka/kafka_client.h"

namespace weir::detail {

rd_kafka_conf_t* makeKafkaConf(const std::string& who, const std::string& bootstrapServers,
                               const std::map<std::string, std::string>& defaults,
                               const std::map<std::string, std::string>& properties) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char error[512];
  auto set = [&](const std::string& key, const std::string& value) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), error, sizeof error) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw kafkaInvalid(who, "property '" + key + "' = '" + value + "': " + error);
    }
  };
  set("bootstrap.servers", bootstrapServers);
  set("log_level", "3");  // librdkafka's errors on stderr, not its notices
  for (const auto& [key, value] : defaults) set(key, value);
  for (const auto& [key, value] : properties) set(key, value);
  return conf;
}

rd_kafka_t* makeKafkaClient(const std::string& who, rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  char error[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof error);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw kafkaInvalid(who, error);
  }
  return rk;
}

}  // namespace weir::detail
