#include "core/thread_name.h"

#include <gtest/gtest.h>

namespace weir::core {
namespace {

TEST(ThreadName, KeepsTheSuffixWholeAndCutsTheNameToFifteenBytes) {
  EXPECT_EQ(threadName("Keyed Aggregation", " 1/2"), "Keyed Aggre 1/2");
  EXPECT_EQ(threadName("gen", " 12/16"), "gen 12/16");
  EXPECT_EQ(threadName("weir checkpoint I/O"), "weir checkpoint");
  EXPECT_EQ(threadName("weir checkpoint I/O").size(), 15u);
}

TEST(ThreadName, NeverCutsACharacterInTwo) {
  // Ten two-byte letters: eleven bytes of room would end halfway through the sixth.
  EXPECT_EQ(threadName("\u00e4\u00e4\u00e4\u00e4\u00e4\u00e4\u00e4\u00e4\u00e4\u00e4", " 1/2"),
            "\u00e4\u00e4\u00e4\u00e4\u00e4 1/2");
}

}  // namespace
}  // namespace weir::core
