#include "nexmark/queries.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string_view>

namespace weir::nexmark {

using std::chrono::milliseconds;

namespace {

// Picks one kind of event out of the stream, converted by `fn` (T&& -> OUT; by default
// as it is). It moves the event out of a record its operator owns, and copies it out of
// one that a fan-out shares with other operators (as when a query reads both persons and
// auctions), so that only the events kept are copied.
template <class T, std::optional<T> Event::*kPart, class OUT = T, class F = std::identity>
struct PartOf {
  F fn{};
  void operator()(Event&& e, Collector<OUT>& out) const {
    if (e.*kPart) out.collect(fn(std::move(*(e.*kPart))));
  }
  void operator()(const Event& e, Collector<OUT>& out) const {
    if (!(e.*kPart)) return;
    if constexpr (std::invocable<const F&, const T&>) out.collect(fn(*(e.*kPart)));
    else out.collect(fn(T(*(e.*kPart))));
  }
};

}  // namespace

DataStream<Bid> bids(DataStream<Event> events) {
  return events.flatMap<Bid>(PartOf<Bid, &Event::bid>{}).name("Bids");
}
DataStream<Person> persons(DataStream<Event> events) {
  return events.flatMap<Person>(PartOf<Person, &Event::person>{}).name("Persons");
}
DataStream<Auction> auctions(DataStream<Event> events) {
  return events.flatMap<Auction>(PartOf<Auction, &Event::auction>{}).name("Auctions");
}

// q0: every bid, as it is.
DataStream<Bid> q0(DataStream<Event> events) { return bids(events); }

// q1: bids with their price in euros. Picked and converted in one flatMap, as q2's
// filter is: the engine fuses map and filter runs, not a flatMap into them (what a
// separate bids(events).map(...) costs is in bench/README.md).
DataStream<Q1Result> q1(DataStream<Event> events) {
  auto euros = [](Bid&& b) {
    return Q1Result{b.auction, b.bidder, kDollarToEuro * static_cast<double>(b.price), b.dateTime, std::move(b.extra)};
  };
  return events.flatMap<Q1Result>(PartOf<Bid, &Event::bid, Q1Result, decltype(euros)>{euros}).name("q1 Euros");
}

// q2: the bids on auctions whose id is a multiple of 123.
DataStream<Q2Result> q2(DataStream<Event> events) {
  return events
      .flatMap<Q2Result>([](const Event& e, Collector<Q2Result>& out) {
        if (e.bid && e.bid->auction % 123 == 0) out.collect({e.bid->auction, e.bid->price});
      })
      .name("q2 Filter");
}

namespace {

struct CountBids : AggregateFunction<Bid, int64_t, int64_t> {
  int64_t createAccumulator() override { return 0; }
  int64_t add(const Bid&, int64_t acc) override { return acc + 1; }
  int64_t getResult(const int64_t& acc) override { return acc; }
  int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
};

struct StampAuctionCount : ProcessWindowFunction<int64_t, Q5Result, int64_t> {
  void process(const int64_t& auction, Context& ctx, std::span<const int64_t> counts, Collector<Q5Result>& out) override {
    out.collect({auction, counts[0], ctx.window().end});
  }
};

// Per window end: the auctions with the most bids, emitted once every count of the window
// has arrived (the counts carry the window's end − 1, which the watermark then passes).
struct HottestOfWindow : KeyedProcessFunction<int64_t, Q5Result, Q5Result> {
  void open() override {
    max_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("max", -1));
    best_ = &getRuntimeContext().getListState(ListStateDescriptor<Q5Result>("best"));
  }
  void processElement(const Q5Result& r, Context& ctx, Collector<Q5Result>&) override {
    int64_t max = *max_->value();
    if (r.count > max) {
      max_->update(r.count);
      best_->update({r});
      ctx.timerService().registerEventTimeTimer(r.windowEnd - 1);
    } else if (r.count == max) {
      best_->add(r);
    }
  }
  void onTimer(int64_t, OnTimerContext&, Collector<Q5Result>& out) override {
    for (Q5Result& r : best_->get()) out.collect(std::move(r));
    best_->clear();
    max_->clear();
  }

