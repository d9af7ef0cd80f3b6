// Whether an address stays on this machine: what the REST server and the CLI ask before
// they serve, or send a token, without TLS.
#pragma once

#include <string>

namespace weir::core {

// `localhost`, an IPv4 address in 127.0.0.0/8, or ::1 (also as [::1]). Any other name
// is not, even one that starts with "127.": it may resolve anywhere.
bool isLoopbackAddress(const std::string& address);

}  // namespace weir::core
