// The two-phase-commit framework's contract with a sink (TwoPhaseCommittingSink), with
// a test sink whose "external system" is a ledger of transactions: every record is
// committed once through failures; a restored checkpoint's committables are committed
// when the job resumes, also at another parallelism (2 -> 3 -> 1); what no completed
// checkpoint covers is aborted; a committer's retry, known and unknown failures do what
// CommitRequest says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "checkpoint/checkpoint_storage.h"
#include "support/fresh_folder.h"
#include "support/recovery_job.h"
#include "weir/weir.h"

namespace weir::test {
namespace {

namespace fs = std::filesystem;
using test::freshFolder;

// A transaction: its name ("<writer uid>-<subtask>-<sequence>") and its records. A
// writer's position in its checkpoint is spelled the same way, with its next sequence.
struct Txn {
  std::string name;
  std::vector<int64_t> records;
};
WEIR_STRUCT(Txn, name, records);

// The external system the sink writes into.
struct Ledger {
  std::mutex mutex;
  std::map<std::string, std::vector<int64_t>> committed;
  std::set<std::string> prepared, aborted;
  int64_t repeats = 0;       // commits of a transaction committed before
  int64_t commitCalls = 0;   // Committer::commit calls with at least one request
  bool hold = false;         // the committer asks to retry later
  bool failKnown = false;    // the committer cannot commit anything, for a known reason
  bool failUnknown = false;  // the committer fails for an unknown reason
  std::map<std::string, std::set<int>> triedBy;  // transaction -> subtasks that tried to commit it

  std::vector<int64_t> committedRecords() {
    std::lock_guard lock(mutex);
    std::vector<int64_t> all;
    for (const auto& [name, records] : committed) all.insert(all.end(), records.begin(), records.end());
    std::sort(all.begin(), all.end());
    return all;
  }
};

struct Name {
  std::string uid;
  int subtask;
  int64_t sequence;
};
Name parse(const std::string& name) {
  size_t b = name.rfind('-'), a = name.rfind('-', b - 1);
  return {name.substr(0, a), std::stoi(name.substr(a + 1, b - a - 1)), std::stoll(name.substr(b + 1))};
}

class LedgerSink final : public TwoPhaseCommittingSink<int64_t, Txn> {
 public:
  explicit LedgerSink(std::shared_ptr<Ledger> ledger) : ledger_(std::move(ledger)) {}
  std::unique_ptr<SinkWriter<int64_t>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(ledger_, context);
  }
  std::unique_ptr<Committer<Txn>> createCommitter(RuntimeContext& context) const override {
    return std::make_unique<LedgerCommitter>(ledger_, context.getIndexOfThisSubtask());
  }

 private:
  struct WriterPosition {
    std::string uid;
    int64_t nextSequence = 0;
  };

  class Writer final : public PrecommittingSinkWriter<int64_t, Txn>, public CheckpointedFunction {
   public:
    Writer(std::shared_ptr<Ledger> ledger, RuntimeContext& context)
        : ledger_(std::move(ledger)), context_(context),
          uid_("w" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "x" + std::to_string(::getpid()) + "t" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())) {}
    void write(const int64_t& r) override { open_.push_back(r); }
    std::vector<Txn> prepareCommit() override {
      if (open_.empty()) return {};
      Txn t{uid_ + "-" + std::to_string(context_.getIndexOfThisSubtask()) + "-" + std::to_string(sequence_++),
            std::move(open_)};
      open_.clear();
      std::lock_guard lock(ledger_->mutex);
      ledger_->prepared.insert(t.name);
      return {std::move(t)};
    }
    // Union state: every writer's uid, subtask and next sequence. What a restored writer
    // began past its position, and what writers that no checkpoint knows began (all of
    // them when the job starts afresh), is aborted by the subtask that owns their index,
    // unless it was committed. The restored positions it owns are carried into its own
    // checkpoints: their writers' committables may still be pending (retried), and must
    // stay covered after the next restore.
    void initializeState(FunctionInitializationContext& context) override {
      state_ = &context.getOperatorStateStore().getUnionListState(ListStateDescriptor<std::string>("positions"));
      const int p = context_.getNumberOfParallelSubtasks(), i = context_.getIndexOfThisSubtask();
      std::map<std::string, int64_t> covered;
      for (const auto& position : state_->get()) {
        Name n = parse(position);
        covered[n.uid] = n.sequence;
        if (n.subtask % p == i) carried_.push_back(position);
      }
      std::lock_guard lock(ledger_->mutex);
      for (const auto& name : ledger_->prepared) {
        Name n = parse(name);
        if (n.subtask % p != i || n.uid == uid_ || ledger_->committed.count(name)) continue;
        auto it = covered.find(n.uid);
        if (it != covered.end() && n.sequence < it->second) continue;
        ledger_->aborted.insert(name);
      }
    }
    void snapshotState(const FunctionSnapshotContext&) override {
      std::vector<std::string> positions = carried_;
      positions.push_back(uid_ + "-" + std::to_string(context_.getIndexOfThisSubtask()) + "-" + std::to_string(sequence_));
      state_->update(std::move(positions));
    }

