#include <cxxabi.h>

#include <cstdlib>

#include "weir/detail/core/type_name.h"

namespace weir::detail {

std::string demangledTypeName(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

}  // namespace weir::detail
