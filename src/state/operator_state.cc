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
  const bool samePlaces = old.size() == out.size();
  size_t start = 0;  // the instance that takes the next state's first extra element
  for (const auto& [name, state] : all) {
    if (state.mode == OperatorStateMode::kUnion) {
      for (auto& instance : out) instance.push_back(state);
      continue;
    }
    if (samePlaces) {  // each instance keeps its own elements
      for (size_t i = 0; i < out.size(); ++i) {
        OperatorStateSnapshot part{name, state.mode, {}};
        for (const auto& s : old[i])
          if (s.name == name) part.elements.insert(part.elements.end(), s.elements.begin(), s.elements.end());
        out[i].push_back(std::move(part));
      }
      continue;
    }
    // Contiguous parts in instance order; the n % p instances from `start` on get one
    // element more, and the next state's extra ones begin after them (Flink's
    // round-robin repartitioner), so no instance ends up with many more in total.
    const size_t n = state.elements.size(), p = out.size(), extra = n % p;
    size_t begin = 0;
    for (size_t i = 0; i < p; ++i) {
      size_t size = n / p + ((i + p - start) % p < extra ? 1 : 0);
      OperatorStateSnapshot part{name, state.mode, {}};
      part.elements.assign(state.elements.begin() + static_cast<std::ptrdiff_t>(begin),
                           state.elements.begin() + static_cast<std::ptrdiff_t>(begin + size));
      out[i].push_back(std::move(part));
      begin += size;
    }
    start = (start + extra) % p;
  }
  return out;
}

}  // namespace weir::detail