 private:
  ValueState<int64_t>* max_ = nullptr;
  ListState<Q5Result>* best_ = nullptr;
};

}  // namespace

// q5: per sliding window (10 s every 2 s), the auctions with the most bids.
DataStream<Q5Result> q5(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return b.auction; })
      .window(SlidingEventTimeWindows::of(milliseconds(kQ5Size), milliseconds(kQ5Slide)))
      .aggregate(CountBids{}, StampAuctionCount{})
      .name("q5 Bids per Auction")
      .keyBy([](const Q5Result& r) { return r.windowEnd; })
      .process(HottestOfWindow{})
      .name("q5 Hottest");
}

namespace {

// q7's SQL joins each window's highest price to the bids made from its start to its end,
// both included: a bid at exactly a window's end (the next window's first millisecond)
// at that price is in its result too. So beside the highest price seen and every bid at
// that price, a window's aggregate keeps the bids at its first millisecond, at any price.
struct HighestBids {
  int64_t price = -1;
  std::vector<Bid> bids;
  std::vector<Bid> opening;
};
WEIR_STRUCT(HighestBids, price, bids, opening);

void keepHighest(HighestBids& acc, const Bid& b) {
  if (b.price > acc.price) {
    acc.price = b.price;
    acc.bids.clear();
  }
  if (b.price == acc.price) acc.bids.push_back(b);
}

// The tumbling windows start at multiples of their size (offset 0).
bool opensQ7Window(int64_t dateTime) { return dateTime % kQ7Window == 0; }

void mergeHighest(HighestBids& a, const HighestBids& b) {
  for (const Bid& bid : b.bids) keepHighest(a, bid);
  a.opening.insert(a.opening.end(), b.opening.begin(), b.opening.end());
}

struct HighestOfAuction : AggregateFunction<Bid, HighestBids, HighestBids> {
  HighestBids createAccumulator() override { return {}; }
  HighestBids add(const Bid& b, HighestBids acc) override {
    keepHighest(acc, b);
    if (opensQ7Window(b.dateTime)) acc.opening.push_back(b);
    return acc;
  }
  HighestBids getResult(const HighestBids& acc) override { return acc; }
  HighestBids merge(HighestBids a, const HighestBids& b) override {
    mergeHighest(a, b);
    return a;
  }
};

struct HighestOfAll : AggregateFunction<HighestBids, HighestBids, HighestBids> {
  HighestBids createAccumulator() override { return {}; }
  HighestBids add(const HighestBids& in, HighestBids acc) override {
    mergeHighest(acc, in);
    return acc;
  }
  HighestBids getResult(const HighestBids& acc) override { return acc; }
  HighestBids merge(HighestBids a, const HighestBids& b) override {
    mergeHighest(a, b);
    return a;
  }
};

// What q7's last stage gets of a window, keyed by the end of the window whose result it
// is part of: the window's highest price and bids, or (`opening`) the bids at the
// window's first millisecond, for the window before it, whose end that is.
struct Q7Part {
  int64_t windowEnd = 0;
  bool opening = false;
  int64_t price = -1;
  std::vector<Bid> bids;
};
WEIR_STRUCT(Q7Part, windowEnd, opening, price, bids);

// Per window end: the window's highest bids and, at its highest price, the next window's
// bids at exactly that end, emitted when the watermark passes the end of the next window.
// Both parts have come by then: windowAll emits a window's result before it passes the
// watermark that fired it on. Both are keyed state, so a checkpoint keeps them.
struct HighestUpToTheEnd : KeyedProcessFunction<int64_t, Q7Part, Q7Result> {
  void open() override {
    highest_ = &getRuntimeContext().getState(ValueStateDescriptor<Q7Part>("highest"));
    atEnd_ = &getRuntimeContext().getState(ValueStateDescriptor<std::vector<Bid>>("bids at the end"));
  }
  void processElement(const Q7Part& part, Context& ctx, Collector<Q7Result>&) override {
    if (part.opening) atEnd_->update(part.bids);
    else highest_->update(part);
    ctx.timerService().registerEventTimeTimer(part.windowEnd + kQ7Window - 1);
  }
  void onTimer(int64_t, OnTimerContext& ctx, Collector<Q7Result>& out) override {
    const int64_t end = ctx.getCurrentKey();
    if (auto highest = highest_->value()) {  // none: the window had no bids, so no highest price
      for (Bid& b : highest->bids) out.collect({std::move(b), end});
      if (auto atEnd = atEnd_->value())
        for (Bid& b : *atEnd)
          if (b.price == highest->price) out.collect({std::move(b), end});
    }
    highest_->clear();
    atEnd_->clear();
  }

