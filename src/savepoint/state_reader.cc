#include "savepoint/state_reader.h"

#include <nlohmann/json.hpp>

#include <set>

#include "checkpoint/checkpoint_storage.h"
#include "weir/detail/state/rocksdb_state.h"
#include "weir/error.h"
#include "weir/serializer.h"

namespace weir::savepoint {

namespace {

using json = nlohmann::ordered_json;  // members in the order written

template <class T>
json number(DataInput& in) {
  return json(in.read<T>());
}

// One value of `schema` from `in`. The encodings are weir's serializers' (serializer.h):
// fixed-width little-endian numbers, varint-counted strings and containers, a presence
// byte before an optional's value, and the fields of a struct, pair or tuple in order.
json read(const TypeSchema& schema, DataInput& in, int depth = 0) {
  if (depth > TypeSchema::kMaxDepth) throw SerializationError("a schema nested too deeply");
  const std::string& t = schema.typeName;
  if (t == "bool") return json(in.read<bool>());
  if (t == "int8") return number<int8_t>(in);
  if (t == "int16") return number<int16_t>(in);
  if (t == "int32") return number<int32_t>(in);
  if (t == "int64") return number<int64_t>(in);
  if (t == "uint8") return number<uint8_t>(in);
  if (t == "uint16") return number<uint16_t>(in);
  if (t == "uint32") return number<uint32_t>(in);
  if (t == "uint64") return number<uint64_t>(in);
  if (t == "float32") return number<float>(in);
  if (t == "float64") return number<double>(in);
  if (t == "string") return json(in.readString());
  if (t == "void" || t == "GlobalWindow") return json(nullptr);
  auto field = [&](size_t i) -> const TypeSchema& {
    if (i >= schema.fields.size())
      throw SerializationError("the schema of a " + t + " has " + std::to_string(schema.fields.size()) + " fields");
    return schema.fields[i].type;
  };
  if (t == "vector") {
    json array = json::array();
    for (size_t n = in.readLength("vector length"); n > 0; --n) array.push_back(read(field(0), in, depth + 1));
    return array;
  }
  if (t == "map") {
    json array = json::array();
    for (size_t n = in.readLength("map length"); n > 0; --n) {
      json key = read(field(0), in, depth + 1);
      array.push_back(json::array({std::move(key), read(field(1), in, depth + 1)}));
    }
    return array;
  }
  if (t == "optional") {
    const auto present = in.read<uint8_t>();
    if (present == 0) return json(nullptr);
    if (present != 1) in.throwInvalidByte("optional presence flag", present);
    return read(field(0), in, depth + 1);
  }
  if (t == "pair" || t == "tuple" || t == "TimestampedValue") {
    json array = json::array();
    for (const auto& f : schema.fields) array.push_back(read(f.type, in, depth + 1));
    return array;
  }
  if (schema.fields.empty())
    throw Error(ErrorCode::kState, "values of type '" + t + "' are written by a Serializer of the job's own; weir " +
                                       "cannot read them without it");
  json object = json::object();  // a WEIR_STRUCT, a TTL value, a join's tagged record
  for (const auto& f : schema.fields) object[f.name] = read(f.type, in, depth + 1);
  return object;
}

const TypeSchema* fieldNamed(const TypeSchema& schema, const std::string& name) {
  for (const auto& f : schema.fields)
    if (f.name == name) return &f.type;
  return nullptr;
}

}  // namespace

uint64_t dumpKeyedState(const std::string& path, const std::string& operatorId, const std::string& state,
                        std::ostream& out) {
  const std::string folder = checkpoint::checkpointFolder(path);
  checkpoint::CheckpointMetadata metadata = checkpoint::readMetadata(folder);
  checkpoint::verifyCheckpoint(folder, metadata);
  std::set<std::string> operators, states;
  uint64_t entries = 0;
  bool found = false;
  for (const auto& file : metadata.files) {
    operators.insert(file.operatorId);
    if (file.operatorId != operatorId) continue;
    found = true;
    detail::RestoredOperatorState restored;
    std::vector<detail::OperatorStateSnapshot> operatorState;
    const KeyGroupRange all{0, file.maxParallelism - 1};
    checkpoint::readStateFile(folder, file, all, restored, operatorState);
    for (const auto& [name, schema] : restored.keyedSchemas) states.insert(name);
    auto it = restored.keyedSchemas.find(state);
    if (it == restored.keyedSchemas.end()) continue;
    const TypeSchema& schema = it->second;
    const TypeSchema* key = fieldNamed(schema, "key");
    const TypeSchema* ns = fieldNamed(schema, "namespace");
    const TypeSchema* userKey = fieldNamed(schema, "userKey");
    const bool list = schema.typeName == "ListState";
    const TypeSchema* value = fieldNamed(schema, list ? "element" : schema.typeName == "AggregatingState" ? "accumulator" : "value");
    if (key == nullptr || ns == nullptr || value == nullptr)
      throw Error(ErrorCode::kState, "state '" + state + "' has a schema weir cannot read: " + schema.toString());
    auto visit = [&](const std::string& name, const detail::StateEntry& e) {
      if (name != state) return;
      try {
        json line = {{"keyGroup", e.keyGroup}};
        DataInput k(e.key);
        line["key"] = read(*key, k);
        json n = read(*ns, k);
        if (ns->typeName != "void") line["namespace"] = std::move(n);
        if (userKey != nullptr) line["userKey"] = read(*userKey, k);
        if (!k.atEnd()) throw SerializationError(std::to_string(k.remaining()) + " bytes left after the key");
        DataInput v(e.value);
        if (list) {
          json elements = json::array();
          while (!v.atEnd()) {
            DataInput element(v.readStringView());
            elements.push_back(read(*value, element));
          }
          line["value"] = std::move(elements);
        } else {
          line["value"] = read(*value, v);
          if (!v.atEnd()) throw SerializationError(std::to_string(v.remaining()) + " bytes left after the value");
        }
        out << line.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
        ++entries;
      } catch (const SerializationError& error) {
        throw Error(ErrorCode::kSerialization, "an entry of state '" + state + "' in key group " + std::to_string(e.keyGroup) +
                                           " does not decode as " + schema.toString() + ": " + error.what());
      }
    };
    restored.takeAllKeyed(visit);
    for (const auto& db : restored.rocksdb) detail::readRocksDBCheckpoint(db, all, "", visit);
  }
  auto list = [](const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
    return out.empty() ? std::string("none") : out;
  };
  if (!found)
    throw Error(ErrorCode::kState, "'" + folder + "' holds no state of operator '" + operatorId +
                                       "'; its operators are: " + list(operators));
  if (!states.contains(state))
    throw Error(ErrorCode::kState, "operator '" + operatorId + "' has no keyed state '" + state +
                                       "' with a recorded schema in '" + folder + "'; its states are: " + list(states));
  return entries;
}

}  // namespace weir::savepoint
