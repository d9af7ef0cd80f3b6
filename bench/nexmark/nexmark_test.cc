// The Nexmark generator's rules and every query's output on a small stream, against a
// brute force over the same events written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "nexmark/generator.h"
#include "nexmark/queries.h"

namespace weir::nexmark {
namespace {

constexpr int64_t kEvents = 60'000;  // 6 s of event time at 10,000 events/s

GeneratorConfig smallConfig() {
  GeneratorConfig c;
  c.events = kEvents;
  return c;
}

std::vector<Event> allEvents(const GeneratorConfig& c) {
  std::vector<Event> events;
  for (int64_t m = 0; m < c.events; ++m) events.push_back(generateEvent(c, m));
  return events;
}

TEST(NexmarkGenerator, FollowsTheReferenceProportionsIdsAndSizes) {
  GeneratorConfig c = smallConfig();
  auto events = allEvents(c);
  int64_t people = 0, auctions = 0, bids = 0, delayed = 0, personBytes = 0, auctionBytes = 0, bidBytes = 0;
  int64_t hotAuctionBids = 0;
  std::set<int64_t> categories;
  for (int64_t m = 0; m < kEvents; ++m) {
    const Event& e = events[static_cast<size_t>(m)];
    int64_t onTime = c.baseTime + m / 10;
    if (e.dateTime() < onTime) ++delayed;
    EXPECT_GE(e.dateTime(), onTime - c.maxDelayMs);
    if (e.person) {
      ++people;
      EXPECT_EQ(m % 50, 0);
      EXPECT_EQ(e.person->id, 1000 + m / 50);
      personBytes += static_cast<int64_t>(8 + e.person->name.size() + e.person->emailAddress.size() + e.person->creditCard.size() +
                                          e.person->city.size() + e.person->state.size() + e.person->extra.size());
    } else if (e.auction) {
      ++auctions;
      EXPECT_GE(m % 50, 1);
      EXPECT_LE(m % 50, 3);
      EXPECT_EQ(e.auction->id, 1000 + 3 * (m / 50) + m % 50 - 1);
      EXPECT_GT(e.auction->expires, e.auction->dateTime);
      EXPECT_GE(e.auction->reserve, e.auction->initialBid);
      categories.insert(e.auction->category);
      auctionBytes += static_cast<int64_t>(8 + e.auction->itemName.size() + e.auction->description.size() + 40 +
                                           e.auction->extra.size());
    } else {
      ++bids;
      ASSERT_TRUE(e.bid);
      EXPECT_GE(e.bid->price, 100);
      EXPECT_LE(e.bid->price, 100'000'000);
      if ((e.bid->auction - 1000) % 100 == 0) ++hotAuctionBids;
      bidBytes += static_cast<int64_t>(32 + e.bid->extra.size());
    }
  }
  EXPECT_EQ(people * 50, kEvents);
  EXPECT_EQ(auctions * 50, 3 * kEvents);
  EXPECT_EQ(bids * 50, 46 * kEvents);
  EXPECT_EQ(categories, (std::set<int64_t>{10, 11, 12, 13, 14}));
  // About 10% delayed; half the bids on a hot auction (ratio 2), a few more by chance.
  EXPECT_NEAR(static_cast<double>(delayed) / kEvents, 0.1, 0.01);
  EXPECT_NEAR(static_cast<double>(hotAuctionBids) / static_cast<double>(bids), 0.5, 0.05);
  // Average sizes near the reference's 200 / 500 / 100 bytes.
  EXPECT_NEAR(static_cast<double>(personBytes) / static_cast<double>(people), 200, 20);
  EXPECT_NEAR(static_cast<double>(auctionBytes) / static_cast<double>(auctions), 500, 50);
  EXPECT_NEAR(static_cast<double>(bidBytes) / static_cast<double>(bids), 100, 10);
  // Deterministic for a seed, different for another.
  EXPECT_EQ(generateEvent(c, 12345), events[12345]);
  GeneratorConfig other = c;
  other.seed = 7;
  EXPECT_NE(generateEvent(other, 12345), events[12345]);
}

// In the order of their serialized bytes: any total order will do.
template <class T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end(), [](const T& a, const T& b) {
    DataOutput x, y;
    Serializer<T>::serialize(a, x);
    Serializer<T>::serialize(b, y);
    return x.data() < y.data();
  });
  return v;
}

template <class T, class Build>
std::vector<T> run(Build build, int parallelism) {
  GeneratorConfig c = smallConfig();
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  CollectSink<T> sink;
  build(env.fromSource(NexmarkSource(c), nexmarkWatermarks(c), "nexmark")).sinkTo(sink);
  env.execute("nexmark");
  return sorted(sink.getResults());
}

std::vector<Bid> allBids() {
  std::vector<Bid> out;
  for (const Event& e : allEvents(smallConfig()))
    if (e.bid) out.push_back(*e.bid);
  return out;
}