 private:
  ValueState<Q7Part>* highest_ = nullptr;
  ValueState<std::vector<Bid>>* atEnd_ = nullptr;
};

}  // namespace

// q7: per tumbling 10 s window, the bids with its highest price made in it or at exactly
// its end. Each auction's highest bids (and bids at the window's first millisecond) first,
// in parallel; then the highest of those in one instance; then per window end, the
// window's result joined with the next window's first-millisecond bids.
DataStream<Q7Result> q7(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return b.auction; })
      .window(TumblingEventTimeWindows::of(milliseconds(kQ7Window)))
      .aggregate(HighestOfAuction{})
      .name("q7 Highest per Auction")
      .windowAll(TumblingEventTimeWindows::of(milliseconds(kQ7Window)))
      .aggregate(HighestOfAll{})
      .process<Q7Part>([](const HighestBids& h, ProcessFunction<HighestBids, Q7Part>::Context& ctx,
                          Collector<Q7Part>& out) {
        const int64_t end = *ctx.timestamp() + 1;
        out.collect({end, false, h.price, h.bids});
        if (!h.opening.empty()) out.collect({end - kQ7Window, true, -1, h.opening});
      })
      .name("q7 Highest")
      .keyBy([](const Q7Part& p) { return p.windowEnd; })
      .process(HighestUpToTheEnd{})
      .name("q7 Highest up to the End");
}

// q8: the people who opened an auction in the same tumbling 10 s window as they
// registered, once per person and window.
DataStream<Q8Result> q8(DataStream<Event> events) {
  return persons(events)
      .coGroup(auctions(events))
      .where([](const Person& p) { return p.id; })
      .equalTo([](const Auction& a) { return a.seller; })
      .window(TumblingEventTimeWindows::of(milliseconds(kQ8Window)))
      .apply<Q8Result>([](std::span<const Person> ps, std::span<const Auction> as, Collector<Q8Result>& out) {
        if (as.empty()) return;
        std::set<int64_t> seen;
        for (const Person& p : ps)
          if (seen.insert(p.id).second) out.collect({p.id, p.name, p.dateTime - p.dateTime % kQ8Window});
      });
}

namespace {
// A bidder's window (a session or a tumbling window) and its count of bids.
struct StampSession : ProcessWindowFunction<int64_t, Q11Result, int64_t> {
  void process(const int64_t& bidder, Context& ctx, std::span<const int64_t> counts, Collector<Q11Result>& out) override {
    out.collect({bidder, counts[0], ctx.window().start, ctx.window().end});
  }
};
}  // namespace

// q11: each bidder's sessions (gap 10 s) and their bids.
DataStream<Q11Result> q11(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return b.bidder; })
      .window(EventTimeSessionWindows::withGap(milliseconds(kQ11Gap)))
      .aggregate(CountBids{}, StampSession{})
      .name("q11 Sessions");
}

