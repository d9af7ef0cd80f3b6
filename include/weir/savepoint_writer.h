// The State Processor API's writing side (Flink's SavepointWriter): a savepoint made
// from a bounded stream instead of a running job, to start a new job with state it
// never built itself (a backfill, a migration from another system, a fixed state).
//
//   struct LoadCounts : KeyedStateBootstrapFunction<int64_t, Count> {
//     void open() override { count_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("count")); }
//     void processElement(const Count& c, Context&) override { count_->update(c.count); }
//     ValueState<int64_t>* count_ = nullptr;
//   };
//   StreamExecutionEnvironment env;
//   auto counts = env.fromSource(FileSource::forRecordStreamFormat(...), ...);
//   SavepointWriter::newSavepoint(env, 128)
//       .withOperator(OperatorIdentifier::forUid("count"),
//                     OperatorTransformation::bootstrapWith(counts)
//                         .keyBy([](const Count& c) { return c.key; })
//                         .transform(LoadCounts{}))
//       .write("/savepoints/bootstrapped");
//   env.execute("bootstrap counts");
//   // then: weir run ... -s /savepoints/bootstrapped, whose operator with uid "count"
//   // finds its ValueState "count" filled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "weir/data_stream.h"
#include "weir/detail/operators/collecting_operator.h"
#include "weir/detail/operators/keyed_function_operator.h"
#include "weir/detail/savepoint/bootstrap.h"
#include "weir/error.h"
#include "weir/key_group.h"
#include "weir/keyed_process_function.h"
#include "weir/keyed_stream.h"
#include "weir/savepoint_format_type.h"
#include "weir/sink.h"
#include "weir/stream_execution_environment.h"

namespace weir {

namespace detail {

// Snapshots instance `op` of a bootstrap operator (its keyed and operator state) and
// writes it; returns the file's entry of _metadata.
inline std::string writeBootstrapped(StreamOperator& op, const BootstrapTarget& target) {
  OperatorSnapshot snapshot;
  snapshot.savepoint = SavepointFormatType::CANONICAL;
  op.snapshotState(0, 0, snapshot);
  const RuntimeContext& context = op.context();
  return writeBootstrappedInstance(target, op.name(), context.getIndexOfThisSubtask(),
                                  context.getNumberOfParallelSubtasks(), snapshot);
}

// A bootstrap operator (`Base` runs its function): at the end of its input it writes its
// state and emits the file's entry.
template <class Base>
class BootstrapOperator : public Base {
 public:
  template <class... Args>
  explicit BootstrapOperator(BootstrapTarget target, Args&&... args)
      : Base(std::forward<Args>(args)...), target_(std::move(target)) {}
  void endInput() override {
    std::string entry = writeBootstrapped(*this, target_);
    this->collecting([&](Collector<std::string>& out) { out.collect(std::move(entry)); });
    Base::endInput();
  }

 protected:
  const BootstrapTarget target_;
};

// Runs a KeyedStateBootstrapFunction with the record's key current. Its timers are kept,
// never fired (the job that resumes from the savepoint fires them); watermarks pass on.
template <class T, class K, class KeySelector, class F>
class KeyedStateBootstrapOperator final
    : public BootstrapOperator<KeyedFunctionOperator<T, std::string, K, KeySelector, F>> {
  using Base = BootstrapOperator<KeyedFunctionOperator<T, std::string, K, KeySelector, F>>;

 public:
  KeyedStateBootstrapOperator(KeySelector keySelector, F fn, BootstrapTarget target)
      : Base(std::move(target), std::move(keySelector), std::move(fn)) {}

  void open() override {
    const int maxParallelism = this->context().getMaxNumberOfParallelSubtasks();
    if (maxParallelism != this->target_.maxParallelism)
      throw Error(ErrorCode::kInvalidJob,
                  "the savepoint for '" + this->target_.operatorId + "' has max parallelism " +
                      std::to_string(this->target_.maxParallelism) + ", but its bootstrap job runs with " +
                      std::to_string(maxParallelism) + "; leave the environment's max parallelism as newSavepoint set it");
    Base::open();
  }
  void processBatch(std::span<T> records, Timestamps timestamps) override {
    typename F::Context ctx(this);
    this->forEachKeyed(records, timestamps, ctx, [&](const T& r, Collector<std::string>&) {
      this->fn_.processElement(r, ctx);
    });
  }
  void processWatermark(int64_t watermark) override { this->forwardWatermark(watermark); }
  void onProcessingTime(int64_t) override {}
};

// Runs a StateBootstrapFunction over its part of the stream; what it keeps in operator
// state (as a CheckpointedFunction) is written at the end of its input.
template <class T, class F>
class StateBootstrapOperator final : public BootstrapOperator<CollectingOperator<T, std::string, F>> {
  using Base = BootstrapOperator<CollectingOperator<T, std::string, F>>;

