// The parts of the case format the operator builders share: fields, records, side
// output tags, and the window operator's specification.
#include <limits>

#include "golden/golden_windows.h"

namespace weir::golden {

const Json& field(const Json& object, const std::string& name, const std::string& where) {
  if (!object.is_object()) throw Malformed(where + ": must be an object");
  auto it = object.find(name);
  if (it == object.end()) throw Malformed(where + ": '" + name + "' is missing");
  return *it;
}

int64_t asInt64(const Json& value, const std::string& where) {
  if (value.is_string()) {
    if (value == "max") return std::numeric_limits<int64_t>::max();
    if (value == "min") return std::numeric_limits<int64_t>::min();
  }
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw Malformed(where + ": " + value.dump() + " is beyond int64");
    return value.get<int64_t>();
  }
  throw Malformed(where + ": must be an integer (or \"max\" / \"min\"), got " + value.dump());
}

int64_t integerField(const Json& object, const std::string& name, const std::string& where) {
  return asInt64(field(object, name, where), where + "." + name);
}

std::string stringField(const Json& object, const std::string& name, const std::string& where) {
  const Json& v = field(object, name, where);
  if (!v.is_string()) throw Malformed(where + "." + name + ": must be a string, got " + v.dump());
  return v.get<std::string>();
}

void onlyKeys(const Json& object, std::initializer_list<const char*> allowed, const std::string& where) {
  if (!object.is_object()) throw Malformed(where + ": must be an object, got " + object.dump());
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (const char* a : allowed) known = known || it.key() == a;
    if (known) continue;
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
    throw Malformed(where + ": unknown key '" + it.key() + "' (expected: " + list + ")");
  }
}

namespace {
std::pair<std::string, int64_t> keyValue(const Json& value, const std::string& where) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_string() || !value[1].is_number_integer())
    throw Malformed(where + ": a record is [\"key\", integer], got " + value.dump());
  return {value[0].get<std::string>(), asInt64(value[1], where)};
}
}  // namespace

Rec recFromJson(const Json& value, const std::string& where) { return keyValue(value, where); }
Rec2 rec2FromJson(const Json& value, const std::string& where) {
  auto [k, v] = keyValue(value, where);
  return {k, v};
}

OutputTag<Rec> recTag(const std::string& name) { return OutputTag<Rec>("golden-input1-" + name); }
OutputTag<Rec2> rec2Tag(const std::string& name) { return OutputTag<Rec2>("golden-input2-" + name); }

std::string triggerName(const WindowSpec& spec) {
  if (spec.trigger.is_null()) return "default";
  const std::string where = spec.where + ".trigger";
  onlyKeys(spec.trigger, {"type", "purging", "count", "interval"}, where);
  std::string type = stringField(spec.trigger, "type", where);
  bool purging = false;
  if (spec.trigger.contains("purging")) {
    if (!spec.trigger["purging"].is_boolean()) throw Malformed(where + ".purging: must be true or false");
    purging = spec.trigger["purging"].get<bool>();
  }
  return (purging ? "purging " : "") + type;
}

Malformed unregistered(const WindowSpec& spec) {
  return Malformed(spec.where + ": the driver registers no window operator for assigner " + spec.assigner.dump() +
                   " with trigger '" + triggerName(spec) +
                   "' (README.md lists the combinations; add one in tests/golden/golden_windows_*.cc)");
}

void checkFunction(const WindowSpec& spec, bool allFunctions, bool timeWindows) {
  const std::string where = spec.where + ".function";
  const Json& f = spec.function;
  onlyKeys(f, {"reduce", "aggregate", "process"}, where);
  auto name = [&](const char* key, std::initializer_list<const char*> names) {
    std::string n = stringField(f, key, where);
    for (const char* known : names)
      if (n == known) return n;
    throw Malformed(where + "." + key + ": \"" + n + "\" is not one of the driver's");
  };
  const bool reduce = f.contains("reduce"), aggregate = f.contains("aggregate"), process = f.contains("process");
  if (reduce) name("reduce", {"sum", "max"});
  if (aggregate) name("aggregate", {"sum", "count"});
  if (process) {
    std::string mode = name("process", {"sum", "key_sum_window", "describe", "values"});
    if (!timeWindows && mode != "sum")
      throw Malformed(where + ".process: \"" + mode + "\" reports the window's start and end, which global windows lack");
  }
  if (reduce + aggregate + process == 0) throw Malformed(where + ": needs \"reduce\", \"aggregate\" or \"process\"");
  if (reduce && (aggregate || process))
    throw Malformed(where + ": \"reduce\" goes alone (the driver has no reduce with a window function)");
  if (aggregate && !allFunctions)
    throw Malformed(where + ": the driver registers only reduce and process for assigner " + spec.assigner.dump() +
                    " with trigger '" + triggerName(spec) + "' (add the combination in golden_windows_*.cc)");
}

std::unique_ptr<GoldenOperator> makeWindowOperator(const Json& spec, const test::HarnessOptions& options) {
  WindowSpec w;
  w.where = "operator";
  onlyKeys(spec, {"kind", "assigner", "trigger", "allowed_lateness", "late_output", "function"}, w.where);
  w.assigner = field(spec, "assigner", w.where);
  if (spec.contains("trigger")) w.trigger = spec["trigger"];
  w.function = field(spec, "function", w.where);
  if (spec.contains("allowed_lateness")) w.lateness = integerField(spec, "allowed_lateness", w.where);
  if (spec.contains("late_output")) {
    const Json& late = spec["late_output"];
    if (late.is_boolean()) {
      if (late.get<bool>()) w.lateOutput = "late";
    } else if (late.is_string()) {
      w.lateOutput = late.get<std::string>();
    } else {
      throw Malformed(w.where + ".late_output: the side output's name, or true for \"late\"");
    }
  }
  for (auto make : {makeTimeWindowOperator, makeSessionWindowOperator, makeGlobalWindowOperator})
    if (auto op = make(w, options)) return op;
  throw Malformed(w.where + ".assigner.type: \"" + stringField(w.assigner, "type", w.where + ".assigner") +
                  "\" is not an assigner of the driver");
}

}  // namespace weir::golden