// q12: each bidder's bids per tumbling 10 s window of processing time (the job's clock
// when the window operator takes them). Windows still open when a bounded input ends
// do not fire, as in Flink.
DataStream<Q12Result> q12(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return b.bidder; })
      .window(TumblingProcessingTimeWindows::of(milliseconds(kQ12Window)))
      .aggregate(CountBids{}, StampSession{})
      .name("q12 Windows");
}

std::string bidTimeType(int64_t dateTime) {
  int64_t hour = (dateTime / 3'600'000) % 24;
  if (hour >= 8 && hour <= 18) return "dayTime";
  if (hour <= 6 || hour >= 20) return "nightTime";
  return "otherTime";
}

int64_t countChar(const std::string& s, char c) { return static_cast<int64_t>(std::count(s.begin(), s.end(), c)); }

// q14: bids between 1 M and 50 M euros, with the time of day and the number of 'c's in
// their extra field.
DataStream<Q14Result> q14(DataStream<Event> events) {
  return events
      .flatMap<Q14Result>([](const Event& e, Collector<Q14Result>& out) {
        if (!e.bid) return;
        const Bid& b = *e.bid;
        double euros = kDollarToEuro * b.price;
        if (euros > 1'000'000 && euros < 50'000'000)
          out.collect({b.auction, b.bidder, euros, bidTimeType(b.dateTime), b.dateTime, b.extra, countChar(b.extra, 'c')});
      })
      .name("q14 Filter and Project");
}

namespace {

// Sellers joined with their auctions, whichever comes first (a regular join: both sides
// are kept, as Flink's SQL join keeps them).
struct JoinSellers : KeyedCoProcessFunction<int64_t, Auction, Person, Q3Result> {
  void open() override {
    seller_ = &getRuntimeContext().getState(ValueStateDescriptor<Q3Result>("seller"));
    waiting_ = &getRuntimeContext().getListState(ListStateDescriptor<int64_t>("auctions"));
  }
  void processElement1(const Auction& a, Context&, Collector<Q3Result>& out) override {
    if (auto seller = seller_->value()) {
      seller->id = a.id;
      out.collect(std::move(*seller));
    } else {
      waiting_->add(a.id);
    }
  }
  void processElement2(const Person& p, Context&, Collector<Q3Result>& out) override {
    seller_->update({p.name, p.city, p.state, 0});
    for (int64_t id : waiting_->get()) out.collect({p.name, p.city, p.state, id});
    waiting_->clear();
  }

 private:
  ValueState<Q3Result>* seller_ = nullptr;
  ListState<int64_t>* waiting_ = nullptr;
};

}  // namespace

// q3: auctions in category 10 with their sellers from Oregon, Idaho or California.
DataStream<Q3Result> q3(DataStream<Event> events) {
  auto sellers = persons(events)
                     .filter([](const Person& p) { return p.state == "OR" || p.state == "ID" || p.state == "CA"; })
                     .keyBy([](const Person& p) { return p.id; });
  return auctions(events)
      .filter([](const Auction& a) { return a.category == 10; })
      .keyBy([](const Auction& a) { return a.seller; })
      .connect(sellers)
      .process(JoinSellers{})
      .name("q3 Join");
}

