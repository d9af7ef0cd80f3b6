#include "weir/detail/state/ttl_state.h"

namespace weir::detail {

std::optional<std::string> unexpiredBytes(std::string_view value, bool list, const TtlPolicy& policy, int64_t now) {
  auto expiredAt = [&](std::string_view bytes) {
    DataInput in(bytes);
    return policy.expired(in.read<int64_t>(), now);
  };
  if (!list) {
    if (expiredAt(value)) return std::nullopt;
    return std::string(value);
  }
  DataInput in(value);
  DataOutput kept;
  while (!in.atEnd()) {
    std::string_view element = in.readStringView();
    if (!expiredAt(element)) kept.writeString(element);
  }
  if (kept.size() == 0) return std::nullopt;
  return kept.release();
}

}  // namespace weir::detail
