#include "core/schema_migration.h"

#include <algorithm>
#include <map>
#include <vector>

namespace weir::detail {

namespace {

// Bytes of the fixed-width types; -1 for the others.
int fixedWidth(const std::string& t) {
  static const std::map<std::string, int, std::less<>> widths = {
      {"bool", 1},   {"int8", 1},   {"uint8", 1},   {"int16", 2},   {"uint16", 2},  {"int32", 4},
      {"uint32", 4}, {"float32", 4}, {"int64", 8},  {"uint64", 8},  {"float64", 8}, {"void", 0},
      {"GlobalWindow", 0}};
  auto it = widths.find(t);
  return it == widths.end() ? -1 : it->second;
}

bool isPositional(const std::string& t) { return t == "pair" || t == "tuple" || t == "TimestampedValue"; }
bool isContainer(const std::string& t) { return t == "vector" || t == "map" || t == "optional" || isPositional(t); }

// Whether weir knows how a value of `schema` is laid out (not a Serializer of the job's
// own, whose schema names a type without fields).
bool knowsLayout(const TypeSchema& schema) {
  if (fixedWidth(schema.typeName) >= 0 || schema.typeName == "string") return true;
  if (schema.fields.empty() && !isPositional(schema.typeName)) return false;
  return std::all_of(schema.fields.begin(), schema.fields.end(), [](const auto& f) { return knowsLayout(f.type); });
}

// Moves `in` past one value of `schema` (whose layout weir knows).
void skip(const TypeSchema& schema, DataInput& in) {
  const std::string& t = schema.typeName;
  if (int width = fixedWidth(t); width >= 0) {
    if (t == "bool") {
      in.read<bool>();
    } else {
      char bytes[8];
      in.readRaw(bytes, static_cast<size_t>(width), t.c_str());
    }
  } else if (t == "string") {
    in.readStringView();
  } else if (t == "vector") {
    for (size_t n = in.readLength("vector length"); n > 0; --n) skip(schema.fields[0].type, in);
  } else if (t == "map") {
    for (size_t n = in.readLength("map length"); n > 0; --n) {
      skip(schema.fields[0].type, in);
      skip(schema.fields[1].type, in);
    }
  } else if (t == "optional") {
    const auto present = in.read<uint8_t>();
    if (present > 1) in.throwInvalidByte("optional presence flag", present);
    if (present == 1) skip(schema.fields[0].type, in);
  } else {
    for (const auto& f : schema.fields) skip(f.type, in);
  }
}

std::string incompatible(const std::string& path, const TypeSchema& old, const TypeSchema& now,
                         const std::string& why = "") {
  return "'" + path + "' was " + old.toString() + ", is now " + now.toString() + why;
}

[[noreturn]] void refuse(const std::string& phrase) { throw Error(ErrorCode::kState, phrase); }

}  // namespace

struct SchemaMigration::Step {
  enum class Kind { kCopy, kVector, kMap, kOptional, kPositional, kStruct, kUpgrade };
  Kind kind = Kind::kCopy;
  const TypeSchema* old = nullptr;  // kCopy: to find the value's end; kStruct: its old fields
  std::vector<Step> children;       // kStruct: one per field now (unused for new ones); kUpgrade:
                                    // the field plan to the old type, none when recorded as it is
  std::vector<int> source;          // kStruct: the old field of each field now; -1: new
  std::vector<std::string> defaults;  // kStruct: the bytes of each new field
  void (*convert)(DataInput&, DataOutput&) = nullptr;  // kUpgrade, after children[0]