namespace {

// Per auction: the highest bid (the earliest of equal ones) made while it was open,
// emitted when the watermark passes its expiry. A bid reads one small state (the
// auction's times and the best price so far); the auction and the best bid are read
// only when it closes.
struct OpenAuction {
  int64_t start = 0;
  int64_t expires = 0;
  int64_t bestPrice = -1;  // -1: no bid yet
  int64_t bestTime = 0;
  bool closed = false;
};
WEIR_STRUCT(OpenAuction, start, expires, bestPrice, bestTime, closed);

struct WinningBid : KeyedCoProcessFunction<int64_t, Auction, Bid, AuctionBid> {
  void open() override {
    open_ = &getRuntimeContext().getState(ValueStateDescriptor<OpenAuction>("open"));
    auction_ = &getRuntimeContext().getState(ValueStateDescriptor<Auction>("auction"));
    best_ = &getRuntimeContext().getState(ValueStateDescriptor<Bid>("best"));
    early_ = &getRuntimeContext().getListState(ListStateDescriptor<Bid>("early"));
  }
  void processElement1(const Auction& a, Context& ctx, Collector<AuctionBid>&) override {
    auction_->update(a);
    OpenAuction state{a.dateTime, a.expires};
    for (const Bid& b : early_->get()) consider(state, b);
    early_->clear();
    open_->update(state);
    ctx.timerService().registerEventTimeTimer(a.expires);
  }
  void processElement2(const Bid& b, Context&, Collector<AuctionBid>&) override {
    auto state = open_->value();
    if (!state) {
      early_->add(b);  // its auction has not come yet
    } else if (!state->closed && consider(*state, b)) {
      open_->update(*state);
    }
  }
  void onTimer(int64_t, OnTimerContext&, Collector<AuctionBid>& out) override {
    auto a = auction_->value();
    auto best = best_->value();
    if (a && best) out.collect({std::move(*a), std::move(*best)});
    auction_->clear();
    best_->clear();
    open_->update(OpenAuction{0, 0, -1, 0, true});  // later bids on it are too late to win
  }

 private:
  // Whether `b` is the new best bid of the auction (then it is kept).
  bool consider(OpenAuction& state, const Bid& b) {
    if (b.dateTime < state.start || b.dateTime > state.expires) return false;
    if (b.price < state.bestPrice || (b.price == state.bestPrice && b.dateTime >= state.bestTime)) return false;
    state.bestPrice = b.price;
    state.bestTime = b.dateTime;
    best_->update(b);
    return true;
  }
  ValueState<OpenAuction>* open_ = nullptr;
  ValueState<Auction>* auction_ = nullptr;
  ValueState<Bid>* best_ = nullptr;
  ListState<Bid>* early_ = nullptr;
};

struct RunningAverage : KeyedProcessFunction<int64_t, std::pair<int64_t, int64_t>, Q4Result> {
  void open() override {
    sum_ = &getRuntimeContext().getState(ValueStateDescriptor<std::pair<int64_t, int64_t>>("sum and count"));
  }
  void processElement(const std::pair<int64_t, int64_t>& categoryPrice, Context&, Collector<Q4Result>& out) override {
    auto [sum, count] = sum_->value().value_or(std::pair<int64_t, int64_t>{0, 0});
    sum += categoryPrice.second;
    ++count;
    sum_->update({sum, count});
    out.collect({categoryPrice.first, sum / count});  // AVG(BIGINT): truncated toward zero
  }

 private:
  ValueState<std::pair<int64_t, int64_t>>* sum_ = nullptr;
};

}  // namespace

// q9: the winning bid of every auction (highest price, earliest on ties, made between
// the auction's start and its expiry).
DataStream<AuctionBid> q9(DataStream<Event> events) {
  return auctions(events)
      .keyBy([](const Auction& a) { return a.id; })
      .connect(bids(events).keyBy([](const Bid& b) { return b.auction; }))
      .process(WinningBid{})
      .name("q9 Winning Bids");
}

// q4: the running average closing price per category, updated with every closed auction.
DataStream<Q4Result> q4(DataStream<Event> events) {
  return q9(events)
      .map([](const AuctionBid& w) { return std::pair<int64_t, int64_t>{w.auction.category, w.bid.price}; })
      .keyBy([](const std::pair<int64_t, int64_t>& p) { return p.first; })
      .process(RunningAverage{})
      .name("q4 Average per Category");
}

std::string dayOf(int64_t dateTime) {
  using namespace std::chrono;
  year_month_day day{floor<days>(sys_time<milliseconds>(milliseconds(dateTime)))};
  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(day.year()), static_cast<unsigned>(day.month()),
                static_cast<unsigned>(day.day()));
  return text;
}