TEST(NexmarkQueries, StatelessQueriesMatchABruteForce) {
  std::vector<Bid> bids = allBids();
  std::vector<Q1Result> q1Expected;
  std::vector<Q2Result> q2Expected;
  std::vector<Q14Result> q14Expected;
  for (const Bid& b : bids) {
    q1Expected.push_back({b.auction, b.bidder, b.price * 0.908, b.dateTime, b.extra});
    if (b.auction % 123 == 0) q2Expected.push_back({b.auction, b.price});
    double euros = b.price * 0.908;
    if (euros > 1e6 && euros < 5e7) {
      int64_t hour = (b.dateTime / 3'600'000) % 24;
      std::string type = hour >= 8 && hour <= 18 ? "dayTime" : hour <= 6 || hour >= 20 ? "nightTime" : "otherTime";
      q14Expected.push_back({b.auction, b.bidder, euros, type, b.dateTime, b.extra,
                             static_cast<int64_t>(std::count(b.extra.begin(), b.extra.end(), 'c'))});
    }
  }
  ASSERT_FALSE(q2Expected.empty());
  ASSERT_FALSE(q14Expected.empty());
  EXPECT_EQ(run<Bid>([](auto e) { return q0(e); }, 2), sorted(bids));
  EXPECT_EQ(run<Q1Result>([](auto e) { return q1(e); }, 2), sorted(q1Expected));
  EXPECT_EQ(run<Q2Result>([](auto e) { return q2(e); }, 2), sorted(q2Expected));
  EXPECT_EQ(run<Q14Result>([](auto e) { return q14(e); }, 2), sorted(q14Expected));
}

TEST(NexmarkQueries, Q5HotItemsMatchABruteForce) {
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;  // (window end, auction) -> bids
  for (const Bid& b : allBids()) {
    int64_t lastStart = b.dateTime - b.dateTime % kQ5Slide;
    for (int64_t start = lastStart; start > b.dateTime - kQ5Size; start -= kQ5Slide) ++counts[{start + kQ5Size, b.auction}];
  }
  std::map<int64_t, int64_t> max;
  for (auto& [key, n] : counts) max[key.first] = std::max(max[key.first], n);
  std::vector<Q5Result> expected;
  for (auto& [key, n] : counts)
    if (n == max[key.first]) expected.push_back({key.second, n, key.first});
  for (int p : {1, 2}) EXPECT_EQ(run<Q5Result>([](auto e) { return q5(e); }, p), sorted(expected)) << "parallelism " << p;
}

TEST(NexmarkQueries, Q7HighestBidsMatchABruteForce) {
  std::map<int64_t, std::vector<Bid>> best;  // window end -> bids at the highest price
  for (const Bid& b : allBids()) {
    auto& v = best[b.dateTime - b.dateTime % kQ7Window + kQ7Window];
    if (!v.empty() && b.price > v[0].price) v.clear();
    if (v.empty() || b.price == v[0].price) v.push_back(b);
  }
  std::vector<Q7Result> expected;
  for (auto& [end, v] : best)
    for (const Bid& b : v) expected.push_back({b, end});
  EXPECT_EQ(run<Q7Result>([](auto e) { return q7(e); }, 2), sorted(expected));
}

TEST(NexmarkQueries, Q8NewUsersMatchABruteForce) {
  auto events = allEvents(smallConfig());
  std::set<std::pair<int64_t, int64_t>> sellers;  // (seller, window start)
  for (const Event& e : events)
    if (e.auction) sellers.insert({e.auction->seller, e.auction->dateTime - e.auction->dateTime % kQ8Window});
  std::vector<Q8Result> expected;
  for (const Event& e : events) {
    if (!e.person) continue;
    int64_t start = e.person->dateTime - e.person->dateTime % kQ8Window;
    if (sellers.count({e.person->id, start})) expected.push_back({e.person->id, e.person->name, start});
  }
  ASSERT_GT(expected.size(), 10u);  // hot sellers are recent people: many open an auction at once
  EXPECT_EQ(run<Q8Result>([](auto e) { return q8(e); }, 2), sorted(expected));
}

TEST(NexmarkQueries, Q11SessionsMatchABruteForce) {
  std::map<int64_t, std::vector<int64_t>> times;  // bidder -> bid times
  for (const Bid& b : allBids()) times[b.bidder].push_back(b.dateTime);
  std::vector<Q11Result> expected;
  for (auto& [bidder, ts] : times) {
    std::sort(ts.begin(), ts.end());
    size_t first = 0;
    for (size_t i = 1; i <= ts.size(); ++i) {
      if (i < ts.size() && ts[i] - ts[i - 1] <= kQ11Gap) continue;  // windows that touch merge
      expected.push_back({bidder, static_cast<int64_t>(i - first), ts[first], ts[i - 1] + kQ11Gap});
      first = i;
    }
  }
  EXPECT_EQ(run<Q11Result>([](auto e) { return q11(e); }, 2), sorted(expected));
}

}  // namespace
}  // namespace weir::nexmark

#include "nexmark/driver.h"

namespace weir::nexmark {
namespace {

TEST(NexmarkDriver, ValidatesItsOptions) {
  DriverOptions ok;
  EXPECT_EQ(validate(ok), "");
  DriverOptions bad = ok;
  bad.queries = {"q0", "q42"};
  EXPECT_NE(validate(bad).find("unknown query 'q42'"), std::string::npos);
  bad = ok;
  bad.events = -5;
  EXPECT_NE(validate(bad).find("--events must be positive"), std::string::npos);
  bad = ok;
  bad.parallelisms = {2, 129};
  EXPECT_NE(validate(bad).find("--parallelism must be from 1 to 128, got 129"), std::string::npos);
  bad = ok;
  bad.backends = {"memory"};
  EXPECT_NE(validate(bad).find("unknown state backend 'memory'"), std::string::npos);
}

}  // namespace
}  // namespace weir::nexmark
