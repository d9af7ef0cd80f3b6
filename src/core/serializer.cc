#include "weir/serializer.h"

#include <algorithm>

#include <string>

namespace weir {

namespace {

std::string atByte(std::size_t position) { return " at byte " + std::to_string(position); }

// a * b, or "more than 2^64" when the product does not fit.
std::string productText(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return "more than 2^64";
  return std::to_string(product);
}

std::string missingText(std::uint64_t count, std::uint64_t perElement, std::size_t remaining) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(count, perElement, &product)) return "more than 2^64";
  return std::to_string(product - remaining);
}

bool isContainerName(const std::string& name) {
  return name == "vector" || name == "map" || name == "optional" || name == "pair" ||
         name == "tuple";
}

TypeSchema readSchema(DataInput& in, int depth) {
  if (depth > TypeSchema::kMaxDepth) {
    throw SerializationError("weir::TypeSchema: schema nested deeper than " +
                             std::to_string(TypeSchema::kMaxDepth) + " levels" +
                             atByte(in.position()) + "; the schema bytes are corrupt");
  }
  TypeSchema schema;
  schema.typeName = in.readString();
  const std::size_t versionAt = in.position();
  const std::uint64_t version = in.readVarint("schema version");
  if (version > std::numeric_limits<std::uint32_t>::max()) {
    throw SerializationError("weir::TypeSchema: version " + std::to_string(version) +
                             " of type '" + schema.typeName + "'" + atByte(versionAt) +
                             " does not fit 32 bits; the schema bytes are corrupt");
  }
  schema.version = static_cast<std::uint32_t>(version);
  // A field is at least a name length, a type name length, a version and a field count.
  const std::size_t count = in.readLength("schema field count", 4);
  schema.fields.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    TypeSchema::Field field;
    field.name = in.readString();
    field.type = readSchema(in, depth + 1);
    schema.fields.push_back(std::move(field));
  }
  return schema;
}

}  // namespace

void DataInput::throwInvalidByte(const char* what, std::uint8_t byte) const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex = "0x";
  hex += kHex[byte >> 4];
  hex += kHex[byte & 0xf];
  throw SerializationError("weir::DataInput: invalid " + std::string(what) + " byte " + hex +
                           atByte(pos_) + "; the bytes are of another type or corrupt");
}

void DataInput::throwTruncated(const char* what, std::size_t needed) const {
  throw SerializationError("weir::DataInput: truncated input reading " + std::string(what) +
                           atByte(pos_) + ": needs " + std::to_string(needed) + " bytes, " +
                           std::to_string(remaining()) + " remain (" +
                           std::to_string(needed - remaining()) + " missing)");
}

void DataInput::throwTruncatedVarint(const char* what, std::size_t start) const {
  throw SerializationError("weir::DataInput: truncated input reading " + std::string(what) +
                           " (varint)" + atByte(start) + ": input ends after " +
                           std::to_string(pos_ - start) + " byte(s) of it (at least 1 missing)");
}

void DataInput::throwOverlongVarint(const char* what, std::size_t start) const {
  throw SerializationError("weir::DataInput: corrupt " + std::string(what) + " (varint)" +
                           atByte(start) +
                           ": longer than 10 bytes or above 2^64; the bytes are corrupt");
}

void DataInput::throwBadLength(const char* what, std::size_t start, std::uint64_t count,
                               std::size_t minBytesPerElement) const {
  throw SerializationError(
      "weir::DataInput: corrupt " + std::string(what) + " " + std::to_string(count) +
      atByte(start) + ": needs at least " + productText(count, minBytesPerElement) +
      " bytes, " + std::to_string(remaining()) + " remain (" +
      missingText(count, minBytesPerElement, remaining()) + " missing)");
}

void TypeSchema::write(DataOutput& out) const {
  out.writeString(typeName);
  out.writeVarint(version);
  out.writeVarint(fields.size());
  for (const Field& field : fields) {
    out.writeString(field.name);
    field.type.write(out);
  }
}

TypeSchema TypeSchema::read(DataInput& in) { return readSchema(in, 0); }

std::string TypeSchema::toString() const {
  std::string result = typeName;
  if (version != 1) result += "@" + std::to_string(version);
  if (isContainerName(typeName)) {
    result += '<';
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) result += ", ";
      result += fields[i].type.toString();
    }
    result += '>';
  } else if (!fields.empty()) {
    result += '{';
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) result += ", ";
      result += fields[i].name + ":" + fields[i].type.toString();
    }
    result += '}';
  }
  return result;
}

std::string TypeSchema::firstDifference(const TypeSchema& now, const std::string& path) const {
  const std::string here = "'" + path + "'";
  if (typeName != now.typeName || version != now.version)
    return here + " was " + toString() + ", is now " + now.toString();
  auto childPath = [&](const std::string& name) { return name.empty() ? path + "[]" : path + "." + name; };
  auto find = [](const std::vector<Field>& fields, const std::string& name) {
    return std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.name == name; });
  };
  for (const Field& old : fields) {
    auto it = find(now.fields, old.name);
    if (it == now.fields.end())
      return "'" + childPath(old.name) + "' (" + old.type.toString() + ") is gone";
    std::string inner = old.type.firstDifference(it->type, childPath(old.name));
    if (!inner.empty()) return inner;
  }
  for (const Field& added : now.fields)
    if (find(fields, added.name) == fields.end())
      return "'" + childPath(added.name) + "' (" + added.type.toString() + ") is new";
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name != now.fields[i].name)
      return "the fields of " + here + " are in another order (" + toString() + ", now " + now.toString() + ")";
  return "";
}

bool operator==(const TypeSchema& a, const TypeSchema& b) {
  return a.typeName == b.typeName && a.version == b.version && a.fields == b.fields;
}

}  // namespace weir
