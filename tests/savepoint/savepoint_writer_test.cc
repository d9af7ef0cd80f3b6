// The State Processor API's writing side: a savepoint bootstrapped from a bounded
// stream, then resumed by a job that goes on from the state it holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <vector>

#include "support/error_of.h"
#include "support/fresh_folder.h"
#include "support/recovery_job.h"
#include "weir/savepoint_reader.h"
#include "weir/savepoint_writer.h"
#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using namespace weir::test;

struct Deposit {
  int64_t account = 0;
  int64_t amount = 0;
};
WEIR_STRUCT(Deposit, account, amount);

// What the resumed job emits: a balance after each deposit, or (kind 1) a bootstrapped
// timer firing.
struct Statement {
  int64_t account = 0;
  int64_t kind = 0;
  int64_t balance = 0;  // kind 0: the balance; kind 1: the timer's time
  int64_t deposits = 0;  // how many deposits the account has seen, bootstrapped ones included
};
WEIR_STRUCT(Statement, account, kind, balance, deposits);
bool operator<(const Statement& a, const Statement& b) {
  return std::tie(a.account, a.kind, a.balance, a.deposits) < std::tie(b.account, b.kind, b.balance, b.deposits);
}
bool operator==(const Statement& a, const Statement& b) { return !(a < b) && !(b < a); }

int64_t timerOf(int64_t account) { return 1000 + account; }

// Makes each account's state from its past deposits: the balance, the deposits in
// order, and a timer.
struct LoadAccounts : KeyedStateBootstrapFunction<int64_t, Deposit> {
  void open() override {
    balance_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("balance"));
    history_ = &getRuntimeContext().getListState(ListStateDescriptor<int64_t>("history"));
  }
  void processElement(const Deposit& d, Context& ctx) override {
    EXPECT_EQ(ctx.getCurrentKey(), d.account);
    balance_->update(balance_->value().value_or(0) + d.amount);
    history_->add(d.amount);
    ctx.timerService().registerEventTimeTimer(timerOf(d.account));
  }
  ValueState<int64_t>* balance_ = nullptr;
  ListState<int64_t>* history_ = nullptr;
};

// The job that resumes: the same states, going on with new deposits.
struct Accounts : KeyedProcessFunction<int64_t, Deposit, Statement> {
  void open() override {
    balance_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("balance"));
    history_ = &getRuntimeContext().getListState(ListStateDescriptor<int64_t>("history"));
  }
  void processElement(const Deposit& d, Context&, Collector<Statement>& out) override {
    int64_t balance = balance_->value().value_or(0) + d.amount;
    balance_->update(balance);
    history_->add(d.amount);
    out.collect({d.account, 0, balance, static_cast<int64_t>(history_->get().size())});
  }
  void onTimer(int64_t time, OnTimerContext& ctx, Collector<Statement>& out) override {
    out.collect({ctx.getCurrentKey(), 1, time, static_cast<int64_t>(history_->get().size())});
  }
  ValueState<int64_t>* balance_ = nullptr;
  ListState<int64_t>* history_ = nullptr;
};

std::vector<Deposit> deposits(int64_t n, int64_t accounts, int64_t seed) {
  std::vector<Deposit> out;
  for (int64_t i = 0; i < n; ++i) out.push_back({(i * 7 + seed) % accounts, (i * 13 + seed) % 100 + 1});
  return out;
}

// Bootstraps `past` into a savepoint (maxParallelism 64, p2, on `bootstrapBackend`),
// resumes a job on `resumeBackend` at p3 that processes `next`; returns its output.
std::vector<Statement> bootstrapThenResume(const fs::path& dir, const std::vector<Deposit>& past,
                                           const std::vector<Deposit>& next, const std::string& bootstrapBackend,
                                           const std::string& resumeBackend) {
  const std::string savepoint = (dir / ("bootstrapped-" + bootstrapBackend)).string();
  if (!fs::exists(fs::path(savepoint) / "_metadata")) {
    StreamExecutionEnvironment env;
    env.setParallelism(2);
    auto history = env.fromCollection(past);
    SavepointWriter::newSavepoint(env, backendNamed(bootstrapBackend), 64)
        .withOperator(OperatorIdentifier::forUid("accounts"),
                      OperatorTransformation::bootstrapWith(history)
                          .keyBy([](const Deposit& d) { return d.account; })
                          .transform(LoadAccounts{}))
        .write(savepoint);
    env.execute("bootstrap");
  }
  StreamExecutionEnvironment env;
  env.setParallelism(3).setStateBackend(backendNamed(resumeBackend));
  env.setSavepointRestoreSettings(SavepointRestoreSettings::forPath(savepoint));
  CollectSink<Statement> sink;
  env.fromCollection(next)
      .uid("deposits")
      .setParallelism(1)
      .keyBy([](const Deposit& d) { return d.account; })
      .process(Accounts{})
      .uid("accounts")
      .sinkTo(sink)
      .uid("statements");
  env.execute("resumed");
  std::vector<Statement> out = sink.getResults();
  std::sort(out.begin(), out.end());
  return out;
}

