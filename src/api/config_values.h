// The text forms of configuration values, as Flink writes them: durations ("500 ms",
// "10 s", "1 min"; a bare number is milliseconds), memory sizes ("64 mb", "1g"; a bare
// number is bytes), whole numbers, decimals, booleans and enum names ("EXACTLY_ONCE",
// "exactly-once"). Each parser returns the value or throws std::invalid_argument with
// what the text should have been, for the caller to prefix with the option's name.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weir::api {

std::chrono::milliseconds parseDuration(std::string_view text);
int64_t parseMemorySize(std::string_view text);
int64_t parseWholeNumber(std::string_view text, int64_t min, int64_t max);
double parseDecimal(std::string_view text);
bool parseBoolean(std::string_view text);
// The one of `names` (upper case with '_', as Flink's enums) that `text` spells, with
// '-' for '_' and in any case; throws naming them all.
std::string parseEnum(std::string_view text, const std::vector<std::string>& names);

}  // namespace weir::api
