#include "weir/checkpointed_function.h"

#include "core/schema_migration.h"

namespace weir::detail {

std::vector<OperatorStateSnapshot> OperatorStateRegistry::snapshot() const {
  std::vector<OperatorStateSnapshot> out;
  for (const auto& [name, registered] : states_) {
    out.push_back(OperatorStateSnapshot{name, registered.mode, registered.state->serializeElements(),
                                        registered.state->schema()});
  }
  return out;
}

const std::vector<std::string>& elementsAs(const OperatorStateSnapshot& restored, const std::optional<TypeSchema>& now,
                                           const std::string& what, std::vector<std::string>& storage) {
  if (!restored.schema || !now || *restored.schema == *now) return restored.elements;
  std::optional<SchemaMigration> migration;
  try {
    migration.emplace(*restored.schema, *now, "state.element");
  } catch (const Error& e) {
    throw Error(ErrorCode::kState, what + " does not have the type the restored checkpoint recorded for it: " +
                                       e.what() + " (its old type: " + restored.schema->toString() +
                                       "); weir migrates added, removed and reordered WEIR_STRUCT fields, and other " +
                                       "changes through WEIR_STRUCT_UPGRADE");
  }
  storage.clear();
  for (const auto& element : restored.elements) {
    try {
      storage.push_back(migration->migrate(element));
    } catch (const SerializationError& error) {
      throw Error(ErrorCode::kSerialization, what + ": a restored element does not decode as " +
                                                 restored.schema->toString() + ": " + error.what());
    }
  }
  return storage;
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
      auto [it, fresh] = all.try_emplace(state.name, OperatorStateSnapshot{state.name, state.mode, {}, state.schema});
      if (!fresh && it->second.mode != state.mode) {
        throw Error(ErrorCode::kState, "operator state '" + state.name +
                                           "' is a list state in one instance and a union list state in another");
      }
      if (!it->second.schema) it->second.schema = state.schema;
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
        OperatorStateSnapshot part{name, state.mode, {}, state.schema};
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
      OperatorStateSnapshot part{name, state.mode, {}, state.schema};
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