// The brute force: one pass over the past, then the new deposits in order; every
// account with a past has its timer fire at the end (the final watermark).
std::vector<Statement> expected(const std::vector<Deposit>& past, const std::vector<Deposit>& next) {
  std::map<int64_t, std::pair<int64_t, int64_t>> accounts;  // balance, deposits
  for (const Deposit& d : past) {
    accounts[d.account].first += d.amount;
    ++accounts[d.account].second;
  }
  std::set<int64_t> withTimers;
  for (const auto& [account, _] : accounts) withTimers.insert(account);
  std::vector<Statement> out;
  for (const Deposit& d : next) {
    auto& [balance, count] = accounts[d.account];
    balance += d.amount;
    ++count;
    out.push_back({d.account, 0, balance, count});
  }
  for (int64_t account : withTimers) out.push_back({account, 1, timerOf(account), accounts[account].second});
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SavepointWriter, ABootstrappedSavepointResumesOnEitherBackendAtAnotherParallelism) {
  fs::path dir = freshFolder("savepoint-writer");
  // 300 accounts have a past; the new deposits reach 400, so some start empty.
  const std::vector<Deposit> past = deposits(20000, 300, 1), next = deposits(5000, 400, 2);
  const std::vector<Statement> want = expected(past, next);
  for (std::string bootstrap : {"heap", "rocksdb"})
    for (std::string resume : {"heap", "rocksdb"}) {
      std::vector<Statement> got = bootstrapThenResume(dir, past, next, bootstrap, resume);
      ASSERT_EQ(got.size(), want.size()) << bootstrap << " -> " << resume;
      EXPECT_TRUE(got == want) << bootstrap << " -> " << resume;
    }
  fs::remove_all(dir);
}

// What a reader makes of a bootstrapped account.
struct Account {
  int64_t account = 0;
  int64_t balance = 0;
  std::vector<int64_t> history;
};
WEIR_STRUCT(Account, account, balance, history);

struct ReadAccounts : KeyedStateReaderFunction<int64_t, Account> {
  void open() override {
    balance_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("balance"));
    history_ = &getRuntimeContext().getListState(ListStateDescriptor<int64_t>("history"));
  }
  void readKey(const int64_t& key, Context&, Collector<Account>& out) override {
    out.collect({key, *balance_->value(), history_->get()});
  }
  ValueState<int64_t>* balance_ = nullptr;
  ListState<int64_t>* history_ = nullptr;
};

// Written by one operator instance per key group range, read back by the reader: each
// key's list holds its records in the order the bootstrap stream had them.
TEST(SavepointWriter, TheReaderReadsBackWhatTheWriterWrote) {
  fs::path dir = freshFolder("savepoint-writer-read");
  const std::vector<Deposit> past = deposits(3000, 50, 3);
  const std::string savepoint = (dir / "sp").string();
  {
    StreamExecutionEnvironment env;
    env.setParallelism(3);
    auto history = env.fromCollection(past);
    SavepointWriter::newSavepoint(env, 16)
        .withOperator(OperatorIdentifier::forUid("accounts"), OperatorTransformation::bootstrapWith(history)
                                                                  .keyBy([](const Deposit& d) { return d.account; })
                                                                  .transform(LoadAccounts{}))
        .write(savepoint);
    env.execute("bootstrap");
  }
  std::map<int64_t, Account> want;
  for (const Deposit& d : past) {
    Account& a = want[d.account];
    a.account = d.account;
    a.balance += d.amount;
    a.history.push_back(d.amount);
  }
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Account> sink;
  SavepointReader::read(env, savepoint).readKeyedState("accounts", ReadAccounts{}).sinkTo(sink);
  env.execute("read");
  std::vector<Account> got = sink.getResults();
  ASSERT_EQ(got.size(), want.size());
  for (const Account& a : got) {
    EXPECT_EQ(a.balance, want.at(a.account).balance) << a.account;
    EXPECT_EQ(a.history, want.at(a.account).history) << a.account;
  }
  fs::remove_all(dir);
}

// Operator state: each instance keeps the amounts it saw in a list state and their sum
// in a union list state.
struct LoadAmounts : StateBootstrapFunction<Deposit>, CheckpointedFunction {
  void initializeState(FunctionInitializationContext& ctx) override {
    amounts_ = &ctx.getOperatorStateStore().getListState(ListStateDescriptor<int64_t>("amounts"));
    totals_ = &ctx.getOperatorStateStore().getUnionListState(ListStateDescriptor<int64_t>("totals"));
  }
  void processElement(const Deposit& d, Context&) override {
    amounts_->add(d.amount);
    total_ += d.amount;
  }
  void snapshotState(const FunctionSnapshotContext&) override { totals_->update({total_}); }
  ListState<int64_t>* amounts_ = nullptr;
  ListState<int64_t>* totals_ = nullptr;
  int64_t total_ = 0;
};

// What an instance of the resumed job restored.
struct Restored {
  int subtask = 0;
  std::vector<int64_t> amounts;
  std::vector<int64_t> totals;
};
WEIR_STRUCT(Restored, subtask, amounts, totals);