int priceBand(int64_t price) { return price < 10'000 ? 1 : price < 1'000'000 ? 2 : 3; }

namespace {

// `minute` becomes DATE_FORMAT(dateTime, 'HH:mm') (UTC) if that is later.
void keepLatestMinute(std::string& minute, int64_t dateTime) {
  constexpr int64_t kDayMs = 86'400'000;
  int64_t ms = dateTime % kDayMs;
  if (ms < 0) ms += kDayMs;
  const int64_t hour = ms / 3'600'000, min = ms / 60'000 % 60;
  const char text[5] = {static_cast<char>('0' + hour / 10), static_cast<char>('0' + hour % 10), ':',
                        static_cast<char>('0' + min / 10), static_cast<char>('0' + min % 10)};
  if (std::string_view(text, 5) > minute) minute.assign(text, 5);
}

// Per key (a day, or a channel and a day): bids, and distinct bidders and auctions, in
// total and per price band (and for q16 the latest minute). Which bands each bidder and
// auction was seen in is a bit mask in map state; the updated row is emitted with every
// bid.
template <class K, class R>
struct DistinctCounts : KeyedProcessFunction<K, Bid, R> {
  using Base = KeyedProcessFunction<K, Bid, R>;
  static constexpr bool kPerChannel = std::is_same_v<R, Q16Result>;
  void open() override {
    counts_ = &this->getRuntimeContext().getState(ValueStateDescriptor<R>("counts"));
    bidders_ = &this->getRuntimeContext().getMapState(MapStateDescriptor<int64_t, int32_t>("bidders"));
    auctions_ = &this->getRuntimeContext().getMapState(MapStateDescriptor<int64_t, int32_t>("auctions"));
  }
  void processElement(const Bid& b, typename Base::Context&, Collector<R>& out) override {
    R r = counts_->value().value_or(R{});
    if (r.totalBids == 0) {
      r.day = dayOf(b.dateTime);
      if constexpr (kPerChannel) r.channel = b.channel;
    }
    if constexpr (kPerChannel) keepLatestMinute(r.minute, b.dateTime);
    const int band = priceBand(b.price);
    ++r.totalBids;
    (band == 1 ? r.rank1Bids : band == 2 ? r.rank2Bids : r.rank3Bids) += 1;
    see(*bidders_, b.bidder, band, r.totalBidders, r.rank1Bidders, r.rank2Bidders, r.rank3Bidders);
    see(*auctions_, b.auction, band, r.totalAuctions, r.rank1Auctions, r.rank2Auctions, r.rank3Auctions);
    counts_->update(r);
    out.collect(std::move(r));
  }

 private:
  // Bit 0: seen at all; bit n: seen in band n.
  static void see(MapState<int64_t, int32_t>& seen, int64_t id, int band, int64_t& total, int64_t& rank1,
                  int64_t& rank2, int64_t& rank3) {
    int32_t mask = seen.get(id).value_or(0);
    int32_t updated = mask | 1 | (1 << band);
    if (updated == mask) return;
    if (mask == 0) ++total;
    if (!(mask & (1 << band))) (band == 1 ? rank1 : band == 2 ? rank2 : rank3) += 1;
    seen.put(id, updated);
  }
  ValueState<R>* counts_ = nullptr;
  MapState<int64_t, int32_t>* bidders_ = nullptr;
  MapState<int64_t, int32_t>* auctions_ = nullptr;
};

struct DailyAuctionStats : KeyedProcessFunction<std::pair<int64_t, std::string>, Bid, Q17Result> {
  void open() override { stats_ = &getRuntimeContext().getState(ValueStateDescriptor<Q17Result>("stats")); }
  void processElement(const Bid& b, Context& ctx, Collector<Q17Result>& out) override {
    Q17Result r = stats_->value().value_or(Q17Result{b.auction, ctx.getCurrentKey().second, 0, 0, 0, 0, b.price, b.price, 0, 0});
    ++r.totalBids;
    const int band = priceBand(b.price);
    (band == 1 ? r.rank1Bids : band == 2 ? r.rank2Bids : r.rank3Bids) += 1;
    r.minPrice = std::min(r.minPrice, b.price);
    r.maxPrice = std::max(r.maxPrice, b.price);
    r.sumPrice += b.price;
    r.avgPrice = r.sumPrice / r.totalBids;  // AVG(BIGINT): truncated toward zero
    stats_->update(r);
    out.collect(std::move(r));
  }

 private:
  ValueState<Q17Result>* stats_ = nullptr;
};

struct LastBid : KeyedProcessFunction<std::pair<int64_t, int64_t>, Bid, Bid> {
  void open() override { last_ = &getRuntimeContext().getState(ValueStateDescriptor<int64_t>("last time")); }
  void processElement(const Bid& b, Context&, Collector<Bid>& out) override {
    auto last = last_->value();
    if (last && b.dateTime < *last) return;
    last_->update(b.dateTime);
    out.collect(b);
  }

 private:
  ValueState<int64_t>* last_ = nullptr;
};

constexpr size_t kTop = 10;

struct TopBids : KeyedProcessFunction<int64_t, Bid, Bid> {
  void open() override { top_ = &getRuntimeContext().getState(ValueStateDescriptor<std::vector<int64_t>>("top prices")); }
  void processElement(const Bid& b, Context&, Collector<Bid>& out) override {
    std::vector<int64_t> top = top_->value().value_or(std::vector<int64_t>{});
    if (top.size() == kTop && b.price <= top.back()) return;  // not among the ten highest
    top.insert(std::upper_bound(top.begin(), top.end(), b.price, std::greater<>()), b.price);
    if (top.size() > kTop) top.pop_back();
    top_->update(std::move(top));
    out.collect(b);
  }

 private:
  ValueState<std::vector<int64_t>>* top_ = nullptr;
};

// Bids joined with their auction if it is in category 10; a bid waits for its auction
// (which may come later), and an auction in another category drops its bids.
struct JoinCategory10 : KeyedCoProcessFunction<int64_t, Bid, Auction, AuctionBid> {
  void open() override {
    auction_ = &getRuntimeContext().getState(ValueStateDescriptor<Auction>("auction"));
    otherCategory_ = &getRuntimeContext().getState(ValueStateDescriptor<bool>("other category"));
    waiting_ = &getRuntimeContext().getListState(ListStateDescriptor<Bid>("bids"));
  }
  void processElement1(const Bid& b, Context&, Collector<AuctionBid>& out) override {
    if (otherCategory_->value()) return;
    if (auto a = auction_->value()) out.collect({std::move(*a), b});
    else waiting_->add(b);
  }
  void processElement2(const Auction& a, Context&, Collector<AuctionBid>& out) override {
    if (a.category != 10) {
      otherCategory_->update(true);
      waiting_->clear();
      return;
    }
    auction_->update(a);
    for (Bid& b : waiting_->get()) out.collect({a, std::move(b)});
    waiting_->clear();
  }

 private:
  ValueState<Auction>* auction_ = nullptr;
  ValueState<bool>* otherCategory_ = nullptr;
  ListState<Bid>* waiting_ = nullptr;
};

}  // namespace

// q15: per day, bids and distinct bidders and auctions, in total and per price band.
DataStream<Q15Result> q15(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return dayOf(b.dateTime); })
      .process(DistinctCounts<std::string, Q15Result>{})
      .name("q15 Distinct per Day");
}

