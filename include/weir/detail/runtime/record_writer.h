// The end of a chain that feeds other subtasks: partitions records into one buffer per
// channel and sends full buffers against credit, partly filled ones when its subtask
// flushes them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "weir/detail/runtime/channel.h"
#include "weir/detail/core/operator_failure.h"
#include "weir/detail/core/output.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/error.h"
#include "weir/key_group.h"

namespace weir::detail {

// How records are spread over the channels of an edge.
enum class PartitionerKind {
  kForward,    // channel i of producer i only; parallelism must match
  kRebalance,  // round robin
  kShuffle,    // uniformly at random
  kBroadcast,  // every record to every channel
  kKeyGroup,   // by the key's key group (keyBy)
  // (Persisted in unaligned checkpoints' channel state: new kinds go last.)
  kRescale,    // round robin over a local subset of the channels (pointwise, as Flink's)
  kGlobal,     // every record to channel 0
  kCustom,     // the user's partitioner picks the channel from the record's key
};

const char* partitionerName(PartitionerKind kind);

// What every channel writer can do whatever its record type.
class ChannelWriterBase {
 public:
  virtual ~ChannelWriterBase() = default;
  // Sends checkpoint barrier `checkpointId` on every channel, after every record sent.
  virtual void broadcastBarrier(int64_t checkpointId) = 0;
  // Sends the partly filled buffers: every one, waiting for credit where needed, or only
  // those whose channel has a credit now. The subtask decides when (setBufferTimeout);
  // watermarks, barriers and the end of input send them first on their own.
  virtual void flush(bool waitForCredit) = 0;
  // Whether every channel has a credit, so the next batch most likely goes out without
  // waiting. A subtask reads its input only then, and meanwhile stays free to take
  // checkpoints and read its mailbox (Flink's output availability).
  virtual bool available() const = 0;
};

// Writes a stream of T onto `channels`; `Selector` picks a channel per record.
template <class T, class Selector>
class RecordWriter final : public Output<T>, public ChannelWriterBase {
 public:
  RecordWriter(std::vector<Channel<T>*> channels, Selector selector, TaskMetrics* metrics)
      : channels_(std::move(channels)), buffers_(channels_.size()), filled_(channels_.size(), 0),
        selector_(std::move(selector)), metrics_(metrics),
        batch_(channels_.empty() || channels_[0]->bufferRecords() == 0 ? kBatchRecords<T>
                                                                       : channels_[0]->bufferRecords()),
        indexed_(PlainRecord<T> && !Selector::kBroadcast && channels_.size() > 1) {
    for (auto& b : buffers_) makeRoom(b);
  }

  void processBatch(std::span<T> records, Timestamps timestamps) override { write(records, timestamps); }
  bool processSharedBatch(std::span<const T> records, std::span<const int64_t> timestamps) override {
    write(records, timestamps);  // copies where processBatch moves
    return true;
  }

  // Events follow every record before them: the partial buffers go first.
  void endInput() override {
    flush(true);
    for (auto* ch : channels_) ch->sendEvent(EventKind::kEndOfPartition);
  }
  void processWatermark(int64_t watermark) override {
    flush(true);
    for (auto* ch : channels_) ch->sendEvent(EventKind::kWatermark, watermark);
  }
  void processIdleness(bool idle) override {
    flush(true);
    for (auto* ch : channels_) ch->sendEvent(idle ? EventKind::kIdle : EventKind::kActive);
  }
  void broadcastBarrier(int64_t checkpointId) override {
    flush(true);
    for (auto* ch : channels_) ch->sendEvent(EventKind::kBarrier, checkpointId);
  }
  void flush(bool waitForCredit) override {
    for (size_t c = 0; c < channels_.size(); ++c)
      if (buffered(c) > 0 && (waitForCredit || channels_[c]->hasCredit())) send(c);
  }
  bool available() const override {
    for (auto* ch : channels_)
      if (!ch->hasCredit()) return false;
    return true;
  }

