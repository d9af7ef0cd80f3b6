// librdkafka configurations and clients, as KafkaSource and KafkaSink make them: weir's
// defaults, then the user's properties, each checked, with librdkafka's own message
// when one is refused.
#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <string>

#include "weir/error.h"

namespace weir::detail {

// `who` starts every message: "kafka source", "kafka sink".
inline Error kafkaInvalid(const std::string& who, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, who + ": " + what);
}

// A configuration with bootstrap.servers, `defaults` and then `properties` set. Throws
// weir::Error (kInvalidArgument) naming a property librdkafka refuses.
rd_kafka_conf_t* makeKafkaConf(const std::string& who, const std::string& bootstrapServers,
                               const std::map<std::string, std::string>& defaults,
                               const std::map<std::string, std::string>& properties);

// A client of `type` made from `conf` (taken, also on failure).
rd_kafka_t* makeKafkaClient(const std::string& who, rd_kafka_type_t type, rd_kafka_conf_t* conf);

}  // namespace weir::detail
