#include "weir/output_tag.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "weir/error.h"

namespace weir::detail {

int internOutputTag(const std::string& id, std::type_index type) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::pair<int, std::type_index>> ids;
  std::lock_guard lock(mutex);
  auto [it, inserted] = ids.try_emplace(id, static_cast<int>(ids.size()), type);
  if (it->second.second != type)
    throw Error(ErrorCode::kInvalidJob, "OutputTag '" + id + "' is already used for another record type; give each side output type its own id");
  return it->second.first;
}

}  // namespace weir::detail
