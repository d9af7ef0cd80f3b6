// The Nexmark generator's rules and every query's output on a small stream, against a
// brute force over the same events written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "nexmark/generator.h"
#include "nexmark/java_random.h"
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

// java.util.Random's own values: new Random(0).nextInt() and new Random(42).nextInt(),
// and new Random(42)'s first five nextInt(10).
TEST(NexmarkGenerator, JavaRandomDrawsWhatJavaDraws) {
  EXPECT_EQ(JavaRandom(0).nextInt(), -1155484576);
  EXPECT_EQ(JavaRandom(42).nextInt(), -1170105035);
  JavaRandom r(42);
  std::vector<int32_t> firstFive;
  for (int i = 0; i < 5; ++i) firstFive.push_back(r.nextInt(10));
  EXPECT_EQ(firstFive, (std::vector<int32_t>{0, 3, 8, 4, 0}));
}

// nextLetter computes both of its states from one; it must draw the reference's letters,
// nextInt(13) == 0 ? special : 'a' + nextInt(26), and leave the generator in step.
TEST(NexmarkGenerator, JavaRandomLettersAreTheReferencesTwoDraws) {
  // The last two seeds hit the fallback: 186643064605892's first nextInt(13) draws
  // 2^31 - 1, which Java rejects (letters "nnj"); 81481411882043's first nextInt(26)
  // does (letters "h_n").
  for (int64_t seed : {int64_t{0}, int64_t{1}, int64_t{42}, int64_t{123'456'789}, int64_t{186'643'064'605'892},
                       int64_t{81'481'411'882'043}}) {
    JavaRandom fast(seed), slow(seed);
    for (int i = 0; i < 100'000; ++i) {
      char expected = slow.nextInt(13) == 0 ? '_' : static_cast<char>('a' + slow.nextInt(26));
      ASSERT_EQ(fast.nextLetter('_'), expected) << "seed " << seed << ", letter " << i;
    }
    EXPECT_EQ(fast.nextInt(), slow.nextInt());
  }
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
      EXPECT_TRUE(std::regex_match(e.person->creditCard, std::regex("[0-9]{4} [0-9]{4} [0-9]{4} [0-9]{4}"))) << e.person->creditCard;
      EXPECT_TRUE(std::regex_match(e.person->emailAddress, std::regex("([a-z]([a-z ]*[a-z])?)?@([a-z]([a-z ]*[a-z])?)?\\.com"))) << e.person->emailAddress;
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

// A bid's channel is one of four hot ones half the time, else channel-0 to 9999; a
// channel always has the same url, nine in ten with a channel_id; padding is letters.
TEST(NexmarkGenerator, BidsCarryAChannelItsUrlAndLetterPadding) {
  const std::regex urlShape(R"(https://www\.nexmark\.com/[a-z_]{3,4}/[a-z_]{3,4}/[a-z_]{3,4}/item\.htm\?query=1(&channel_id=[0-9]+)?)");
  const std::regex otherChannel("channel-[0-9]{1,4}");
  const std::set<std::string> hotChannels{"Google", "Facebook", "Baidu", "Apple"};
  std::map<std::string, std::string> urlOf;
  std::set<std::string> paddings;
  std::map<char, int64_t> letters;
  int64_t bids = 0, hot = 0, paddingLetters = 0;
  for (const Event& e : allEvents(smallConfig())) {
    if (!e.bid) continue;
    const Bid& b = *e.bid;
    ++bids;
    if (hotChannels.count(b.channel)) ++hot;
    else EXPECT_TRUE(std::regex_match(b.channel, otherChannel)) << b.channel;
    EXPECT_TRUE(std::regex_match(b.url, urlShape)) << b.url;
    EXPECT_EQ(urlOf.emplace(b.channel, b.url).first->second, b.url) << b.channel;
    paddings.insert(b.extra);
    for (char ch : b.extra) ++letters[ch];
    paddingLetters += static_cast<int64_t>(b.extra.size());
  }
  EXPECT_NEAR(static_cast<double>(hot) / static_cast<double>(bids), 0.5, 0.02);
  ASSERT_GT(urlOf.size(), 5000u);
  auto withId = std::count_if(urlOf.begin(), urlOf.end(), [](const auto& u) { return u.second.find("&channel_id=") != std::string::npos; });
  EXPECT_NEAR(static_cast<double>(withId) / static_cast<double>(urlOf.size()), 0.9, 0.03);
  // Paddings differ from bid to bid, and each letter is about 1/26 of them.
  EXPECT_GT(paddings.size(), static_cast<size_t>(bids) * 9 / 10);
  ASSERT_EQ(letters.size(), 26u);
  for (auto [letter, n] : letters) {
    EXPECT_GE(letter, 'a');
    EXPECT_LE(letter, 'z');
    EXPECT_NEAR(static_cast<double>(n) * 26 / static_cast<double>(paddingLetters), 1.0, 0.05) << letter;
  }
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

// The query's output on the small stream, in arrival order (a key's records come from
// one subtask, in order), or sorted. In BATCH (docs/batch.md) the same query must give
// what the brute force gives too (for updating queries, the last row per key).
template <class T, class Build>
std::vector<T> runUnsorted(Build build, int parallelism, const GeneratorConfig& c = smallConfig(),
                           RuntimeExecutionMode mode = RuntimeExecutionMode::STREAMING) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism).setRuntimeMode(mode);
  CollectSink<T> sink;
  build(env.fromSource(NexmarkSource(c), nexmarkWatermarks(c), "nexmark")).sinkTo(sink);
  env.execute("nexmark");
  return sink.getResults();
}
template <class T, class Build>
std::vector<T> run(Build build, int parallelism, const GeneratorConfig& c = smallConfig(),
                   RuntimeExecutionMode mode = RuntimeExecutionMode::STREAMING) {
  return sorted(runUnsorted<T>(build, parallelism, c, mode));
}
constexpr RuntimeExecutionMode kBatch = RuntimeExecutionMode::BATCH;