 public:
  StateBootstrapOperator(F fn, BootstrapTarget target) : Base(std::move(target), std::move(fn)) {}

  void processBatch(std::span<T> records, Timestamps timestamps) override {
    typename F::Context ctx;
    this->forEachRecord(records, timestamps, ctx, [&](const T& r, Collector<std::string>&) {
      this->fn_.processElement(r, ctx);
    });
  }
};

// Gathers the entries of every bootstrapped instance, at parallelism 1, and writes the
// savepoint's _metadata once they all arrived (at the end of its input).
class BootstrapMetadataSink final : public Sink<std::string> {
 public:
  BootstrapMetadataSink(std::string folder, int maxParallelism)
      : folder_(std::move(folder)), maxParallelism_(maxParallelism) {}

  std::unique_ptr<SinkWriter<std::string>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(folder_, maxParallelism_, context.stateBackend().getName());
  }

 private:
  class Writer final : public SinkWriter<std::string> {
   public:
    Writer(std::string folder, int maxParallelism, std::string stateBackend)
        : folder_(std::move(folder)), maxParallelism_(maxParallelism), stateBackend_(std::move(stateBackend)) {}
    void write(const std::string& entry) override { entries_.push_back(entry); }
    void flush(bool endOfInput) override {
      if (endOfInput) writeBootstrappedMetadata(folder_, maxParallelism_, stateBackend_, entries_);
    }

   private:
    std::string folder_;
    int maxParallelism_;
    std::string stateBackend_;
    std::vector<std::string> entries_;
  };

  std::string folder_;
  int maxParallelism_;
};

}  // namespace detail

// Writes the keyed state of one key at a time: open() registers the states (with the
// descriptors the job that resumes will use), then processElement runs once for every
// record with its key current. Timers it registers are kept in the savepoint and fire
// in the job that resumes from it, not while bootstrapping.
template <class K, class IN>
class KeyedStateBootstrapFunction : public RichFunction {
 public:
  using KeyType = K;
  using InputType = IN;
  using TimerService = typename KeyedProcessFunction<K, IN, IN>::TimerService;
  class Context {
   public:
    explicit Context(detail::KeyedTimers<K>* timers) : timerService_(timers), timers_(timers) {}
    const K& getCurrentKey() const { return timers_->currentKey(); }
    TimerService& timerService() { return timerService_; }
    // The record's event timestamp, when it has one.
    std::optional<int64_t> timestamp() const { return timestamp_; }
    void setTimestamp(std::optional<int64_t> timestamp) { timestamp_ = timestamp; }

   private:
    TimerService timerService_;
    detail::KeyedTimers<K>* timers_;
    std::optional<int64_t> timestamp_;
  };
  virtual void processElement(const IN& value, Context& ctx) = 0;
};

