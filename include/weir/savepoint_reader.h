// The State Processor API's reading side (Flink's SavepointReader): the keyed state of
// one operator of a savepoint or checkpoint, as a bounded stream a job can process like
// any other.
//
//   struct ReadCounts : KeyedStateReaderFunction<int64_t, Count> {
//     void open() override { count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count")); }
//     void readKey(const int64_t& key, Context&, Collector<Count>& out) override {
//       out.collect({key, *count_->value()});
//     }
//     ValueState<int64_t>* count_ = nullptr;
//   };
//   auto savepoint = SavepointReader::read(env, "/savepoints/savepoint-3a2b1c-9f8e7d6c5b4a");
//   savepoint.readKeyedState("count", ReadCounts{}).print();
//   env.execute("read counts");
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "weir/detail/savepoint/snapshot_instances.h"
#include "weir/functions.h"
#include "weir/runtime_context.h"
#include "weir/source.h"
#include "weir/stream_execution_environment.h"

namespace weir {

// Reads the state of one key at a time: open() registers the states to read (with the
// descriptors the job that wrote them used, or the next version of their types, which
// migrate as on a restore), then readKey runs once for every key that has an entry in
// any of them, with that key current.
template <class K, class OUT>
class KeyedStateReaderFunction : public RichFunction {
 public:
  using KeyType = K;
  using OutputType = OUT;
  // What Flink's context adds (the key's registered timers) is not offered yet.
  class Context {};
  virtual void readKey(const K& key, Context& ctx, Collector<OUT>& out) = 0;
};

namespace detail {

// A bounded source whose splits are the operator's instances in the snapshot; a reader
// restores one instance's keyed state on the heap, opens the function over it and
// emits what readKey collects, key after key.
template <class F>
class KeyedStateReaderSource final : public Source<typename F::OutputType> {
 public:
  using K = typename F::KeyType;
  using OUT = typename F::OutputType;

  KeyedStateReaderSource(std::vector<SnapshotInstance> instances, F function)
      : instances_(std::move(instances)), function_(std::move(function)) {}

  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  int maxParallelism() const override { return static_cast<int>(instances_.size()); }

  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override {
    std::deque<std::unique_ptr<SourceSplit>> splits;
    for (size_t i = 0; i < instances_.size(); ++i) splits.push_back(std::make_unique<Split>(i));
    return std::make_unique<SharedSplitEnumerator>(std::move(splits));
  }

  std::unique_ptr<SourceReader<OUT>> createReader(const SourceReaderContext& context) const override {
    return std::make_unique<Reader>(*this, context);
  }

 private:
  struct Split final : SourceSplit {
    explicit Split(size_t i) : instance(i) {}
    std::string splitId() const override { return "instance-" + std::to_string(instance); }
    size_t instance;
  };

  class Reader final : public SourceReader<OUT> {
   public:
    Reader(const KeyedStateReaderSource& source, const SourceReaderContext& context)
        : source_(source), context_(context) {}

    InputStatus pollNext(std::vector<OUT>& out, size_t maxRecords) override {
      while (next_ == keys_.size()) {
        closeInstance();
        std::unique_ptr<SourceSplit> split = context_.enumerator->nextSplit(context_.subtaskIndex);
        if (!split) return InputStatus::END_OF_INPUT;
        openInstance(source_.instances_.at(static_cast<Split&>(*split).instance));
      }
      std::vector<int64_t> timestamps;
      Collector<OUT> collector(&out, &timestamps, nullptr, std::numeric_limits<size_t>::max());
      typename F::Context ctx;
      for (size_t n = 0; n < maxRecords && next_ < keys_.size() && out.size() < maxRecords; ++n, ++next_) {
        store_->setCurrentKey(keys_[next_]);
        function_->readKey(keys_[next_], ctx, collector);
      }
      return InputStatus::MORE_AVAILABLE;
    }

    void close() override { closeInstance(); }

   private:
    void openInstance(const SnapshotInstance& instance) {
      RestoredOperatorState restored = readSnapshotInstance(instance);
      store_ = std::make_unique<KeyedStateBackend<K>>(backend_, instance.maxParallelism,
                                                      "read " + instance.operatorId);
      store_->setRestored(restored);
      context_runtime_ = std::make_unique<RuntimeContext>("read " + instance.operatorId, context_.subtaskIndex,
                                                          context_.parallelism, instance.maxParallelism);
      context_runtime_->setKeyedStateBackend(store_.get());
      function_ = std::make_unique<F>(source_.function_);
      function_->setRuntimeContext(context_runtime_.get());
      function_->open();
      // Every key with an entry in a state the function registered, once.
      keys_.clear();
      absl::flat_hash_set<K, KeyHasher<K>> seen;
      for (const auto& [name, schema] : store_->stateSchemas())
        if (store_->registered(name) != nullptr)
          for (K& key : store_->keysWithState(name))
            if (seen.insert(key).second) keys_.push_back(std::move(key));
      next_ = 0;
    }
    void closeInstance() {
      if (function_) function_->close();
      function_.reset();
      context_runtime_.reset();
      store_.reset();
      keys_.clear();
      next_ = 0;
    }

    const KeyedStateReaderSource& source_;
    SourceReaderContext context_;
    HashMapStateBackend backend_;
    std::unique_ptr<KeyedStateBackend<K>> store_;
    std::unique_ptr<RuntimeContext> context_runtime_;
    std::unique_ptr<F> function_;
    std::vector<K> keys_;
    size_t next_ = 0;
  };

  std::vector<SnapshotInstance> instances_;
  F function_;
};

}  // namespace detail

class SavepointReader {
 public:
  // The savepoint or retained checkpoint at `path` (its folder or _metadata), read by
  // jobs of `env`. Every file of the operators read is verified before it is used.
  static SavepointReader read(StreamExecutionEnvironment& env, std::string path) {
    return SavepointReader(env, std::move(path));
  }

  // The keyed state of the operator whose uid (or derived id, as `weir savepoint
  // inspect` lists) is `uid`, as a bounded stream of what `function` (a
  // KeyedStateReaderFunction<K, OUT>) collects for each key. One reader per instance of
  // the operator at most: set the parallelism up to the savepoint's. Throws weir::Error
  // when the snapshot is missing or damaged, or holds no such operator.
  template <class F>
  SingleOutputStreamOperator<typename F::OutputType> readKeyedState(const std::string& uid, F function) {
    static_assert(std::is_base_of_v<KeyedStateReaderFunction<typename F::KeyType, typename F::OutputType>, F>,
                  "readKeyedState(uid, f): f must derive from KeyedStateReaderFunction<K, OUT>");
    using OUT = typename F::OutputType;
    return env_->fromSource(detail::KeyedStateReaderSource<F>(detail::snapshotInstances(path_, uid), std::move(function)),
                            WatermarkStrategy<OUT>::noWatermarks(), "Keyed state of " + uid);
  }

 private:
  SavepointReader(StreamExecutionEnvironment& env, std::string path) : env_(&env), path_(std::move(path)) {}
  StreamExecutionEnvironment* env_;
  std::string path_;
};

}  // namespace weir
