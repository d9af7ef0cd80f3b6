// What a test harness captured of a stream of strings, as text: records as "r" or "r@t"
// (with their timestamps), watermarks as "W<t>", in order.
#pragma once

#include <string>
#include <vector>

#include "weir/testing/operator_harness.h"

namespace weir::test {

inline std::vector<std::string> emittedAsText(const CapturingOutput<std::string>& out) {
  std::vector<std::string> lines;
  for (const auto& e : out.events()) {
    if (e.kind == Emitted<std::string>::Kind::kWatermark) lines.push_back("W" + std::to_string(e.watermark));
    else if (e.kind == Emitted<std::string>::Kind::kRecord)
      lines.push_back(*e.record + (e.timestamp ? "@" + std::to_string(*e.timestamp) : ""));
  }
  return lines;
}

}  // namespace weir::test
