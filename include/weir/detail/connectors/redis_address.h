// "host:port" as the Redis connectors' setAddress takes it.
#pragma once

#include <string>

#include "weir/error.h"

namespace weir::detail {

// Splits `address` at its last colon into `host` and `port`; throws weir::Error
// (kInvalidArgument) starting with `who` when it is not host:port with a port number.
inline void parseRedisAddress(const std::string& who, const std::string& address, std::string& host, int& port) {
  const size_t colon = address.rfind(':');
  const std::string digits = colon == std::string::npos ? "" : address.substr(colon + 1);
  if (colon == 0 || digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw Error(ErrorCode::kInvalidArgument, who + ": the address '" + address + "' is not host:port");
  host = address.substr(0, colon);
  port = std::stoi(digits);
}

}  // namespace weir::detail
