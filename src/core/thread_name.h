// Thread names, as top -H, perf, gdb and /proc/<pid>/task/*/comm show them.
#pragma once

#include <string>
#include <string_view>

namespace weir::core {

// What fits of `name` in Linux's 15 bytes, cut at a character boundary, with `suffix`
// (" 1/2") kept whole: a subtask's thread reads "Keyed Aggre 1/2".
std::string threadName(std::string_view name, std::string_view suffix = {});

// Names the calling thread (nothing where the platform cannot).
void nameThisThread(std::string_view name, std::string_view suffix = {});

}  // namespace weir::core
