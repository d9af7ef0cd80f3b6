// Schema migration: the bytes a restored snapshot holds for a value of one TypeSchema
// (as the snapshot recorded it), rewritten as the bytes of the type the job declares now,
// by the rules Flink applies to POJO state:
//   * a field added since takes its default (the WEIR_STRUCT's default member
//     initializer, or a value-initialized member);
//   * a removed field is dropped;
//   * a reordered field is found by name;
//   * a struct whose version changed goes through the WEIR_STRUCT_UPGRADE declared from
//     the recorded version;
//   * anything else (a field's type changed, a struct renamed, a container changed) is an
//     incompatible change: planning throws, naming the field's path, the old type and the
//     new one, so that a value is never misread.
// The rules apply inside containers too (a vector of structs, a map's values, ...).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "weir/serializer.h"

namespace weir::detail {

class SchemaMigration {
 public:
  // Plans the migration of values of `old` into values of `now` (a schema made from the
  // C++ type, with its defaults and upgrades). Throws Error(kState) with one phrase
  // naming the first change the rules cannot make, under `path` ("'state.value.price'
  // was int32, is now float64").
  SchemaMigration(const TypeSchema& old, const TypeSchema& now, const std::string& path);
  ~SchemaMigration();
  SchemaMigration(SchemaMigration&&) noexcept;
  SchemaMigration& operator=(SchemaMigration&&) noexcept;

  // Whether the schemas are equal, so that values keep their bytes.
  bool identity() const;
  // The one value `bytes` hold, migrated; bytes left over are an error.
  std::string migrate(std::string_view bytes) const;

  struct Step;  // one step of the plan (schema_migration.cc)

 private:
  std::unique_ptr<const TypeSchema> old_;  // the steps point into it
  std::unique_ptr<const Step> root_;
};

}  // namespace weir::detail