struct ShowRestored : RichFlatMapFunction<int64_t, Restored>, CheckpointedFunction {
  void initializeState(FunctionInitializationContext& ctx) override {
    amounts_ = &ctx.getOperatorStateStore().getListState(ListStateDescriptor<int64_t>("amounts"));
    totals_ = &ctx.getOperatorStateStore().getUnionListState(ListStateDescriptor<int64_t>("totals"));
  }
  void snapshotState(const FunctionSnapshotContext&) override {}
  void flatMap(const int64_t&, Collector<Restored>& out) override {
    if (shown_) return;
    shown_ = true;
    out.collect({getRuntimeContext().getIndexOfThisSubtask(), amounts_->get(), totals_->get()});
  }
  ListState<int64_t>* amounts_ = nullptr;
  ListState<int64_t>* totals_ = nullptr;
  bool shown_ = false;
};

// List state is split evenly among the resumed instances (3, from 2 that wrote it), union
// list state goes whole to each: together they hold every amount, once.
TEST(SavepointWriter, OperatorStateIsSplitOrUnitedAsOnAnyRestore) {
  fs::path dir = freshFolder("savepoint-writer-operator");
  const std::vector<Deposit> past = deposits(1001, 10, 4);
  const std::string savepoint = (dir / "sp").string();
  {
    StreamExecutionEnvironment env;
    env.setParallelism(2);
    SavepointWriter::newSavepoint(env, 16)
        .withOperator(OperatorIdentifier::forUid("amounts"),
                      OperatorTransformation::bootstrapWith(env.fromCollection(past).rebalance()).transform(LoadAmounts{}))
        .write(savepoint);
    env.execute("bootstrap");
  }
  StreamExecutionEnvironment env;
  env.setParallelism(3);
  env.setSavepointRestoreSettings(SavepointRestoreSettings::forPath(savepoint));
  CollectSink<Restored> sink;
  std::vector<int64_t> ticks(30);
  env.fromCollection(ticks).uid("ticks").setParallelism(1).rebalance().flatMap(ShowRestored{}).uid("amounts").sinkTo(sink).uid("sink");
  env.execute("resumed");
  std::vector<Restored> got = sink.getResults();
  ASSERT_EQ(got.size(), 3u);
  std::vector<int64_t> all, want;
  for (const Deposit& d : past) want.push_back(d.amount);
  const int64_t total = std::accumulate(want.begin(), want.end(), int64_t{0});
  for (const Restored& r : got) {
    all.insert(all.end(), r.amounts.begin(), r.amounts.end());
    EXPECT_NEAR(static_cast<double>(r.amounts.size()), past.size() / 3.0, 1.0) << "subtask " << r.subtask;
    ASSERT_EQ(r.totals.size(), 2u) << "one per bootstrap instance";
    EXPECT_EQ(r.totals[0] + r.totals[1], total);
  }
  std::sort(all.begin(), all.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(all, want);
  fs::remove_all(dir);
}

TEST(SavepointWriter, RequestsThatCannotBeWrittenAreRefused) {
  fs::path dir = freshFolder("savepoint-writer-bad");
  StreamExecutionEnvironment env;
  auto history = env.fromCollection(deposits(10, 5, 0));
  auto accounts = [&] {
    return OperatorTransformation::bootstrapWith(history)
        .keyBy([](const Deposit& d) { return d.account; })
        .transform(LoadAccounts{});
  };
  EXPECT_NE(errorOf([&] { SavepointWriter::newSavepoint(env, 0); }).find("max parallelism 0 is not between 1 and"),
            std::string::npos);
  SavepointWriter writer = SavepointWriter::newSavepoint(env, 32);
  EXPECT_NE(errorOf([&] { SavepointWriter::newSavepoint(env, 64); })
                .find("the environment's max parallelism is 32, the savepoint's would be 64"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { writer.write((dir / "empty").string()); }).find("the savepoint has no operator"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { writer.withOperator(OperatorIdentifier::forUid("a/b"), accounts()); })
                .find("'a/b' cannot be a uid"),
            std::string::npos);
  writer.withOperator(OperatorIdentifier::forUid("accounts"), accounts());
  EXPECT_NE(errorOf([&] { writer.withOperator(OperatorIdentifier::forUid("accounts"), accounts()); })
                .find("operator 'accounts' is given twice"),
            std::string::npos);
  writer.write((dir / "sp").string());
  env.execute("bootstrap");
  ASSERT_TRUE(fs::exists(dir / "sp" / "_metadata"));
  // A folder that holds a savepoint is never written over.
  StreamExecutionEnvironment again;
  auto more = again.fromCollection(deposits(10, 5, 1));
  EXPECT_NE(errorOf([&] {
              SavepointWriter::newSavepoint(again, 32)
                  .withOperator(OperatorIdentifier::forUid("accounts"),
                                OperatorTransformation::bootstrapWith(more)
                                    .keyBy([](const Deposit& d) { return d.account; })
                                    .transform(LoadAccounts{}))
                  .write((dir / "sp").string());
            }).find("holds a savepoint already; weir never overwrites one"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
