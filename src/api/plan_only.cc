#include "api/plan_only.h"

#include <mutex>
#include <utility>

namespace weir::api {

namespace {
std::mutex mutex;
std::function<void(const std::string&)> printer;  // guarded by mutex
}  // namespace

void printPlansInsteadOfRunning(std::function<void(const std::string& plan)> print) {
  std::lock_guard lock(mutex);
  printer = std::move(print);
}

std::function<void(const std::string& plan)> planPrinter() {
  std::lock_guard lock(mutex);
  return printer;
}

}  // namespace weir::api