   private:
    std::shared_ptr<Ledger> ledger_;
    RuntimeContext& context_;
    std::string uid_;
    int64_t sequence_ = 0;
    std::vector<int64_t> open_;
    std::vector<std::string> carried_;  // restored positions this subtask owns
    ListState<std::string>* state_ = nullptr;
  };

  class LedgerCommitter final : public Committer<Txn> {
   public:
    LedgerCommitter(std::shared_ptr<Ledger> ledger, int subtask) : ledger_(std::move(ledger)), subtask_(subtask) {}
    void commit(std::vector<CommitRequest<Txn>>& requests) override {
      std::lock_guard lock(ledger_->mutex);
      if (!requests.empty()) ++ledger_->commitCalls;
      for (auto& r : requests) {
        const Txn& t = r.getCommittable();
        ledger_->triedBy[t.name].insert(subtask_);
        if (ledger_->aborted.count(t.name)) {
          ADD_FAILURE() << "committing " << t.name << ", which was aborted";
        } else if (ledger_->hold) {
          r.retryLater();
        } else if (ledger_->failKnown) {
          r.signalFailedWithKnownReason("the ledger refuses " + t.name);
        } else if (ledger_->failUnknown) {
          r.signalFailedWithUnknownReason("the ledger is on fire");
        } else if (ledger_->committed.count(t.name)) {
          ++ledger_->repeats;
          r.signalAlreadyCommitted();
        } else {
          ledger_->committed[t.name] = t.records;
        }
      }
    }

   private:
    std::shared_ptr<Ledger> ledger_;
    int subtask_;
  };

  std::shared_ptr<Ledger> ledger_;
};

std::vector<int64_t> upTo(int64_t n) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

struct ThrowAtFailures {
  int64_t operator()(const int64_t& v) const {
    Failures::maybeThrow();
    return v;
  }
};

// Numbers 0..n-1 at `rate` a second, through a map that throws where Failures says,
// into the ledger. The source runs at the job's parallelism: resumed at another, it
// goes on with the ranges its first run split, so every number is read once.
void addNumbers(StreamExecutionEnvironment& env, int64_t n, double rate, std::shared_ptr<Ledger> ledger) {
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n, RateLimiterStrategy::perSecond(rate)),
                 WatermarkStrategy<int64_t>::noWatermarks(), "numbers")
      .rebalance()
      .map(ThrowAtFailures{})
      .sinkTo(LedgerSink(std::move(ledger)));
}

void checkpointEvery20ms(StreamExecutionEnvironment& env, const fs::path& dir, int parallelism) {
  env.setParallelism(parallelism);
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage(dir.string());
  env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
}

// Every transaction a writer prepared ended committed or aborted, never both.
void expectEveryTransactionEnded(Ledger& ledger) {
  std::lock_guard lock(ledger.mutex);
  for (const auto& name : ledger.prepared) {
    bool committed = ledger.committed.count(name) > 0, aborted = ledger.aborted.count(name) > 0;
    EXPECT_TRUE(committed != aborted) << name << (committed ? " committed and aborted" : " neither committed nor aborted");
  }
}

TEST(TwoPhaseCommit, EveryRecordIsCommittedOnceThroughFailures) {
  constexpr int64_t kRecords = 20000;
  fs::path dir = freshFolder("2pc-failures");
  auto ledger = std::make_shared<Ledger>();
  Failures::reset({1500, 6000, 9500, 14000, 17500});
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir, 2);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(10, 0ms));
  addNumbers(env, kRecords, 20000, ledger);
  EXPECT_EQ(env.execute("failures").status, JobStatus::FINISHED);
  EXPECT_EQ(Failures::thrown, 5);
  EXPECT_EQ(ledger->committedRecords(), upTo(kRecords));
  expectEveryTransactionEnded(*ledger);
  fs::remove_all(dir);
}

