#include "core/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace weir::core {

bool isLoopbackAddress(const std::string& address) {
  if (address == "localhost") return true;
  std::string literal = address;
  if (literal.size() > 2 && literal.front() == '[' && literal.back() == ']') literal = literal.substr(1, literal.size() - 2);
  in_addr v4{};
  if (::inet_pton(AF_INET, literal.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, literal.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

}  // namespace weir::core
