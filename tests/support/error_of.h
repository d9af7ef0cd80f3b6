// The message of the weir::Error that `f` throws, or "(no error)".
#pragma once

#include <string>

#include "weir/error.h"

namespace weir::test {

template <class F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace weir::test