// Waits up to 30 s for `done` (under the ledger's lock).
bool eventually(Ledger& ledger, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    {
      std::lock_guard lock(ledger.mutex);
      if (done()) return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
}

// The committer holds every commit (retry later) while the job runs at parallelism 2,
// then 3: the committables pile up in the checkpoints, are split among the 3 subtasks,
// and are committed, once each, when the job finishes at parallelism 1.
TEST(TwoPhaseCommit, CommittablesRescaleWithTheJobTwoToThreeToOne) {
  constexpr int64_t kRecords = 12000;
  fs::path dir = freshFolder("2pc-rescale");
  Failures::reset({});
  auto ledger = std::make_shared<Ledger>();
  ledger->hold = true;
  std::set<std::string> preparedAtTwo;
  for (int parallelism : {2, 3}) {
    StreamExecutionEnvironment env;
    checkpointEvery20ms(env, dir, parallelism);
    env.setRestartStrategy(RestartStrategy::noRestart());
    if (parallelism == 3) env.setRestorePath(checkpoint::findLatestCheckpoint(dir.string()));
    addNumbers(env, kRecords, 4000, ledger);
    int64_t callsBefore = ledger->commitCalls;
    auto job = env.executeAsync("held");
    EXPECT_TRUE(eventually(*ledger, [&] { return ledger->commitCalls >= callsBefore + 6; }));
    job.cancel();
    try {
      job.wait();
    } catch (const JobExecutionError&) {
    }
    std::lock_guard lock(ledger->mutex);
    EXPECT_TRUE(ledger->committed.empty());
    if (parallelism == 2) preparedAtTwo = ledger->prepared;
  }
  // At parallelism 3, subtask 2 (which p = 2 did not have) got some of the restored
  // committables.
  bool third = false;
  for (const auto& name : preparedAtTwo) third = third || ledger->triedBy[name].count(2) > 0;
  EXPECT_TRUE(third) << "the committables of p = 2 were not split among the 3 subtasks";

  ledger->hold = false;
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir, 1);
  env.setRestartStrategy(RestartStrategy::noRestart());
  env.setRestorePath(checkpoint::findLatestCheckpoint(dir.string()));
  addNumbers(env, kRecords, 1e6, ledger);
  EXPECT_EQ(env.execute("released").status, JobStatus::FINISHED);
  EXPECT_EQ(ledger->committedRecords(), upTo(kRecords));
  EXPECT_EQ(ledger->repeats, 0);
  expectEveryTransactionEnded(*ledger);
  fs::remove_all(dir);
}

// A committable that cannot be committed for a known reason is dropped, and stderr says
// so; the job goes on. An unknown reason fails the job, naming it.
TEST(TwoPhaseCommit, KnownFailuresAreDroppedAndSaidUnknownOnesFailTheJob) {
  Failures::reset({});
  {
    auto ledger = std::make_shared<Ledger>();
    ledger->failKnown = true;
    StreamExecutionEnvironment env;
    env.setParallelism(1);
    addNumbers(env, 100, 1e6, ledger);
    testing::internal::CaptureStderr();
    EXPECT_EQ(env.execute("known").status, JobStatus::FINISHED);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("dropped a committable it cannot commit: the ledger refuses "), std::string::npos) << err;
    EXPECT_TRUE(ledger->committed.empty());
  }
  {
    auto ledger = std::make_shared<Ledger>();
    ledger->failUnknown = true;
    StreamExecutionEnvironment env;
    env.setParallelism(1).setRestartStrategy(RestartStrategy::noRestart());
    addNumbers(env, 100, 1e6, ledger);
    try {
      env.execute("unknown");
      ADD_FAILURE() << "the job finished";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot commit: the ledger is on fire"), std::string::npos) << e.what();
    }
  }
}

// A TwoPhaseCommittingSink must make a PrecommittingSinkWriter: the job says so.
struct NotPrecommitting final : TwoPhaseCommittingSink<int64_t, Txn> {
  struct Plain final : SinkWriter<int64_t> {
    void write(const int64_t&) override {}
  };
  std::unique_ptr<SinkWriter<int64_t>> createWriter(RuntimeContext&) const override { return std::make_unique<Plain>(); }
  std::unique_ptr<Committer<Txn>> createCommitter(RuntimeContext&) const override { return nullptr; }
};

TEST(TwoPhaseCommit, AWriterThatCannotPrecommitIsAClearError) {
  StreamExecutionEnvironment env;
  env.setRestartStrategy(RestartStrategy::noRestart());
  env.fromElements<int64_t>(1, 2).sinkTo(NotPrecommitting());
  try {
    env.execute();
    ADD_FAILURE() << "the job ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a PrecommittingSinkWriter<T, CommT>"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weir::test