std::vector<Bid> allBids(const GeneratorConfig& c = smallConfig()) {
  std::vector<Bid> out;
  for (const Event& e : allEvents(c))
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

  // q1 and then q0 on one stream of events: q1 reads the shared batch (its const path,
  // copying each bid), and q0, the last reader, moves out of it.
  GeneratorConfig c = smallConfig();
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Q1Result> q1Sink;
  CollectSink<Bid> q0Sink;
  auto events = env.fromSource(NexmarkSource(c), nexmarkWatermarks(c), "nexmark");
  q1(events).sinkTo(q1Sink);
  q0(events).sinkTo(q0Sink);
  env.execute("q1 and q0");
  EXPECT_EQ(sorted(q1Sink.getResults()), sorted(q1Expected));
  EXPECT_EQ(sorted(q0Sink.getResults()), sorted(bids));
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
  EXPECT_EQ(run<Q5Result>([](auto e) { return q5(e); }, 2, smallConfig(), kBatch), sorted(expected)) << "batch";
}

// q7 by its SQL: B1 holds each 10 s tumbling window's MAX(price) with its window_end; a
// bid joins every B1 row with its price whose [window_end - 10 s, window_end] holds its
// dateTime, both ends included. Rows: (window end, bid), dateTime >= 0.
std::vector<Q7Result> q7BySql(const std::vector<Bid>& bids) {
  std::map<int64_t, int64_t> maxPrice;  // window_end -> MAX(price)
  for (const Bid& b : bids) {
    auto [it, fresh] = maxPrice.try_emplace(b.dateTime - b.dateTime % kQ7Window + kQ7Window, b.price);
    it->second = std::max(it->second, b.price);
  }
  std::vector<Q7Result> rows;
  for (const Bid& b : bids)
    for (auto [end, price] : maxPrice)
      if (b.price == price && end - kQ7Window <= b.dateTime && b.dateTime <= end) rows.push_back({b, end});
  return rows;
}

// 25 s of events: three windows and one before them (of the first events, delayed), so
// three window ends that the last stage joins across.
TEST(NexmarkQueries, Q7HighestBidsMatchABruteForce) {
  GeneratorConfig c = smallConfig();
  c.events = 250'000;
  auto expected = q7BySql(allBids(c));
  std::set<int64_t> windows;
  for (const Q7Result& r : expected) windows.insert(r.windowEnd);
  ASSERT_EQ(windows.size(), 4u);
  EXPECT_EQ(run<Q7Result>([](auto e) { return q7(e); }, 2, c), sorted(expected));
  EXPECT_EQ(run<Q7Result>([](auto e) { return q7(e); }, 2, c, kBatch), sorted(expected)) << "batch";
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
  EXPECT_EQ(run<Q8Result>([](auto e) { return q8(e); }, 2, smallConfig(), kBatch), sorted(expected)) << "batch";
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
  EXPECT_EQ(run<Q11Result>([](auto e) { return q11(e); }, 2, smallConfig(), kBatch), sorted(expected)) << "batch";
}