  void run(DataInput& in, DataOutput& out, std::string_view whole) const;
};

namespace {

using Step = SchemaMigration::Step;

Step plan(const TypeSchema& old, const TypeSchema& now, const std::string& path, int depth);

// The default bytes of each field of `now`, cut out of its default value.
std::vector<std::string> fieldDefaults(const TypeSchema& now) {
  std::vector<std::string> out;
  DataInput in(now.defaults);
  for (const auto& f : now.fields) {
    const size_t start = in.position();
    skip(f.type, in);
    out.emplace_back(now.defaults.substr(start, in.position() - start));
  }
  return out;
}

// A struct's fields by name: kept, moved, dropped or added with their defaults.
Step planFields(const TypeSchema& old, const TypeSchema& now, const std::string& path, int depth) {
  Step step;
  step.kind = Step::Kind::kStruct;
  step.old = &old;
  for (const auto& f : old.fields)
    if (!knowsLayout(f.type))
      refuse("'" + path + "." + f.name + "' (" + f.type.toString() + ") is written by a Serializer of the job's own, " +
             "so weir cannot move the fields of '" + path + "' around it");
  std::vector<std::string> defaults;
  for (const auto& field : now.fields) {
    auto it = std::find_if(old.fields.begin(), old.fields.end(), [&](const auto& f) { return f.name == field.name; });
    const std::string fieldPath = path + "." + field.name;
    if (it != old.fields.end()) {
      step.source.push_back(static_cast<int>(it - old.fields.begin()));
      step.children.push_back(plan(it->type, field.type, fieldPath, depth + 1));
      step.defaults.emplace_back();
      continue;
    }
    if (now.defaults.empty() || !knowsLayout(now))
      refuse("'" + fieldPath + "' (" + field.type.toString() + ") is new, and " + now.toString() +
             " has no default value to give it");
    if (defaults.empty()) defaults = fieldDefaults(now);
    step.source.push_back(-1);
    step.children.emplace_back();
    step.defaults.push_back(defaults[step.defaults.size()]);
  }
  return step;
}

Step plan(const TypeSchema& old, const TypeSchema& now, const std::string& path, int depth) {
  if (depth > TypeSchema::kMaxDepth) refuse("'" + path + "' is nested too deeply");
  if (old == now) {
    // Copied inside a value, it must be skipped over: its layout must be known.
    if (depth > 0 && !knowsLayout(old))
      refuse("'" + path + "' (" + old.toString() + ") is written by a Serializer of the job's own, so weir " +
             "cannot migrate the value around it");
    Step copy;
    copy.old = &old;
    return copy;
  }
  const std::string& t = now.typeName;
  if (old.typeName != t) refuse(incompatible(path, old, now));
  // A primitive, a job's own type at another version, or a type that switched between
  // WEIR_STRUCT and a Serializer of the job's own.
  if (fixedWidth(t) >= 0 || t == "string" || ((now.fields.empty() || old.fields.empty()) && !isPositional(t)))
    refuse(incompatible(path, old, now));
  Step step;
  step.old = &old;
  if (isContainer(t)) {
    if (old.fields.size() != now.fields.size())
      refuse(incompatible(path, old, now, " (" + std::to_string(old.fields.size()) + " elements, now " +
                                              std::to_string(now.fields.size()) + ")"));
    step.kind = t == "vector"     ? Step::Kind::kVector
                : t == "map"      ? Step::Kind::kMap
                : t == "optional" ? Step::Kind::kOptional
                                  : Step::Kind::kPositional;
    for (size_t i = 0; i < now.fields.size(); ++i) {
      const std::string& name = now.fields[i].name;
      step.children.push_back(
          plan(old.fields[i].type, now.fields[i].type, path + (name.empty() ? "[]" : "." + name), depth + 1));
    }
    return step;
  }
  if (old.version != now.version) {
    auto upgrade = std::find_if(now.upgrades.begin(), now.upgrades.end(),
                                [&](const auto& u) { return u.fromVersion == old.version; });
    if (upgrade == now.upgrades.end())
      refuse(incompatible(path, old, now, ", and no WEIR_STRUCT_UPGRADE(" + t + ", " + std::to_string(old.version) +
                                              ", ...) says how to make its values"));
    // The recorded fields become the upgrade's old type by the field rules, then its
    // function makes the value of today's type.
    TypeSchema from = upgrade->from;
    from.typeName = old.typeName;
    from.version = old.version;
    step.kind = Step::Kind::kUpgrade;
    // Recorded as the old type is now: its deserializer reads the value where it is.
    if (!(old == from)) step.children.push_back(planFields(old, from, path, depth));
    step.convert = upgrade->convert;
    return step;
  }
  return planFields(old, now, path, depth);
}

}  // namespace

void SchemaMigration::Step::run(DataInput& in, DataOutput& out, std::string_view whole) const {
  switch (kind) {
    case Kind::kCopy: {
      const size_t start = in.position();
      skip(*old, in);
      out.writeRaw(whole.data() + start, in.position() - start);
      return;
    }
    case Kind::kVector: {
      const size_t n = in.readLength("vector length");
      out.writeVarint(n);
      for (size_t i = 0; i < n; ++i) children[0].run(in, out, whole);
      return;
    }
    case Kind::kMap: {
      const size_t n = in.readLength("map length");
      out.writeVarint(n);
      for (size_t i = 0; i < n; ++i) {
        children[0].run(in, out, whole);
        children[1].run(in, out, whole);
      }
      return;
    }
    case Kind::kOptional: {
      const auto present = in.read<uint8_t>();
      if (present > 1) in.throwInvalidByte("optional presence flag", present);
      out.write<uint8_t>(present);
      if (present == 1) children[0].run(in, out, whole);
      return;
    }
    case Kind::kPositional:
      for (const Step& child : children) child.run(in, out, whole);
      return;
    case Kind::kStruct: {
      std::vector<std::string_view> fields;
      fields.reserve(old->fields.size());
      for (const auto& f : old->fields) {
        const size_t start = in.position();
        skip(f.type, in);
        fields.push_back(whole.substr(start, in.position() - start));
      }
      for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] < 0) {
          out.writeRaw(defaults[i].data(), defaults[i].size());
          continue;
        }
        std::string_view bytes = fields[static_cast<size_t>(source[i])];
        DataInput field(bytes);
        children[i].run(field, out, bytes);
      }
      return;
    }
    case Kind::kUpgrade: {
      if (children.empty()) {
        convert(in, out);
        return;
      }
      DataOutput asOld;
      children[0].run(in, asOld, whole);
      DataInput from(asOld.data());
      convert(from, out);
      if (!from.atEnd()) throw SerializationError("an upgraded value left bytes its old type did not read");
      return;
    }
  }
}

SchemaMigration::SchemaMigration(const TypeSchema& old, const TypeSchema& now, const std::string& path)
    : old_(std::make_unique<TypeSchema>(old)), root_(std::make_unique<Step>(plan(*old_, now, path, 0))) {}

SchemaMigration::~SchemaMigration() = default;
SchemaMigration::SchemaMigration(SchemaMigration&&) noexcept = default;
SchemaMigration& SchemaMigration::operator=(SchemaMigration&&) noexcept = default;

bool SchemaMigration::identity() const { return root_->kind == Step::Kind::kCopy; }

std::string SchemaMigration::migrate(std::string_view bytes) const {
  DataInput in(bytes);
  DataOutput out;
  root_->run(in, out, bytes);
  if (!in.atEnd())
    throw SerializationError(std::to_string(in.remaining()) + " byte(s) left after a migrated value of " +
                             std::to_string(in.position()) + " bytes; the bytes are of another type or corrupt");
  return out.release();
}

}  // namespace weir::detail