// q16: q15 per channel and day, with the latest minute of a bid.
DataStream<Q16Result> q16(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return std::pair<std::string, std::string>{b.channel, dayOf(b.dateTime)}; })
      .process(DistinctCounts<std::pair<std::string, std::string>, Q16Result>{})
      .name("q16 Distinct per Channel and Day");
}

// q17: per auction and day, running counts by price band and price statistics, updated
// with every bid.
DataStream<Q17Result> q17(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return std::pair<int64_t, std::string>{b.auction, dayOf(b.dateTime)}; })
      .process(DailyAuctionStats{})
      .name("q17 Daily Auction Stats");
}

// q18: per bidder and auction, the latest bid (by event time), emitted when it changes.
DataStream<Bid> q18(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return std::pair<int64_t, int64_t>{b.bidder, b.auction}; })
      .process(LastBid{})
      .name("q18 Last Bid");
}

// q19: per auction, every bid that enters its ten highest prices, when it does.
DataStream<Bid> q19(DataStream<Event> events) {
  return bids(events).keyBy([](const Bid& b) { return b.auction; }).process(TopBids{}).name("q19 Top 10");
}

// q20: bids with their auction, for auctions in category 10.
DataStream<AuctionBid> q20(DataStream<Event> events) {
  // Auctions first: the events' last consumer takes their batch and moves from it, the
  // others copy what they keep, and bids are most of the events.
  auto auctionsById = auctions(events).keyBy([](const Auction& a) { return a.id; });
  return bids(events)
      .keyBy([](const Bid& b) { return b.auction; })
      .connect(auctionsById)
      .process(JoinCategory10{})
      .name("q20 Join");
}