 private:
  template <class R>
  void write(std::span<R> records, std::span<const int64_t> timestamps) {
    const size_t n = channels_.size();
    const bool stamped = !timestamps.empty();
    // A buffer carries timestamps for all its records or for none: records waiting
    // unstamped (say from processing-time timers) go before stamped ones, and back.
    for (size_t c = 0; c < n; ++c)
      if (buffered(c) > 0 && buffers_[c].timestamps.empty() == stamped) send(c);
    auto put = [&](size_t c, size_t i, auto&& record) {
      auto& b = buffers_[c];
      if constexpr (PlainRecord<T>) {
        if (indexed_) {
          size_t& k = filled_[c];
          b.records[k] = std::forward<decltype(record)>(record);
          if (stamped) {
            if (b.timestamps.size() != batch_) b.timestamps.resize(batch_);
            b.timestamps[k] = timestamps[i];
          }
          if (++k == batch_) send(c);
          return;
        }
      }
      b.records.push_back(std::forward<decltype(record)>(record));
      if (stamped) b.timestamps.push_back(timestamps[i]);
      if (b.records.size() >= batch_) send(c);
    };
    if constexpr (Selector::kBroadcast) {
      for (size_t c = 0; c < n; ++c)
        for (size_t i = 0; i < records.size(); ++i) put(c, i, std::as_const(records[i]));
    } else if (n == 1) {
      // One channel: whole runs of the batch at a time (a memcpy for plain records).
      auto& b = buffers_[0];
      for (size_t i = 0; i < records.size();) {
        const size_t take = std::min(records.size() - i, batch_ - b.records.size());
        auto from = records.begin() + static_cast<std::ptrdiff_t>(i), to = from + static_cast<std::ptrdiff_t>(take);
        b.records.insert(b.records.end(), std::make_move_iterator(from), std::make_move_iterator(to));
        if (stamped) b.timestamps.insert(b.timestamps.end(), timestamps.begin() + static_cast<std::ptrdiff_t>(i),
                                         timestamps.begin() + static_cast<std::ptrdiff_t>(i + take));
        i += take;
        if (b.records.size() >= batch_) send(0);
      }
    } else {
      // The channel of every record of a chunk first, then the records into their
      // buffers: the selector's work (a key's hash and key group) for one record does
      // not wait on the stores of the one before.
      constexpr size_t kChunk = 256;
      std::array<uint32_t, kChunk> channel;
      for (size_t from = 0; from < records.size(); from += kChunk) {
        const size_t m = std::min(kChunk, records.size() - from);
        for (size_t j = 0; j < m; ++j) channel[j] = static_cast<uint32_t>(selector_(records[from + j], n));
        for (size_t j = 0; j < m; ++j) put(channel[j], from + j, std::move(records[from + j]));
      }
    }
  }

  // Records waiting in channel c's buffer.
  size_t buffered(size_t c) const { return indexed_ ? filled_[c] : buffers_[c].records.size(); }

  // A buffer to fill: room for a batch, or (indexed) a batch of slots to assign.
  void makeRoom(typename Channel<T>::Buffers& b) {
    if constexpr (PlainRecord<T>) {
      if (indexed_) {
        b.records.resize(batch_);
        return;
      }
    }
    if (b.records.capacity() == 0) b.records.reserve(batch_);
  }

  void send(size_t c) {
    auto& b = buffers_[c];
    const size_t count = buffered(c);
    if constexpr (PlainRecord<T>) {  // (only plain records are indexed: resize needs a default)
      if (indexed_) {
        b.records.resize(count);
        if (!b.timestamps.empty()) b.timestamps.resize(count);
        filled_[c] = 0;
      }
    }
    auto next = channels_[c]->send(std::move(b.records), std::move(b.timestamps), *metrics_);
    if (!next) throw TaskCancelled{};
    b = std::move(*next);
    makeRoom(b);
    metrics_->numRecordsOut.fetch_add(count, std::memory_order_relaxed);
  }