// Writes operator state: a function that is also a CheckpointedFunction gets its
// operator states in initializeState() and fills them in processElement() (or in
// snapshotState(), called once at the end); list state is split among the resumed
// job's instances, union list state goes whole to each, as on any restore.
template <class IN>
class StateBootstrapFunction : public RichFunction {
 public:
  using InputType = IN;
  class Context {
   public:
    // The record's event timestamp, when it has one.
    std::optional<int64_t> timestamp() const { return timestamp_; }
    void setTimestamp(std::optional<int64_t> timestamp) { timestamp_ = timestamp; }

   private:
    std::optional<int64_t> timestamp_;
  };
  virtual void processElement(const IN& value, Context& ctx) = 0;
};

// The operator a savepoint's state is for: its uid in the job that resumes from it.
class OperatorIdentifier {
 public:
  static OperatorIdentifier forUid(std::string uid) { return OperatorIdentifier(std::move(uid)); }
  const std::string& uid() const { return uid_; }

 private:
  explicit OperatorIdentifier(std::string uid) : uid_(std::move(uid)) {}
  std::string uid_;
};

// How one operator's state is made from a stream (OperatorTransformation builds it);
// SavepointWriter::withOperator says for which operator.
class StateBootstrapTransformation {
 public:
  // Adds the bootstrap operator for `target` to the stream's job; returns the stream of
  // the entries its instances wrote.
  using Build = std::function<DataStream<std::string>(const detail::BootstrapTarget& target)>;
  explicit StateBootstrapTransformation(Build build) : build_(std::move(build)) {}
  DataStream<std::string> build(const detail::BootstrapTarget& target) const { return build_(target); }

 private:
  Build build_;
};

// A keyed bootstrap stream: transform(f) with f a KeyedStateBootstrapFunction<K, T>.
template <class T, class KeySelector>
class KeyedOperatorTransformation {
 public:
  KeyedOperatorTransformation(DataStream<T> stream, KeySelector keySelector)
      : stream_(std::move(stream)), keySelector_(std::move(keySelector)) {}

  template <class F>
  StateBootstrapTransformation transform(F fn) const {
    using K = std::decay_t<std::invoke_result_t<KeySelector&, const T&>>;
    static_assert(std::is_base_of_v<KeyedStateBootstrapFunction<K, T>, F>,
                  "transform(f): f must derive from KeyedStateBootstrapFunction<K, T> with the stream's key and "
                  "record types");
    return StateBootstrapTransformation([stream = stream_, sel = keySelector_, fn](const detail::BootstrapTarget& target) {
      auto keyed = DataStream<T>(stream).keyBy(sel);
      auto& node = keyed.graph()->add(detail::Transformation::Kind::kOperator, "Bootstrap " + target.operatorId,
                                      {keyed.id()}, detail::TypedStream<std::string>::get());
      node.createOperator = [sel, fn, target] {
        return std::make_unique<detail::KeyedStateBootstrapOperator<T, K, KeySelector, F>>(sel, fn, target);
      };
      return DataStream<std::string>(keyed.graph(), node.id);
    });
  }

 private:
  DataStream<T> stream_;
  KeySelector keySelector_;
};

// A bootstrap stream: keyBy(...).transform(f) for keyed state, or transform(f) with f
// a StateBootstrapFunction<T> for operator state.
template <class T>
class OneInputOperatorTransformation {
 public:
  explicit OneInputOperatorTransformation(DataStream<T> stream) : stream_(std::move(stream)) {}

  template <class F>
  StateBootstrapTransformation transform(F fn) const {
    static_assert(std::is_base_of_v<StateBootstrapFunction<T>, F>,
                  "transform(f): f must derive from StateBootstrapFunction<T> with the stream's record type (or "
                  "keyBy first, for a KeyedStateBootstrapFunction)");
    return StateBootstrapTransformation([stream = stream_, fn](const detail::BootstrapTarget& target) {
      auto& node = stream.graph()->add(detail::Transformation::Kind::kOperator, "Bootstrap " + target.operatorId,
                                       {stream.id()}, detail::TypedStream<std::string>::get());
      node.createOperator = [fn, target] { return std::make_unique<detail::StateBootstrapOperator<T, F>>(fn, target); };
      return DataStream<std::string>(stream.graph(), node.id);
    });
  }
  // Partitions the stream as DataStream::keyBy does: the state each key's records make
  // lands in that key's key group.
  template <class F>
  KeyedOperatorTransformation<T, F> keyBy(F keySelector) const {
    return KeyedOperatorTransformation<T, F>(stream_, std::move(keySelector));
  }

