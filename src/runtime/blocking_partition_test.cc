#include "runtime/blocking_partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "weir/detail/runtime/blocking_input.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/runtime/record_writer.h"
#include "weir/error.h"
#include "weir/watermark_strategy.h"

namespace weir::runtime {
namespace {

using Blocks = std::vector<std::vector<std::string>>;  // per subpartition, in order

// `count` blocks of 0 to 5,000 bytes, each a distinct pattern, scattered over the
// subpartitions; appended to `partition` and returned as the brute force expects them.
Blocks appendBlocks(BlockingResultPartition& partition, int count, uint32_t seed) {
  Blocks expected(static_cast<size_t>(partition.subpartitions()));
  std::mt19937 random(seed);
  for (int i = 0; i < count; ++i) {
    const int sub = static_cast<int>(random() % expected.size());
    std::string block(random() % 5001, '\0');
    for (size_t j = 0; j < block.size(); ++j) block[j] = static_cast<char>((i * 131 + j * 7) & 0xff);
    partition.append(sub, block);
    expected[static_cast<size_t>(sub)].push_back(std::move(block));
  }
  return expected;
}

std::vector<std::string> readAll(const BlockingResultPartition& partition, int sub) {
  std::vector<std::string> got;
  auto reader = partition.reader(sub);
  std::string_view block;
  while (reader.next(block)) got.emplace_back(block);
  EXPECT_FALSE(reader.next(block)) << "the end stays the end";
  return got;
}

uint64_t totalBytes(const Blocks& blocks) {
  uint64_t n = 0;
  for (const auto& sub : blocks)
    for (const auto& b : sub) n += b.size();
  return n;
}

const std::string kFolder = std::filesystem::temp_directory_path().string();

// Blocks kept in memory and blocks spilled once the budget is spent come back whole,
// each subpartition's in the order appended; the partition's memory is the budget's
// and goes back to it with the partition.
TEST(BlockingPartition, GivesEachSubpartitionItsBlocksInOrderAcrossMemoryAndFile) {
  BlockingShuffleMemory memory(2'000'000);
  {
    BlockingResultPartition partition(4, memory, kFolder, "map 1/2");
    const Blocks expected = appendBlocks(partition, 2000, 1);
    partition.finish();
    EXPECT_EQ(partition.bytes(), totalBytes(expected));
    EXPECT_GT(partition.spilledBytes(), 0u) << "5 MB of blocks within a 2 MB budget spilled nothing";
    EXPECT_EQ(memory.held(), partition.bytes() - partition.spilledBytes());
    EXPECT_LE(memory.held(), memory.budget());
    EXPECT_GT(memory.held(), memory.budget() - 5001) << "memory left unused while blocks spilled";
    for (int sub = 0; sub < 4; ++sub) EXPECT_EQ(readAll(partition, sub), expected[static_cast<size_t>(sub)]) << sub;
    // A second reader of the same subpartition reads it again from the start.
    EXPECT_EQ(readAll(partition, 2), expected[2]);
  }
  EXPECT_EQ(memory.held(), 0u);
}

TEST(BlockingPartition, WithNoMemoryEveryBlockSpills) {
  BlockingShuffleMemory memory(0);
  BlockingResultPartition partition(3, memory, kFolder, "map 1/1");
  const Blocks expected = appendBlocks(partition, 500, 2);
  partition.finish();
  EXPECT_EQ(partition.spilledBytes(), partition.bytes());
  for (int sub = 0; sub < 3; ++sub) EXPECT_EQ(readAll(partition, sub), expected[static_cast<size_t>(sub)]) << sub;
}

// The partitions of a job share its budget: what one holds, another spills; what one
// gives back when it goes, the next may hold.
TEST(BlockingPartition, PartitionsShareTheJobsBudget) {
  BlockingShuffleMemory memory(100'000);
  auto first = std::make_unique<BlockingResultPartition>(1, memory, kFolder, "a 1/1");
  first->append(0, std::string(100'000, 'a'));
  EXPECT_EQ(first->spilledBytes(), 0u);
  BlockingResultPartition second(1, memory, kFolder, "b 1/1");
  second.append(0, std::string(10, 'b'));
  EXPECT_EQ(second.spilledBytes(), 10u) << "the budget was spent";
  first.reset();
  BlockingResultPartition third(1, memory, kFolder, "c 1/1");
  third.append(0, std::string(100'000, 'c'));
  EXPECT_EQ(third.spilledBytes(), 0u) << "the first partition's memory did not come back";
}

// The consumer subtasks read one partition at once, each its own subpartition.
TEST(BlockingPartition, ReadersOnManyThreadsAtOnce) {
  BlockingShuffleMemory memory(1'500'000);
  BlockingResultPartition partition(8, memory, kFolder, "keyBy 1/1");
  const Blocks expected = appendBlocks(partition, 2000, 3);
  partition.finish();
  ASSERT_GT(partition.spilledBytes(), 0u);
  std::vector<std::vector<std::string>> got(8);
  std::vector<std::thread> readers;
  for (int sub = 0; sub < 8; ++sub)
    readers.emplace_back([&, sub] { got[static_cast<size_t>(sub)] = readAll(partition, sub); });
  for (auto& t : readers) t.join();
  EXPECT_EQ(got, expected);
}

// The job's tasks take and give back its budget at once: it is never overspent, and all
// of it comes back.
TEST(BlockingPartition, ManyThreadsNeverOverspendTheBudget) {
  BlockingShuffleMemory memory(10'000);
  std::atomic<bool> overspent{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const size_t bytes = static_cast<size_t>(1 + (i * 7 + t) % 3000);
        if (!memory.tryReserve(bytes)) continue;
        if (memory.held() > memory.budget()) overspent = true;
        memory.release(bytes);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overspent);
  EXPECT_EQ(memory.held(), 0u);
}

// A folder it cannot spill to is named, with the producer and the option to change, on
// the first block that must spill; blocks in memory need no folder.
TEST(BlockingPartition, AFolderItCannotSpillToIsNamed) {
  BlockingShuffleMemory memory(1000);
  BlockingResultPartition partition(2, memory, "/no/such/folder", "map (2/4)");
  partition.append(0, std::string(1000, 'm'));
  try {
    partition.append(1, "x");
    FAIL() << "spilled to a folder that is not there";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_STREQ(e.what(),
                 "map (2/4): cannot spill its output to '/no/such/folder': No such file or directory (io.tmp.dirs "
                 "names where batch execution spills)");
  }
}

// Written whole, then read: a read before the end or a block after it is weir's bug.
TEST(BlockingPartition, IsReadOnlyOnceFinished) {
  BlockingShuffleMemory memory(1000);
  BlockingResultPartition partition(1, memory, kFolder, "map 1/1");
  partition.append(0, "a");
  EXPECT_THROW(partition.reader(0), Error);
  partition.finish();
  EXPECT_THROW(partition.append(0, "b"), Error);
  EXPECT_EQ(readAll(partition, 0), std::vector<std::string>{"a"});
}

// What a stage reads from a blocking exchange is what the stage before it wrote: a
// round-robin writer over blocking channels into one partition (a budget so small that
// most frames spill), read back through a BlockingInput per consumer subtask, gives each
// consumer its records with their timestamps, in order, then the watermark, then the
// end. A cancelled channel stops its producer; a barrier has no place in the exchange.
struct Collected final : detail::Output<std::string> {
  std::vector<std::pair<std::string, int64_t>> records;  // timestamp -1: none
  void processBatch(std::span<std::string> batch, detail::Timestamps timestamps) override {
    for (size_t i = 0; i < batch.size(); ++i)
      records.emplace_back(std::move(batch[i]), timestamps.empty() ? -1 : timestamps[i]);
  }
  void endInput() override {}
  void processWatermark(int64_t) override {}
  void processIdleness(bool) override {}
};

TEST(BlockingPartition, AStageReadsWhatTheStageBeforeItWrote) {
  BlockingShuffleMemory memory(3000);
  BlockingResultPartition partition(2, memory, kFolder, "test");
  detail::TaskMetrics metrics;
  std::vector<std::unique_ptr<detail::Channel<std::string>>> owned;
  std::vector<detail::Channel<std::string>*> channels;
  for (int c = 0; c < 2; ++c) {
    owned.push_back(std::make_unique<detail::Channel<std::string>>(&partition, c, 16));
    channels.push_back(owned.back().get());
  }
  detail::RecordWriter<std::string, detail::RoundRobinSelector> writer(channels, detail::RoundRobinSelector{},
                                                                       &metrics);
  std::vector<std::pair<std::string, int64_t>> all;
  for (int batch = 0; batch < 40; ++batch) {
    std::vector<std::string> records;
    std::vector<int64_t> timestamps;
    for (int r = 0; r < 25; ++r) {
      records.push_back("record " + std::to_string(batch * 25 + r) + std::string(static_cast<size_t>(r), 'x'));
      if (batch % 3 != 1) timestamps.push_back(batch * 1000 + r);
      all.emplace_back(records.back(), batch % 3 != 1 ? batch * 1000 + r : -1);
    }
    writer.processBatch(records, timestamps);
  }
  writer.processWatermark(kMaxWatermark);
  writer.endInput();
  EXPECT_THROW(channels[0]->sendEvent(detail::EventKind::kBarrier, 1), Error);
  partition.finish();
  EXPECT_GT(partition.spilledBytes(), partition.bytes() / 2);

  std::vector<std::pair<std::string, int64_t>> got;
  for (int c = 0; c < 2; ++c) {
    Collected out;
    detail::BlockingInput<std::string> input(std::make_unique<BlockingResultPartition::Reader>(partition.reader(c)),
                                             &out, &metrics);
    using Poll = detail::ChannelInputBase::Poll;
    Poll poll;
    while ((poll = input.pollOnce()) == Poll::kProcessed) {
    }
    ASSERT_EQ(poll, Poll::kWatermark);
    EXPECT_EQ(input.watermark(), kMaxWatermark);
    EXPECT_EQ(input.pollOnce(), Poll::kEnded);
    EXPECT_EQ(input.pollOnce(), Poll::kEnded);
    for (size_t i = 1; i < out.records.size(); ++i) {  // in order: their numbers rise
      auto number = [](const std::string& r) { return std::stoi(r.substr(7)); };
      EXPECT_LT(number(out.records[i - 1].first), number(out.records[i].first));
    }
    got.insert(got.end(), out.records.begin(), out.records.end());
  }
  std::sort(got.begin(), got.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(got, all);
  EXPECT_EQ(metrics.numRecordsIn.load(), all.size());

  BlockingResultPartition other(1, memory, kFolder, "test");
  detail::Channel<std::string> cancelled(&other, 0, 16);
  cancelled.cancel();
  EXPECT_FALSE(cancelled.send({"late"}, {}, metrics).has_value());
  EXPECT_EQ(other.bytes(), 0u);
}

}  // namespace
}  // namespace weir::runtime