// q12 with the job's clock held still while every bid arrives, then moved past the end
// of the window: one window per bidder, with all its bids. A union with an unbounded,
// empty stream keeps the job running when the clock moves (when a bounded input ends,
// windows still open do not fire).
TEST(NexmarkQueries, Q12ProcessingTimeWindowsMatchABruteForce) {
  std::vector<Bid> all = allBids();
  std::map<int64_t, int64_t> perBidder;
  for (const Bid& b : all) ++perBidder[b.bidder];
  std::vector<Q12Result> expected;
  for (auto [bidder, n] : perBidder) expected.push_back({bidder, n, 0, kQ12Window});

  GeneratorConfig c = smallConfig();
  auto clock = std::make_shared<ManualClock>(0);
  StreamExecutionEnvironment env;
  env.setParallelism(2).setClock(clock);
  CollectSink<Q12Result> sink;
  auto idle = env.fromSource(DataGeneratorSource([](int64_t) { return Event{}; }, kUnboundedCount,
                                                 RateLimiterStrategy::perSecond(10)),
                             WatermarkStrategy<Event>::noWatermarks(), "kept open");
  q12(env.fromSource(NexmarkSource(c), nexmarkWatermarks(c), "nexmark").unionWith(idle)).sinkTo(sink);
  auto client = env.executeAsync("q12");
  auto waitFor = [&](const std::function<bool()>& done, const char* what) {
    for (int i = 0; i < 30'000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(done()) << "timed out waiting for " << what;
  };
  auto windowRecordsIn = [&] {
    uint64_t n = 0;
    for (const auto& v : client.getMetrics().vertices)
      if (v.name.find("q12 Windows") != std::string::npos) n += v.numRecordsIn;
    return n;
  };
  waitFor([&] { return windowRecordsIn() == all.size(); }, "every bid at the window operator");
  EXPECT_TRUE(sink.getResults().empty()) << "a window fired before the clock passed its end";
  clock->setTime(kQ12Window);
  waitFor([&] { return sink.getResults().size() >= expected.size(); }, "the windows");
  client.cancel();
  client.wait();
  EXPECT_EQ(sorted(sink.getResults()), sorted(expected));
}

// The last record per key, in arrival order.
template <class T, class Key>
std::map<Key, T> lastPerKey(const std::vector<T>& records, std::function<Key(const T&)> key) {
  std::map<Key, T> last;
  for (const T& r : records) last.insert_or_assign(key(r), r);
  return last;
}

TEST(NexmarkQueries, Q3LocalItemSuggestionMatchesABruteForce) {
  auto events = allEvents(smallConfig());
  std::map<int64_t, Person> people;
  for (const Event& e : events)
    if (e.person) people[e.person->id] = *e.person;
  std::vector<Q3Result> expected;
  for (const Event& e : events) {
    if (!e.auction || e.auction->category != 10) continue;
    auto p = people.find(e.auction->seller);
    if (p != people.end() && (p->second.state == "OR" || p->second.state == "ID" || p->second.state == "CA"))
      expected.push_back({p->second.name, p->second.city, p->second.state, e.auction->id});
  }
  ASSERT_GT(expected.size(), 20u);
  EXPECT_EQ(run<Q3Result>([](auto e) { return q3(e); }, 2), sorted(expected));
  EXPECT_EQ(run<Q3Result>([](auto e) { return q3(e); }, 2, smallConfig(), kBatch), sorted(expected)) << "batch";
}

// The winning bid of each auction by the brute force: (auction, price, bid time).
std::map<int64_t, std::pair<Auction, Bid>> winners(const std::vector<Event>& events) {
  std::map<int64_t, Auction> open;
  for (const Event& e : events)
    if (e.auction) open[e.auction->id] = *e.auction;
  std::map<int64_t, std::pair<Auction, Bid>> best;
  for (const Event& e : events) {
    if (!e.bid) continue;
    auto a = open.find(e.bid->auction);
    if (a == open.end() || e.bid->dateTime < a->second.dateTime || e.bid->dateTime > a->second.expires) continue;
    auto [it, fresh] = best.try_emplace(a->first, a->second, *e.bid);
    const Bid& held = it->second.second;
    if (!fresh && (e.bid->price > held.price || (e.bid->price == held.price && e.bid->dateTime < held.dateTime)))
      it->second.second = *e.bid;
  }
  return best;
}

TEST(NexmarkQueries, Q9WinningBidsAndQ4AveragesMatchABruteForce) {
  auto best = winners(allEvents(smallConfig()));
  ASSERT_GT(best.size(), 100u);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> expected;  // auction, price, bid time
  std::map<int64_t, std::pair<int64_t, int64_t>> sums;          // category -> (sum, count)
  for (auto& [id, w] : best) {
    expected.push_back({id, w.second.price, w.second.dateTime});
    sums[w.first.category].first += w.second.price;
    ++sums[w.first.category].second;
  }
  for (RuntimeExecutionMode mode : {RuntimeExecutionMode::STREAMING, kBatch}) {
    SCOPED_TRACE(mode == kBatch ? "batch" : "streaming");
    std::vector<std::tuple<int64_t, int64_t, int64_t>> got;
    for (const AuctionBid& w : runUnsorted<AuctionBid>([](auto e) { return q9(e); }, 2, smallConfig(), mode)) {
      EXPECT_EQ(w.auction.id, w.bid.auction);
      got.push_back({w.auction.id, w.bid.price, w.bid.dateTime});
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, expected);

    auto averages = lastPerKey<Q4Result, int64_t>(runUnsorted<Q4Result>([](auto e) { return q4(e); }, 2, smallConfig(), mode),
                                                  [](const Q4Result& r) { return r.category; });
    ASSERT_EQ(averages.size(), sums.size());
    for (auto& [category, sc] : sums)
      EXPECT_EQ(averages[category].average, sc.first / sc.second) << category;  // AVG(BIGINT) truncates
  }
}

TEST(NexmarkQueries, Q17DailyStatsEndAtABruteForcesTotals) {
  std::map<std::pair<int64_t, std::string>, Q17Result> expected;
  for (const Bid& b : allBids()) {
    auto key = std::pair<int64_t, std::string>{b.auction, dayOf(b.dateTime)};
    auto [it, fresh] = expected.try_emplace(key, Q17Result{b.auction, key.second, 0, 0, 0, 0, b.price, b.price, 0, 0});
    Q17Result& r = it->second;
    ++r.totalBids;
    (b.price < 10'000 ? r.rank1Bids : b.price < 1'000'000 ? r.rank2Bids : r.rank3Bids) += 1;
    r.minPrice = std::min(r.minPrice, b.price);
    r.maxPrice = std::max(r.maxPrice, b.price);
    r.sumPrice += b.price;
    r.avgPrice = r.sumPrice / r.totalBids;  // AVG(BIGINT) truncates
  }
  EXPECT_EQ(dayOf(1'436'918'400'000), "2015-07-15");
  auto got = lastPerKey<Q17Result, std::pair<int64_t, std::string>>(
      runUnsorted<Q17Result>([](auto e) { return q17(e); }, 2),
      [](const Q17Result& r) { return std::pair<int64_t, std::string>{r.auction, r.day}; });
  EXPECT_EQ(got, expected);
}

// DATE_FORMAT(dateTime, 'HH:mm'), UTC.
std::string hourMinuteOf(int64_t dateTime) {
  using namespace std::chrono;
  sys_time<milliseconds> t{milliseconds(dateTime)};
  hh_mm_ss<milliseconds> time(t - floor<days>(t));
  char text[8];
  std::snprintf(text, sizeof text, "%02d:%02d", static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()));
  return text;
}

// 100 events a second, so that the 60,000 events span ten minutes (and the first ones,
// delayed, the day before).
TEST(NexmarkQueries, Q15AndQ16DistinctCountsEndAtABruteForcesTotals) {
  GeneratorConfig c = smallConfig();
  c.eventRate = 100;
  // Per key: the bids, and the sets of bidders and auctions, in total and per band; for
  // q16 the latest minute.
  struct Sets {
    int64_t bids[4] = {0, 0, 0, 0};
    std::set<int64_t> bidders[4], auctions[4];
    std::string minute;
  };
  std::map<std::pair<std::string, std::string>, Sets> perChannel, perDay;  // (channel or "", day)
  for (const Bid& b : allBids(c)) {
    int band = b.price < 10'000 ? 1 : b.price < 1'000'000 ? 2 : 3;
    for (Sets* s : {&perChannel[{b.channel, dayOf(b.dateTime)}], &perDay[{"", dayOf(b.dateTime)}]}) {
      for (int i : {0, band}) {
        ++s->bids[i];
        s->bidders[i].insert(b.bidder);
        s->auctions[i].insert(b.auction);
      }
      s->minute = std::max(s->minute, hourMinuteOf(b.dateTime));
    }
  }
  auto n = [](const std::set<int64_t>& v) { return static_cast<int64_t>(v.size()); };
  std::map<std::string, Q15Result> days;
  for (auto& [key, s] : perDay)
    days[key.second] = {key.second, s.bids[0], s.bids[1], s.bids[2], s.bids[3],
                        n(s.bidders[0]), n(s.bidders[1]), n(s.bidders[2]), n(s.bidders[3]),
                        n(s.auctions[0]), n(s.auctions[1]), n(s.auctions[2]), n(s.auctions[3])};
  std::map<std::pair<std::string, std::string>, Q16Result> channels;
  std::set<std::string> minutes;
  for (auto& [key, s] : perChannel) {
    channels[key] = {key.first, key.second, s.minute, s.bids[0], s.bids[1], s.bids[2], s.bids[3],
                     n(s.bidders[0]), n(s.bidders[1]), n(s.bidders[2]), n(s.bidders[3]),
                     n(s.auctions[0]), n(s.auctions[1]), n(s.auctions[2]), n(s.auctions[3])};
    minutes.insert(s.minute);
  }
  ASSERT_EQ(days.size(), 2u);  // 2015-07-14 (delayed first events) and 2015-07-15
  EXPECT_EQ((lastPerKey<Q15Result, std::string>(runUnsorted<Q15Result>([](auto e) { return q15(e); }, 2, c),
                                                [](const Q15Result& r) { return r.day; })),
            days);
  ASSERT_GT(channels.size(), 1000u);
  ASSERT_GE(minutes.size(), 10u);
  EXPECT_EQ((lastPerKey<Q16Result, std::pair<std::string, std::string>>(
                runUnsorted<Q16Result>([](auto e) { return q16(e); }, 2, c),
                [](const Q16Result& r) { return std::pair<std::string, std::string>{r.channel, r.day}; })),
            channels);
}

TEST(NexmarkQueries, Q18LastBidsAndQ19TopTenMatchABruteForce) {
  auto bids = allBids();
  std::map<std::pair<int64_t, int64_t>, int64_t> latest;  // (bidder, auction) -> latest bid time
  std::map<int64_t, std::vector<int64_t>> prices;         // auction -> every price
  for (const Bid& b : bids) {
    auto [it, fresh] = latest.try_emplace({b.bidder, b.auction}, b.dateTime);
    it->second = std::max(it->second, b.dateTime);
    prices[b.auction].push_back(b.price);
  }
  auto last = lastPerKey<Bid, std::pair<int64_t, int64_t>>(runUnsorted<Bid>([](auto e) { return q18(e); }, 2),
                                                            [](const Bid& b) { return std::pair{b.bidder, b.auction}; });
  std::map<std::pair<int64_t, int64_t>, int64_t> gotLatest;
  for (auto& [key, b] : last) gotLatest[key] = b.dateTime;
  EXPECT_EQ(gotLatest, latest);

  // Every bid that was ever among its auction's ten highest was emitted, so the ten
  // highest emitted prices are the ten highest prices.
  std::map<int64_t, std::vector<int64_t>> emitted;
  for (const Bid& b : runUnsorted<Bid>([](auto e) { return q19(e); }, 2)) emitted[b.auction].push_back(b.price);
  ASSERT_EQ(emitted.size(), prices.size());
  for (auto& [auction, all] : prices) {
    auto topTen = [](std::vector<int64_t> v) {
      std::sort(v.rbegin(), v.rend());
      v.resize(std::min<size_t>(v.size(), 10));
      return v;
    };
    EXPECT_EQ(topTen(emitted[auction]), topTen(all)) << auction;
  }
}

TEST(NexmarkQueries, Q20JoinsBidsWithCategory10AuctionsLikeABruteForce) {
  auto events = allEvents(smallConfig());
  std::map<int64_t, Auction> auctions;
  for (const Event& e : events)
    if (e.auction) auctions[e.auction->id] = *e.auction;
  std::vector<AuctionBid> expected;
  for (const Event& e : events) {
    if (!e.bid) continue;
    auto a = auctions.find(e.bid->auction);
    if (a != auctions.end() && a->second.category == 10) expected.push_back({a->second, *e.bid});
  }
  ASSERT_GT(expected.size(), 1000u);
  EXPECT_EQ(run<AuctionBid>([](auto e) { return q20(e); }, 2), sorted(expected));
}

TEST(NexmarkQueries, Q21AndQ22ParseUrlsLikeARegexAndASplit) {
  std::vector<Q21Result> q21Expected;
  std::vector<Q22Result> q22Expected;
  const std::regex channelId("(&|^)channel_id=([^&]*)");
  const std::map<std::string, std::string> known{{"Apple", "0"}, {"Google", "1"}, {"Facebook", "2"}, {"Baidu", "3"}};
  for (const Bid& b : allBids()) {
    std::smatch m;
    if (auto k = known.find(b.channel); k != known.end()) q21Expected.push_back({b.auction, b.bidder, b.price, b.channel, k->second});
    else if (std::regex_search(b.url, m, channelId)) q21Expected.push_back({b.auction, b.bidder, b.price, b.channel, m[2]});
    // SPLIT_INDEX: every part between slashes, empty ones too (none for an empty url);
    // NULL past the last.
    std::vector<std::string> parts;
    if (!b.url.empty()) {
      parts.emplace_back();
      for (char ch : b.url) {
        if (ch == '/') parts.emplace_back();
        else parts.back() += ch;
      }
    }
    auto at = [&](size_t i) { return i < parts.size() ? std::optional<std::string>(parts[i]) : std::nullopt; };
    q22Expected.push_back({b.auction, b.bidder, b.price, b.channel, at(3), at(4), at(5)});
  }
  ASSERT_GT(q21Expected.size(), 1000u);
  EXPECT_EQ(run<Q21Result>([](auto e) { return q21(e); }, 2), sorted(q21Expected));
  EXPECT_EQ(run<Q22Result>([](auto e) { return q22(e); }, 2), sorted(q22Expected));
}

// ---- Hand-made streams: each SQL rule at its edges, against rows worked out from the
// SQL text (bench/nexmark/README.md quotes the rules). ----

std::string sqlRow(const auto& row);

// A column's value as SQL shows it: a number, a quoted string, NULL; a nested struct (q7's
// bid) in braces.
template <class V>
std::string sqlValue(const V& v) {
  if constexpr (std::is_same_v<V, std::string>) {
    return "'" + v + "'";
  } else if constexpr (requires { v.has_value(); }) {
    return v.has_value() ? sqlValue(*v) : "NULL";
  } else if constexpr (std::is_floating_point_v<V>) {
    std::ostringstream s;
    s << std::setprecision(17) << v;
    return s.str();
  } else if constexpr (std::is_arithmetic_v<V>) {
    return std::to_string(v);
  } else {
    return "{" + sqlRow(v) + "}";
  }
}

// A result record as a row: its columns in order, "name=value, name=value, ...".
std::string sqlRow(const auto& row) {
  std::string out;
  detail::forEachField(row, [&](std::string_view name, const auto& value) {
    out += (out.empty() ? "" : ", ") + std::string(name) + "=" + sqlValue(value);
  });
  return out;
}

template <class T>
std::vector<std::string> sqlRows(const std::vector<T>& records) {
  std::vector<std::string> rows;
  for (const T& r : records) rows.push_back(sqlRow(r));
  return rows;
}

Event bidAt(int64_t auction, int64_t price, int64_t dateTime, std::string channel = "Google", int64_t bidder = 1,
            std::string url = "") {
  Event e;
  e.bid = Bid{auction, bidder, price, std::move(channel), std::move(url), dateTime, ""};
  return e;
}
Event auctionAt(int64_t id, int64_t category, int64_t start, int64_t expires) {
  Event e;
  e.auction = Auction{id, "item", "", 1, 1, start, expires, 1000, category, ""};
  return e;
}

template <class S>
struct RecordOf;
template <class T>
struct RecordOf<DataStream<T>> {
  using type = T;
};

// The query's output on `events` (in this order, with their dateTime as event time and
// up to 3 s out of order), in arrival order: with parallelism 1, the order emitted.
template <class Build, class T = typename RecordOf<std::invoke_result_t<Build&, DataStream<Event>>>::type>
std::vector<T> runOn(std::vector<Event> events, Build build, int parallelism = 1) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  CollectSink<T> sink;
  auto strategy = WatermarkStrategy<Event>::forBoundedOutOfOrderness(std::chrono::milliseconds(3'000))
                      .withTimestampAssigner([](const Event& e) { return e.dateTime(); });
  build(env.fromCollection(std::move(events)).assignTimestampsAndWatermarks(strategy)).sinkTo(sink);
  env.execute("hand-made");
  return sink.getResults();
}

// (window end, auction, price, dateTime) of each row, sorted.
std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> q7Rows(const std::vector<Q7Result>& results) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> rows;
  for (const Q7Result& r : results) rows.push_back({r.windowEnd, r.bid.auction, r.bid.price, r.bid.dateTime});
  std::sort(rows.begin(), rows.end());
  return rows;
}

// A bid at exactly a window's end (the next window's first millisecond) at that window's
// highest price belongs to its result too, and still counts in its own window.
TEST(NexmarkHandMade, Q7KeepsABidAtExactlyTheWindowEndAtItsHighestPrice) {
  std::vector<Event> events{
      bidAt(1, 100, 1'000),
      bidAt(2, 300, 5'000),
      bidAt(4, 300, 10'000),  // [0 s, 10 s]'s highest price, at its end: in its result
      bidAt(3, 300, 9'999),   // arrives after it, out of order
      bidAt(5, 200, 10'000),  // at the end, another price: not in [0 s, 10 s)'s result
      bidAt(9, 300, 10'001),  // the highest price, 1 ms past the end: not in it
      bidAt(1, 500, 15'000),
      bidAt(6, 500, 20'000),  // [10 s, 20 s)'s highest, at its end; and [20 s, 30 s)'s own highest
      bidAt(7, 500, 25'000),
      bidAt(8, 500, 30'000),  // [20 s, 30 s)'s highest at its end, and the only bid of [30 s, 40 s)
      bidAt(11, 900, 40'000), // above [30 s, 40 s)'s highest: only in its own window
      bidAt(10, 700, 60'000), // [50 s, 60 s) has no bids, so no highest price to join
  };
  const std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> expected{
      {10'000, 2, 300, 5'000},  {10'000, 3, 300, 9'999},  {10'000, 4, 300, 10'000},
      {20'000, 1, 500, 15'000}, {20'000, 6, 500, 20'000},
      {30'000, 6, 500, 20'000}, {30'000, 7, 500, 25'000}, {30'000, 8, 500, 30'000},
      {40'000, 8, 500, 30'000},
      {50'000, 11, 900, 40'000},
      {70'000, 10, 700, 60'000},
  };
  std::vector<Bid> bids;
  for (const Event& e : events) bids.push_back(*e.bid);
  ASSERT_EQ(q7Rows(q7BySql(bids)), expected);  // the brute force reads the SQL the same way
  for (int p : {1, 2}) EXPECT_EQ(q7Rows(runOn(events, [](auto e) { return q7(e); }, p)), expected) << "p " << p;
}

// Fails once, in a map before q7, after a checkpoint taken while q7's last stage held a
// window's result (waiting for the next window's first-millisecond bids) has completed.
struct FailWhileQ7Holds : RichMapFunction<Event, Event>, CheckpointedFunction, CheckpointListener {
  static inline std::atomic<int64_t> armingCheckpoint{0};
  static inline std::atomic<bool> armed{false}, thrown{false}, restored{false};
  static void reset() {
    armingCheckpoint = 0;
    armed = thrown = restored = false;
  }
  int64_t seen = std::numeric_limits<int64_t>::min();  // the latest event time through here
  Event map(const Event& e) override {
    // Until the watermark passes 30 s - 1 ms, the stage holds [10 s, 20 s)'s result.
    if (armed && !thrown && e.dateTime() < 3 * kQ7Window) {
      thrown = true;
      throw std::runtime_error("injected failure");
    }
    seen = std::max(seen, e.dateTime());
    return e;
  }
  // `seen` is operator state, so that a restore from a checkpoint shows (isRestored).
  void initializeState(FunctionInitializationContext& context) override {
    state_ = &context.getOperatorStateStore().getListState(ListStateDescriptor<int64_t>("seen"));
    for (int64_t t : state_->get()) seen = std::max(seen, t);
    if (context.isRestored()) restored = true;
  }
  // Each bid is followed by the watermark just below it, so past 22 s the watermark has
  // passed 20 s - 1 ms ahead of this checkpoint's barrier: [10 s, 20 s) has fired.
  void snapshotState(const FunctionSnapshotContext& context) override {
    state_->update({seen});
    int64_t none = 0;
    if (seen >= 2 * kQ7Window + 2'000) armingCheckpoint.compare_exchange_strong(none, context.getCheckpointId());
  }
  void notifyCheckpointComplete(int64_t id) override {
    if (armingCheckpoint != 0 && id >= armingCheckpoint) armed = true;
  }

 private:
  ListState<int64_t>* state_ = nullptr;
};

// A watermark right after each record (the stream is in order): a checkpoint barrier
// after a record is after its watermark.
struct WatermarkPerRecord : WatermarkGenerator<Event> {
  void onEvent(const Event&, int64_t timestamp, WatermarkOutput& output) override { output.emitWatermark(timestamp - 1); }
  void onPeriodicEmit(WatermarkOutput&) override {}
};

// Bid i at i * 100 ms, 100 a window; in each window the bids at its first millisecond and
// 5 s in bid the highest price, so each window's result has the next one's first bid.
Event recoveryBid(int64_t i) { return bidAt(i % 7 + 1, i % 50 == 0 ? 2'000 : 1'000 + (i * 37) % 900, i * 100); }

// What q7's last stage holds between two windows is in its checkpoints: restarted from one
// taken while it held a window's result, the job gives every row of the SQL.
TEST(NexmarkHandMade, Q7RestoresTheWindowItHoldsFromACheckpoint) {
  constexpr int64_t kBids = 400;  // 40 s
  FailWhileQ7Holds::reset();
  StreamExecutionEnvironment env;
  env.setParallelism(2).setRestartStrategy(RestartStrategy::fixedDelayRestart(1, std::chrono::milliseconds(0)));
  env.enableCheckpointing(std::chrono::milliseconds(10));
  CollectSink<Q7Result> sink;
  auto source = env.fromSource(DataGeneratorSource(recoveryBid, kBids, RateLimiterStrategy::perSecond(300)),
                               WatermarkStrategy<Event>::forGenerator([] { return std::make_unique<WatermarkPerRecord>(); })
                                   .withTimestampAssigner([](const Event& e) { return e.dateTime(); }),
                               "bids");
  source.setParallelism(1);
  auto failing = source.map(FailWhileQ7Holds{});
  failing.setParallelism(1);
  q7(failing).sinkTo(sink);
  env.execute("q7 restored");
  ASSERT_TRUE(FailWhileQ7Holds::thrown) << "no checkpoint completed in time: the failure was not injected";
  EXPECT_TRUE(FailWhileQ7Holds::restored);
  std::vector<Bid> bids;
  for (int64_t i = 0; i < kBids; ++i) bids.push_back(*recoveryBid(i).bid);
  auto expected = q7Rows(q7BySql(bids));
  // Per window: its bids at 0 s and 5 s, and the next window's at 0 s (none after 40 s).
  ASSERT_EQ(expected.size(), 4u * 3 - 1);
  auto got = q7Rows(sink.getResults());
  got.erase(std::unique(got.begin(), got.end()), got.end());  // rows emitted again after the restart
  EXPECT_EQ(got, expected);
}

// AVG of a BIGINT is a BIGINT: the sum divided by the count, truncated toward zero.
TEST(NexmarkHandMade, Q4AverageIsABigintTruncated) {
  std::vector<Event> events{
      auctionAt(1, 10, 0, 10'000), auctionAt(2, 10, 0, 20'000), auctionAt(3, 11, 0, 15'000),
      bidAt(1, 3, 1'000),
      bidAt(2, 6, 2'000),
      bidAt(2, 5, 3'000),
      bidAt(3, 7, 15'000),    // at the expiry: BETWEEN includes it
      bidAt(2, 100, 20'001),  // after the expiry: not in auction 2's MAX
  };
  // Auctions close at 10 s (category 10: MAX 3), 15 s (11: 7), 20 s (10: MAX 6).
  EXPECT_EQ(sqlRows(runOn(events, [](auto e) { return q4(e); })),
            (std::vector<std::string>{"category=10, average=3", "category=11, average=7",
                                      "category=10, average=4"}));  // (3 + 6) / 2 = 4.5
}

constexpr int64_t kDay = 86'400'000;
constexpr int64_t kJuly15 = 1'436'918'400'000;  // 2015-07-15T00:00:00Z

// q17's columns in the SELECT list's order (avg_price before sum_price), its average a
// BIGINT truncated; a day is DATE_FORMAT(dateTime, 'yyyy-MM-dd').
TEST(NexmarkHandMade, Q17ColumnsAndBigintAverage) {
  std::vector<Event> events{
      bidAt(7, 9'999, kJuly15 + 1'000),
      bidAt(7, 10'000, kJuly15 + 2'000),
      bidAt(7, 1'000'000, kJuly15 + 3'000),
      bidAt(7, 5, kJuly15 + kDay),      // 2015-07-16 00:00:00.000
      bidAt(7, 2, kJuly15 + kDay - 1),  // 2015-07-15 23:59:59.999, 1 ms out of order
  };
  EXPECT_EQ(sqlRows(runOn(events, [](auto e) { return q17(e); })),
            (std::vector<std::string>{
                "auction=7, day='2015-07-15', totalBids=1, rank1Bids=1, rank2Bids=0, rank3Bids=0, minPrice=9999, "
                "maxPrice=9999, avgPrice=9999, sumPrice=9999",
                "auction=7, day='2015-07-15', totalBids=2, rank1Bids=1, rank2Bids=1, rank3Bids=0, minPrice=9999, "
                "maxPrice=10000, avgPrice=9999, sumPrice=19999",
                "auction=7, day='2015-07-15', totalBids=3, rank1Bids=1, rank2Bids=1, rank3Bids=1, minPrice=9999, "
                "maxPrice=1000000, avgPrice=339999, sumPrice=1019999",
                "auction=7, day='2015-07-16', totalBids=1, rank1Bids=1, rank2Bids=0, rank3Bids=0, minPrice=5, "
                "maxPrice=5, avgPrice=5, sumPrice=5",
                "auction=7, day='2015-07-15', totalBids=4, rank1Bids=2, rank2Bids=1, rank3Bids=1, minPrice=2, "
                "maxPrice=1000000, avgPrice=255000, sumPrice=1020001",
            }));
}

// q16's third column is max(DATE_FORMAT(dateTime, 'HH:mm')) of its channel and day;
// q15's SELECT has neither the channel nor the minute.
TEST(NexmarkHandMade, Q16HasTheLatestMinuteAndQ15Not) {
  constexpr int64_t kMinute = 60'000, kHour = 60 * kMinute;
  std::vector<Event> events{
      bidAt(1, 100, kJuly15 + 5 * kMinute + 30'000, "Google", 1),   // 00:05:30
      bidAt(1, 20'000, kJuly15 + 13 * kHour + 7 * kMinute, "Google", 2),  // 13:07:00
      bidAt(2, 100, kJuly15 + 10 * kHour - 1, "Google", 1),         // 09:59:59.999: the max stays 13:07
      bidAt(3, 2'000'000, kJuly15 + kDay - 1, "channel-7", 3),      // 23:59:59.999
      bidAt(1, 100, kJuly15 + kDay, "Google", 1),                   // 2015-07-16 00:00
  };
  EXPECT_EQ(sqlRows(runOn(events, [](auto e) { return q16(e); })),
            (std::vector<std::string>{
                "channel='Google', day='2015-07-15', minute='00:05', totalBids=1, rank1Bids=1, rank2Bids=0, "
                "rank3Bids=0, totalBidders=1, rank1Bidders=1, rank2Bidders=0, rank3Bidders=0, totalAuctions=1, "
                "rank1Auctions=1, rank2Auctions=0, rank3Auctions=0",
                "channel='Google', day='2015-07-15', minute='13:07', totalBids=2, rank1Bids=1, rank2Bids=1, "
                "rank3Bids=0, totalBidders=2, rank1Bidders=1, rank2Bidders=1, rank3Bidders=0, totalAuctions=1, "
                "rank1Auctions=1, rank2Auctions=1, rank3Auctions=0",
                "channel='Google', day='2015-07-15', minute='13:07', totalBids=3, rank1Bids=2, rank2Bids=1, "
                "rank3Bids=0, totalBidders=2, rank1Bidders=1, rank2Bidders=1, rank3Bidders=0, totalAuctions=2, "
                "rank1Auctions=2, rank2Auctions=1, rank3Auctions=0",
                "channel='channel-7', day='2015-07-15', minute='23:59', totalBids=1, rank1Bids=0, rank2Bids=0, "
                "rank3Bids=1, totalBidders=1, rank1Bidders=0, rank2Bidders=0, rank3Bidders=1, totalAuctions=1, "
                "rank1Auctions=0, rank2Auctions=0, rank3Auctions=1",
                "channel='Google', day='2015-07-16', minute='00:00', totalBids=1, rank1Bids=1, rank2Bids=0, "
                "rank3Bids=0, totalBidders=1, rank1Bidders=1, rank2Bidders=0, rank3Bidders=0, totalAuctions=1, "
                "rank1Auctions=1, rank2Auctions=0, rank3Auctions=0",
            }));
  EXPECT_EQ(sqlRows(runOn(events, [](auto e) { return q15(e); })),
            (std::vector<std::string>{
                "day='2015-07-15', totalBids=1, rank1Bids=1, rank2Bids=0, rank3Bids=0, totalBidders=1, "
                "rank1Bidders=1, rank2Bidders=0, rank3Bidders=0, totalAuctions=1, rank1Auctions=1, "
                "rank2Auctions=0, rank3Auctions=0",
                "day='2015-07-15', totalBids=2, rank1Bids=1, rank2Bids=1, rank3Bids=0, totalBidders=2, "
                "rank1Bidders=1, rank2Bidders=1, rank3Bidders=0, totalAuctions=1, rank1Auctions=1, "
                "rank2Auctions=1, rank3Auctions=0",
                "day='2015-07-15', totalBids=3, rank1Bids=2, rank2Bids=1, rank3Bids=0, totalBidders=2, "
                "rank1Bidders=1, rank2Bidders=1, rank3Bidders=0, totalAuctions=2, rank1Auctions=2, "
                "rank2Auctions=1, rank3Auctions=0",
                "day='2015-07-15', totalBids=4, rank1Bids=2, rank2Bids=1, rank3Bids=1, totalBidders=3, "
                "rank1Bidders=1, rank2Bidders=1, rank3Bidders=1, totalAuctions=3, rank1Auctions=2, "
                "rank2Auctions=1, rank3Auctions=1",
                "day='2015-07-16', totalBids=1, rank1Bids=1, rank2Bids=0, rank3Bids=0, totalBidders=1, "
                "rank1Bidders=1, rank2Bidders=0, rank3Bidders=0, totalAuctions=1, rank1Auctions=1, "
                "rank2Auctions=0, rank3Auctions=0",
            }));
}

// SPLIT_INDEX(url, '/', i) is Flink's SqlFunctionUtils.splitIndex: commons-lang's
// splitByWholeSeparatorPreserveAllTokens keeps every empty part (between two slashes, or
// after a last one), an empty string has no parts, and an index past the last part is
// NULL.
TEST(NexmarkHandMade, Q22PartsPastTheLastAreNull) {
  const std::vector<std::string> urls{
      "https://www.nexmark.com/a/b/c/item.htm?query=1",
      "https://www.nexmark.com/a",
      "https://www.nexmark.com/a/",
      "https://www.nexmark.com/a//c",
      "https://www.nexmark.com",
      "",
      "///",
  };
  std::vector<Event> events;
  for (size_t i = 0; i < urls.size(); ++i) events.push_back(bidAt(static_cast<int64_t>(i), 100, 1'000, "Google", 1, urls[i]));
  const std::string bid = "bidder=1, price=100, channel='Google', ";
  EXPECT_EQ(sqlRows(runOn(events, [](auto e) { return q22(e); })),
            (std::vector<std::string>{
                "auction=0, " + bid + "dir1='a', dir2='b', dir3='c'",
                "auction=1, " + bid + "dir1='a', dir2=NULL, dir3=NULL",
                "auction=2, " + bid + "dir1='a', dir2='', dir3=NULL",
                "auction=3, " + bid + "dir1='a', dir2='', dir3='c'",
                "auction=4, " + bid + "dir1=NULL, dir2=NULL, dir3=NULL",
                "auction=5, " + bid + "dir1=NULL, dir2=NULL, dir3=NULL",
                "auction=6, " + bid + "dir1='', dir2=NULL, dir3=NULL",
            }));
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
  bad = ok;
  bad.bufferTimeoutMs = -2;
  EXPECT_NE(validate(bad).find("--buffer-timeout must be -1, 0 or positive"), std::string::npos);
}

}  // namespace
}  // namespace weir::nexmark