  std::vector<Channel<T>*> channels_;
  std::vector<typename Channel<T>::Buffers> buffers_;
  // Plain records spread over several channels are assigned by index into buffers kept
  // a batch long (a push_back per record, left out of line, cost a third of keyBy's
  // partitioning): filled_[c] of channel c's slots hold records.
  std::vector<size_t> filled_;
  Selector selector_;
  TaskMetrics* metrics_;
  const size_t batch_;  // records per buffer: the channels' (the edge's share of network memory)
  const bool indexed_;
};

struct RoundRobinSelector {
  static constexpr bool kBroadcast = false;
  size_t next = 0;
  template <class T>
  size_t operator()(const T&, size_t n) {
    if (++next >= n) next = 0;
    return next;
  }
};

// Flink's RescalePartitioner: producer `index` of `producers` feeds a contiguous share
// of the n consumers, round robin; each consumer is fed by a contiguous share of the
// producers (Flink's pointwise connection).
struct RescaleSelector {
  static constexpr bool kBroadcast = false;
  int index = 0;
  int producers = 1;
  size_t begin = 0, end = 0, next = 0, forN = 0;
  template <class T>
  size_t operator()(const T&, size_t n) {
    if (forN != n) {
      const auto p = static_cast<size_t>(producers), i = static_cast<size_t>(index);
      if (p >= n) {  // fan-in: consumer j reads producers [j*p/n, (j+1)*p/n)
        begin = 0;
        while ((begin + 1) * p / n <= i) ++begin;
        end = begin + 1;
      } else {  // fan-out: producer i feeds consumers [ceil(i*n/p), ceil((i+1)*n/p))
        begin = (i * n + p - 1) / p;
        end = ((i + 1) * n + p - 1) / p;
      }
      next = begin;
      forN = n;
    }
    const size_t c = next;
    if (++next == end) next = begin;
    return c;
  }
};

// Flink's GlobalPartitioner: everything to the first consumer.
struct GlobalSelector {
  static constexpr bool kBroadcast = false;
  template <class T>
  size_t operator()(const T&, size_t) {
    return 0;
  }
};

struct RandomSelector {
  static constexpr bool kBroadcast = false;
  std::minstd_rand rng{std::random_device{}()};
  template <class T>
  size_t operator()(const T&, size_t n) {
    return static_cast<size_t>(rng() % n);
  }
};

struct BroadcastSelector {
  static constexpr bool kBroadcast = true;
  template <class T>
  size_t operator()(const T&, size_t) {
    return 0;
  }
};

// Sends a record to the subtask that owns its key's key group.
template <class K, class KeySelector>
struct KeyGroupSelector {
  static constexpr bool kBroadcast = false;
  KeySelector keySelector;
  int maxParallelism;
  std::optional<KeyGroupRouter> router{};  // for `routed` channels, made at the first record
  size_t routed = 0;
  template <class T>
  size_t operator()(const T& record, size_t n) {
    if (routed != n) {
      router.emplace(maxParallelism, static_cast<int>(n));
      routed = n;
    }
    return static_cast<size_t>(router->operatorIndex(KeyHash<K>{}(std::invoke(keySelector, record))));
  }
};

// partitionCustom: the user's partitioner picks the channel from the record's key; a
// channel out of range fails the job, naming it.
template <class Partitioner, class KeySelector>
struct CustomSelector {
  static constexpr bool kBroadcast = false;
  Partitioner partitioner;
  KeySelector keySelector;
  template <class T>
  size_t operator()(const T& record, size_t n) {
    const auto& key = std::invoke(keySelector, record);
    int64_t c = 0;
    if constexpr (requires { partitioner.partition(key, static_cast<int>(n)); })
      c = partitioner.partition(key, static_cast<int>(n));
    else
      c = std::invoke(partitioner, key, static_cast<int>(n));
    if (c < 0 || static_cast<uint64_t>(c) >= n)
      throw Error(ErrorCode::kInvalidArgument, "partitionCustom: the partitioner returned channel " +
                                                   std::to_string(c) + " for " + std::to_string(n) +
                                                   " downstream subtasks; it must be between 0 and " +
                                                   std::to_string(n - 1));
    return static_cast<size_t>(c);
  }
};

}  // namespace weir::detail
