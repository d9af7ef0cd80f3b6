#include "core/loopback.h"

#include <gtest/gtest.h>

namespace weir::core {
namespace {

TEST(Loopback, OnlyLocalhost127SlashEightAndColonColonOneAre) {
  for (const char* a : {"localhost", "127.0.0.1", "127.9.8.7", "127.255.255.255", "::1", "[::1]"})
    EXPECT_TRUE(isLoopbackAddress(a)) << a;
  for (const char* a : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "126.255.255.255", "127.example.com", "127.0.0",
                        "localhost.example.com", "", "[::2]", "::ffff:10.0.0.1"})
    EXPECT_FALSE(isLoopbackAddress(a)) << a;
}

}  // namespace
}  // namespace weir::core
