#include "core/printable.h"

#include <gtest/gtest.h>

namespace weir::core {
namespace {

TEST(PrintableAscii, KeepsPrintableAsciiAndMarksEveryOtherByte) {
  EXPECT_EQ(printableAscii("Source: clicks -> count (2) ~{}"), "Source: clicks -> count (2) ~{}");
  EXPECT_EQ(printableAscii(std::string("a\nb\tc\x7f" "d\x1b[31m", 10)), "a?b?c?d?[3");
  EXPECT_EQ(printableAscii("caf\xc3\xa9"), "caf??");  // each byte of a UTF-8 character
  EXPECT_EQ(printableAscii(std::string("\0x", 2)), "?x");
  EXPECT_EQ(printableAscii(""), "");
}

}  // namespace
}  // namespace weir::core
