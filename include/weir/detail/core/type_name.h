#pragma once

#include <string>
#include <typeinfo>

namespace weir::detail {

// The readable name of a type, e.g. "std::runtime_error".
std::string demangledTypeName(const std::type_info& type);

}  // namespace weir::detail
