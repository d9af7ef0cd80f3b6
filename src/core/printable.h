// Text from outside (what a client sent, what a server answered, a name a user gave)
// made safe to quote in a message, a terminal or a Prometheus label.
#pragma once

#include <string>

namespace weir::core {

// `text` with every byte that is not printable ASCII (a control character, DEL, or a
// byte of a multi-byte character) replaced by '?'.
std::string printableAscii(const std::string& text);

}  // namespace weir::core
