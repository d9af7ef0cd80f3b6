#include "weir/detail/runtime/channel.h"

#include "weir/detail/runtime/record_writer.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <optional>
#include <vector>
#include <thread>

namespace weir::detail {
namespace {

using namespace std::chrono_literals;

TEST(Channel, DeliversBuffersAndEventsInOrder) {
  TaskSignal signal;
  TaskMetrics metrics;
  Channel<int> channel(4, &signal);
  ASSERT_TRUE(channel.send({1, 2}, {}, metrics));
  channel.sendEvent(EventKind::kWatermark, 99);
  ASSERT_TRUE(channel.send({3}, {}, metrics));
  channel.sendEvent(EventKind::kEndOfPartition);

  Channel<int>::Message m;
  ASSERT_TRUE(channel.poll(m));
  EXPECT_FALSE(m.isEvent);
  EXPECT_EQ(m.records, (std::vector<int>{1, 2}));
  channel.recycle(m);
  ASSERT_TRUE(channel.poll(m));
  EXPECT_TRUE(m.isEvent);
  EXPECT_EQ(m.event, EventKind::kWatermark);
  EXPECT_EQ(m.timestamp, 99);
  ASSERT_TRUE(channel.poll(m));
  EXPECT_EQ(m.records, (std::vector<int>{3}));
  channel.recycle(m);
  ASSERT_TRUE(channel.poll(m));
  EXPECT_EQ(m.event, EventKind::kEndOfPartition);
  EXPECT_FALSE(channel.poll(m));
  EXPECT_EQ(channel.recordsSent(), 3u);
}

// A buffer a writer sends carries a timestamp for each of its records or none at all,
// however stamped batches (records) and unstamped ones (processing-time timers' output)
// alternate, over one channel and over several; each record keeps its own.
TEST(RecordWriter, StampedAndUnstampedBatchesNeverShareABuffer) {
  for (size_t channelCount : {1u, 2u}) {
    TaskSignal signal;
    TaskMetrics metrics;
    std::vector<std::unique_ptr<Channel<int64_t>>> owned;
    std::vector<Channel<int64_t>*> channels;
    for (size_t c = 0; c < channelCount; ++c) {
      owned.push_back(std::make_unique<Channel<int64_t>>(64, &signal));
      channels.push_back(owned.back().get());
    }
    RecordWriter<int64_t, RoundRobinSelector> writer(channels, RoundRobinSelector{}, &metrics);
    // Records 0..29 in batches of 10: stamped (timestamp 1000 + record), unstamped, stamped.
    std::map<int64_t, std::optional<int64_t>> expected;
    for (int batch = 0; batch < 3; ++batch) {
      std::vector<int64_t> records, timestamps;
      for (int64_t r = batch * 10; r < batch * 10 + 10; ++r) {
        records.push_back(r);
        if (batch != 1) timestamps.push_back(1000 + r);
        expected[r] = batch != 1 ? std::optional<int64_t>(1000 + r) : std::nullopt;
      }
      writer.processBatch(records, timestamps);
    }
    writer.endInput();
    std::map<int64_t, std::optional<int64_t>> got;
    for (auto* channel : channels) {
      Channel<int64_t>::Message m;
      while (channel->poll(m)) {
        if (m.isEvent) continue;
        ASSERT_TRUE(m.timestamps.empty() || m.timestamps.size() == m.records.size())
            << m.records.size() << " records with " << m.timestamps.size() << " timestamps";
        for (size_t i = 0; i < m.records.size(); ++i)
          got[m.records[i]] = m.timestamps.empty() ? std::nullopt : std::optional<int64_t>(m.timestamps[i]);
        channel->recycle(m);
      }
    }
    EXPECT_EQ(got, expected) << channelCount << " channels";
  }
}

TEST(Channel, TheProducerBlocksWithoutCreditUntilTheConsumerRecycles) {
  TaskSignal signal;
  TaskMetrics metrics;
  Channel<int> channel(2, &signal);
  ASSERT_TRUE(channel.send({1}, {}, metrics));
  ASSERT_TRUE(channel.send({2}, {}, metrics));
  auto third = std::async(std::launch::async, [&] { return channel.send({3}, {}, metrics).has_value(); });
  // The third send has no credit: it must still be waiting, and say so in the metrics.
  while (metrics.backPressuredSinceNanos.load() == 0) std::this_thread::yield();
  EXPECT_EQ(third.wait_for(0ms), std::future_status::timeout);
  EXPECT_EQ(channel.maxBuffersInFlight(), 2);

  Channel<int>::Message m;
  ASSERT_TRUE(channel.poll(m));
  channel.recycle(m);
  EXPECT_TRUE(third.get());
  EXPECT_EQ(channel.maxBuffersInFlight(), 2);
  EXPECT_GT(metrics.backPressuredTimeNanos.load(), 0);
}

TEST(Channel, RecycledBuffersComeBackToTheProducerWithTheirCapacity) {
  TaskSignal signal;
  TaskMetrics metrics;
  Channel<int> channel(1, &signal);
  std::vector<int> big(1000, 7);
  const int* memory = big.data();
  auto next = channel.send(std::move(big), {}, metrics);
  ASSERT_TRUE(next);
  Channel<int>::Message m;
  ASSERT_TRUE(channel.poll(m));
  channel.recycle(m);
  next = channel.send({1}, {}, metrics);
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->records.empty());
  EXPECT_EQ(next->records.data(), memory);  // the same memory, not a new allocation
}

TEST(Channel, CancelReleasesABlockedProducer) {
  TaskSignal signal;
  TaskMetrics metrics;
  Channel<int> channel(1, &signal);
  ASSERT_TRUE(channel.send({1}, {}, metrics));
  auto blocked = std::async(std::launch::async, [&] { return channel.send({2}, {}, metrics).has_value(); });
  while (metrics.backPressuredSinceNanos.load() == 0) std::this_thread::yield();
  channel.cancel();
  EXPECT_FALSE(blocked.get());
}

TEST(Channel, SendingWakesTheConsumer) {
  TaskSignal signal;
  TaskMetrics metrics;
  Channel<int> channel(1, &signal);
  auto waiter = std::async(std::launch::async, [&] { signal.wait(); });
  ASSERT_TRUE(channel.send({1}, {}, metrics));
  waiter.get();  // returns only because send() notified the signal
}

}  // namespace
}  // namespace weir::detail
