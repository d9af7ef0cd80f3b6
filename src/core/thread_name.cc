#include "core/thread_name.h"

#include <pthread.h>

namespace weir::core {

namespace {
constexpr size_t kMaxBytes = 15;  // Linux's limit, without the terminating zero
}  // namespace

std::string threadName(std::string_view name, std::string_view suffix) {
  if (suffix.size() > kMaxBytes) suffix = suffix.substr(0, kMaxBytes);
  size_t room = kMaxBytes - suffix.size();
  if (name.size() > room) {
    // Not in the middle of a UTF-8 sequence: back off over its continuation bytes.
    while (room > 0 && (static_cast<unsigned char>(name[room]) & 0xC0) == 0x80) --room;
    name = name.substr(0, room);
  }
  std::string out(name);
  out += suffix;
  return out;
}

void nameThisThread(std::string_view name, std::string_view suffix) {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), threadName(name, suffix).c_str());
#endif
}

}  // namespace weir::core