std::optional<std::string> channelIdOf(const std::string& url) {
  static const std::string kKey = "channel_id=";
  for (size_t at = url.find(kKey); at != std::string::npos; at = url.find(kKey, at + 1)) {
    if (at != 0 && url[at - 1] != '&') continue;
    size_t start = at + kKey.size(), end = url.find('&', start);
    return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  }
  return std::nullopt;
}

// Flink's SPLIT_INDEX (SqlFunctionUtils.splitIndex) splits with commons-lang's
// StringUtils.splitByWholeSeparatorPreserveAllTokens, which keeps every part, empty ones
// too (between two slashes, before the first, after the last), and returns no part at all
// for an empty string; an index past the last part gives NULL.
std::optional<std::string> splitIndex(const std::string& s, int index) {
  if (s.empty() || index < 0) return std::nullopt;
  size_t start = 0;
  for (int i = 0; i < index; ++i) {
    start = s.find('/', start);
    if (start == std::string::npos) return std::nullopt;
    ++start;
  }
  size_t end = s.find('/', start);
  return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// q21: bids with the channel id of a known channel (Apple 0, Google 1, Facebook 2,
// Baidu 3) or the one in their url; bids with neither are left out.
DataStream<Q21Result> q21(DataStream<Event> events) {
  return events
      .flatMap<Q21Result>([](const Event& e, Collector<Q21Result>& out) {
        if (!e.bid) return;
        const Bid& b = *e.bid;
        std::string lower = b.channel;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        std::optional<std::string> id;
        if (lower == "apple") id = "0";
        else if (lower == "google") id = "1";
        else if (lower == "facebook") id = "2";
        else if (lower == "baidu") id = "3";
        else id = channelIdOf(b.url);
        if (id) out.collect({b.auction, b.bidder, b.price, b.channel, std::move(*id)});
      })
      .name("q21 Channel Ids");
}

// q22: bids with the first three directories of their url.
DataStream<Q22Result> q22(DataStream<Event> events) {
  return events
      .flatMap<Q22Result>([](const Event& e, Collector<Q22Result>& out) {
        if (!e.bid) return;
        const Bid& b = *e.bid;
        out.collect({b.auction, b.bidder, b.price, b.channel, splitIndex(b.url, 3), splitIndex(b.url, 4),
                     splitIndex(b.url, 5)});
      })
      .name("q22 Url Directories");
}

}  // namespace weir::nexmark
