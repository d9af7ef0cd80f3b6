#include "weir/checkpointed_function.h"

namespace weir::detail {

std::vector<OperatorStateSnapshot> OperatorStateRegistry::snapshot() const {
  std::vector<OperatorStateSnapshot> out;
  for (const auto& [name, registered] : states_) {
    out.push_back(OperatorStateSnapshot{name, registered.mode, registered.state->serializeElements()});
  }
  return out;
}

std::vector<std::vector<OperatorStateSnapshot>> redistributeOperatorState(
    const std::vector<std::vector<OperatorStateSnapshot>>& old, int parallelism) {
  if (parallelism < 1)
    throw Error(ErrorCode::kInvalidArgument, "operator state cannot be redistributed to parallelism " +
                                                 std::to_string(parallelism));
  // Every state's elements over all old instances, in instance order.
  std::map<std::string, OperatorStateSnapshot> all;
  for (const auto& instance : old) {
    for (const auto& state : instance) {
      auto [it, fresh] = all.try_emplace(state.name, OperatorStateSnapshot{state.name, state.mode, {}});
      if (!fresh && it->second.mode != state.mode) {
        throw Error(ErrorCode::kState, "operator state '" + state.name +
                                           "' is a list state in one instance and a union list state in another");
      }
      it->second.elements.insert(it->second.elements.end(), state.elements.begin(), state.elements.end());
    }
  }
  std::vector<std::vector<OperatorStateSnapshot>> out(static_cast<size_t>(parallelism));
  for (const auto& [name, state] : all) {
    if (state.mode == OperatorStateMode::kUnion) {
      for (auto& instance : out) instance.push_back(state);
      continue;
    }
    // Contiguous parts: the first (n % p) instances get one element more.
    const size_t n = state.elements.size(), p = out.size();
    size_t begin = 0;
    for (size_t i = 0; i < p; ++i) {
      size_t size = n / p + (i < n % p ? 1 : 0);
      OperatorStateSnapshot part{name, state.mode, {}};
      part.elements.assign(state.elements.begin() + static_cast<std::ptrdiff_t>(begin),
                           state.elements.begin() + static_cast<std::ptrdiff_t>(begin + size));
      out[i].push_back(std::move(part));
      begin += size;
    }
  }
  return out;
}

}  // namespace weir::detail
