#include "core/sync_point.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace weir::core {
namespace {

// What a Release build compiles: nothing at a point, whatever a test set.
TEST(SyncPoints, AreCompiledInExactlyOutsideReleaseBuilds) {
  int calls = 0;
  ScopedSyncPoint point("Test::Point", [&](void*) { ++calls; });
  WEIR_SYNC_POINT("Test::Point");
  EXPECT_EQ(calls, SyncPoints::enabled() ? 1 : 0);
}

TEST(SyncPoints, ACallbackGetsThePointsArgumentUntilCleared) {
  if (!SyncPoints::enabled()) GTEST_SKIP() << "sync points are compiled out of Release builds (make tsan runs this)";
  std::vector<int64_t> seen;
  SyncPoints::instance().setCallback("Test::WithId", [&](void* arg) { seen.push_back(*static_cast<int64_t*>(arg)); });
  for (int64_t id = 1; id <= 3; ++id) WEIR_SYNC_POINT_CALLBACK("Test::WithId", &id);
  WEIR_SYNC_POINT("Test::Other");  // no callback: nothing happens
  SyncPoints::instance().clearCallback("Test::WithId");
  [[maybe_unused]] int64_t four = 4;
  WEIR_SYNC_POINT_CALLBACK("Test::WithId", &four);
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3}));
  // A newer callback replaces the older one; clearAll clears every point.
  int a = 0, b = 0;
  SyncPoints::instance().setCallback("Test::A", [&](void*) { ++a; });
  SyncPoints::instance().setCallback("Test::A", [&](void*) { ++b; });
  SyncPoints::instance().setCallback("Test::B", [&](void*) { ++b; });
  WEIR_SYNC_POINT("Test::A");
  WEIR_SYNC_POINT("Test::B");
  SyncPoints::instance().clearAll();
  WEIR_SYNC_POINT("Test::A");
  WEIR_SYNC_POINT("Test::B");
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 2);
}

// A callback that throws hands its exception to the code at the point.
TEST(SyncPoints, AThrowingCallbackThrowsAtThePoint) {
  if (!SyncPoints::enabled()) GTEST_SKIP() << "sync points are compiled out of Release builds (make tsan runs this)";
  ScopedSyncPoint point("Test::Throws", [](void*) { throw std::runtime_error("injected"); });
  EXPECT_THROW(WEIR_SYNC_POINT("Test::Throws"), std::runtime_error);
  EXPECT_THROW(WEIR_SYNC_POINT("Test::Throws"), std::runtime_error) << "and again: the call was counted as over";
}

// A callback can hold a thread at its point until the test lets it go; clearing the
// point returns only once no call of the callback runs, so what it captured may go.
TEST(SyncPoints, ACallbackHoldsItsThreadAndClearingWaitsForIt) {
  if (!SyncPoints::enabled()) GTEST_SKIP() << "sync points are compiled out of Release builds (make tsan runs this)";
  std::mutex mutex;
  std::condition_variable cv;
  bool reached = false, release = false, finished = false;  // guarded by mutex
  SyncPoints::instance().setCallback("Test::Hold", [&](void*) {
    std::unique_lock lock(mutex);
    reached = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    finished = true;
  });
  std::atomic<bool> passed{false};
  std::thread worker([&] {
    WEIR_SYNC_POINT("Test::Hold");
    passed = true;
  });
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return reached; });
  }
  EXPECT_FALSE(passed.load()) << "the thread is held at the point";
  std::thread clearer([&] {
    SyncPoints::instance().clearCallback("Test::Hold");
    std::lock_guard lock(mutex);
    EXPECT_TRUE(finished) << "clearCallback returned while the callback still ran";
  });
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  clearer.join();
  worker.join();
  EXPECT_TRUE(passed.load());
}

}  // namespace
}  // namespace weir::core
