// The Nexmark generator's rules and every query's output on a small stream, against a
// brute force over the same events written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
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
// one subtask, in order), or sorted.
template <class T, class Build>
std::vector<T> runUnsorted(Build build, int parallelism) {
  GeneratorConfig c = smallConfig();
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  CollectSink<T> sink;
  build(env.fromSource(NexmarkSource(c), nexmarkWatermarks(c), "nexmark")).sinkTo(sink);
  env.execute("nexmark");
  return sink.getResults();
}
template <class T, class Build>
std::vector<T> run(Build build, int parallelism) {
  return sorted(runUnsorted<T>(build, parallelism));
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
  std::vector<std::tuple<int64_t, int64_t, int64_t>> got;
  for (const AuctionBid& w : runUnsorted<AuctionBid>([](auto e) { return q9(e); }, 2)) {
    EXPECT_EQ(w.auction.id, w.bid.auction);
    got.push_back({w.auction.id, w.bid.price, w.bid.dateTime});
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);

  auto averages = lastPerKey<Q4Result, int64_t>(runUnsorted<Q4Result>([](auto e) { return q4(e); }, 2),
                                                [](const Q4Result& r) { return r.category; });
  ASSERT_EQ(averages.size(), sums.size());
  for (auto& [category, sc] : sums)
    EXPECT_EQ(averages[category].average, static_cast<double>(sc.first) / static_cast<double>(sc.second)) << category;
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
    r.avgPrice = static_cast<double>(r.sumPrice) / static_cast<double>(r.totalBids);
  }
  EXPECT_EQ(dayOf(1'436'918'400'000), "2015-07-15");
  auto got = lastPerKey<Q17Result, std::pair<int64_t, std::string>>(
      runUnsorted<Q17Result>([](auto e) { return q17(e); }, 2),
      [](const Q17Result& r) { return std::pair<int64_t, std::string>{r.auction, r.day}; });
  EXPECT_EQ(got, expected);
}

TEST(NexmarkQueries, Q15AndQ16DistinctCountsEndAtABruteForcesTotals) {
  // Per key: the bids, and the sets of bidders and auctions, in total and per band.
  struct Sets {
    int64_t bids[4] = {0, 0, 0, 0};
    std::set<int64_t> bidders[4], auctions[4];
  };
  std::map<std::pair<std::string, std::string>, Sets> perChannel, perDay;  // (channel or "", day)
  for (const Bid& b : allBids()) {
    int band = b.price < 10'000 ? 1 : b.price < 1'000'000 ? 2 : 3;
    for (Sets* s : {&perChannel[{b.channel, dayOf(b.dateTime)}], &perDay[{"", dayOf(b.dateTime)}]}) {
      for (int i : {0, band}) {
        ++s->bids[i];
        s->bidders[i].insert(b.bidder);
        s->auctions[i].insert(b.auction);
      }
    }
  }
  auto rows = [](const std::map<std::pair<std::string, std::string>, Sets>& sets) {
    std::map<std::pair<std::string, std::string>, Q15Result> out;
    for (auto& [key, s] : sets) {
      auto n = [](const std::set<int64_t>& v) { return static_cast<int64_t>(v.size()); };
      out[key] = {key.first, key.second, s.bids[0], s.bids[1], s.bids[2], s.bids[3],
                  n(s.bidders[0]), n(s.bidders[1]), n(s.bidders[2]), n(s.bidders[3]),
                  n(s.auctions[0]), n(s.auctions[1]), n(s.auctions[2]), n(s.auctions[3])};
    }
    return out;
  };
  auto key = [](const Q15Result& r) { return std::pair<std::string, std::string>{r.channel, r.day}; };
  EXPECT_EQ((lastPerKey<Q15Result, std::pair<std::string, std::string>>(
                runUnsorted<Q15Result>([](auto e) { return q15(e); }, 2), key)),
            rows(perDay));
  auto channels = rows(perChannel);
  ASSERT_GT(channels.size(), 1000u);
  EXPECT_EQ((lastPerKey<Q15Result, std::pair<std::string, std::string>>(
                runUnsorted<Q15Result>([](auto e) { return q16(e); }, 2), key)),
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
    std::vector<std::string> parts;
    std::stringstream url(b.url);
    for (std::string part; std::getline(url, part, '/');) parts.push_back(part);
    auto at = [&](size_t i) { return i < parts.size() ? parts[i] : std::string(); };
    q22Expected.push_back({b.auction, b.bidder, b.price, b.channel, at(3), at(4), at(5)});
  }
  ASSERT_GT(q21Expected.size(), 1000u);
  EXPECT_EQ(run<Q21Result>([](auto e) { return q21(e); }, 2), sorted(q21Expected));
  EXPECT_EQ(run<Q22Result>([](auto e) { return q22(e); }, 2), sorted(q22Expected));
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
