#include "core/printable.h"

namespace weir::core {

std::string printableAscii(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';  // a char above 0x7f is negative: caught by c < 0x20
  return out;
}

}  // namespace weir::core