 private:
  DataStream<T> stream_;
};

struct OperatorTransformation {
  // The bounded stream whose records make the state.
  template <class T>
  static OneInputOperatorTransformation<T> bootstrapWith(DataStream<T> stream) {
    return OneInputOperatorTransformation<T>(std::move(stream));
  }
};

class SavepointWriter {
 public:
  // A new savepoint of `maxParallelism` key groups (the job that resumes from it gets
  // that max parallelism), written by jobs of `env`, whose max parallelism it sets.
  // Its state is in the CANONICAL format: it restores into either state backend.
  static SavepointWriter newSavepoint(StreamExecutionEnvironment& env, int maxParallelism) {
    if (maxParallelism < 1 || maxParallelism > kUpperBoundMaxParallelism)
      throw Error(ErrorCode::kInvalidArgument, "newSavepoint: max parallelism " + std::to_string(maxParallelism) +
                                                   " is not between 1 and " + std::to_string(kUpperBoundMaxParallelism));
    if (int set = env.getMaxParallelism(); set != -1 && set != maxParallelism)
      throw Error(ErrorCode::kInvalidArgument, "newSavepoint: the environment's max parallelism is " +
                                                   std::to_string(set) + ", the savepoint's would be " +
                                                   std::to_string(maxParallelism));
    env.setMaxParallelism(maxParallelism);
    return SavepointWriter(maxParallelism);
  }
  // The same, its bootstrap operators keeping their state in `backend` meanwhile.
  static SavepointWriter newSavepoint(StreamExecutionEnvironment& env, std::shared_ptr<const StateBackend> backend,
                                      int maxParallelism) {
    env.setStateBackend(std::move(backend));
    return newSavepoint(env, maxParallelism);
  }

  // The state of the operator `id` is made by `transformation`.
  SavepointWriter& withOperator(const OperatorIdentifier& id, StateBootstrapTransformation transformation) {
    const std::string& uid = id.uid();
    if (uid.empty() || uid.find('/') != std::string::npos || uid == "." || uid == "..")
      throw Error(ErrorCode::kInvalidArgument, "withOperator: '" + uid +
                                                   "' cannot be a uid of a savepoint's operator (it names the "
                                                   "operator's state files: not empty, no '/')");
    for (const auto& [known, _] : operators_)
      if (known == uid) throw Error(ErrorCode::kInvalidArgument, "withOperator: operator '" + uid + "' is given twice");
    operators_.emplace_back(uid, std::move(transformation));
    return *this;
  }

  // Adds the job that writes the savepoint into the folder `path` (made if missing; one
  // that holds a savepoint already is refused: weir never overwrites one), to run with
  // env.execute(). The savepoint is there, _metadata last, once that job finished.
  void write(const std::string& path) {
    if (operators_.empty()) throw Error(ErrorCode::kInvalidArgument, "write: the savepoint has no operator");
    detail::prepareBootstrapFolder(path);
    std::optional<DataStream<std::string>> entries;
    for (const auto& [uid, transformation] : operators_) {
      DataStream<std::string> written = transformation.build({path, uid, maxParallelism_});
      entries = entries ? entries->unionWith(written) : written;
    }
    entries->sinkTo(detail::BootstrapMetadataSink(path, maxParallelism_)).name("Savepoint metadata").setParallelism(1);
  }

 private:
  explicit SavepointWriter(int maxParallelism) : maxParallelism_(maxParallelism) {}
  int maxParallelism_;
  std::vector<std::pair<std::string, StateBootstrapTransformation>> operators_;
};

}  // namespace weir
