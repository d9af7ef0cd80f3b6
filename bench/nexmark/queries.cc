#include "nexmark/queries.h"

#include <algorithm>
#include <set>

namespace weir::nexmark {

using std::chrono::milliseconds;

DataStream<Bid> bids(DataStream<Event> events) {
  return events
      .flatMap<Bid>([](const Event& e, Collector<Bid>& out) {
        if (e.bid) out.collect(*e.bid);
      })
      .name("Bids");
}
DataStream<Person> persons(DataStream<Event> events) {
  return events
      .flatMap<Person>([](const Event& e, Collector<Person>& out) {
        if (e.person) out.collect(*e.person);
      })
      .name("Persons");
}
DataStream<Auction> auctions(DataStream<Event> events) {
  return events
      .flatMap<Auction>([](const Event& e, Collector<Auction>& out) {
        if (e.auction) out.collect(*e.auction);
      })
      .name("Auctions");
}

// q0: every bid, as it is.
DataStream<Bid> q0(DataStream<Event> events) { return bids(events); }

// q1: bids with their price in euros.
DataStream<Q1Result> q1(DataStream<Event> events) {
  return bids(events)
      .map([](const Bid& b) { return Q1Result{b.auction, b.bidder, kDollarToEuro * b.price, b.dateTime, b.extra}; })
      .name("q1 Euros");
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

// The highest price seen and every bid at that price.
struct HighestBids {
  int64_t price = -1;
  std::vector<Bid> bids;
};
WEIR_STRUCT(HighestBids, price, bids);

void keepHighest(HighestBids& acc, const Bid& b) {
  if (b.price > acc.price) {
    acc.price = b.price;
    acc.bids.clear();
  }
  if (b.price == acc.price) acc.bids.push_back(b);
}

struct HighestOfAuction : AggregateFunction<Bid, HighestBids, HighestBids> {
  HighestBids createAccumulator() override { return {}; }
  HighestBids add(const Bid& b, HighestBids acc) override {
    keepHighest(acc, b);
    return acc;
  }
  HighestBids getResult(const HighestBids& acc) override { return acc; }
  HighestBids merge(HighestBids a, const HighestBids& b) override {
    for (const Bid& bid : b.bids) keepHighest(a, bid);
    return a;
  }
};

struct HighestOfAll : AggregateFunction<HighestBids, HighestBids, HighestBids> {
  HighestBids createAccumulator() override { return {}; }
  HighestBids add(const HighestBids& in, HighestBids acc) override { return merge(std::move(acc), in); }
  HighestBids getResult(const HighestBids& acc) override { return acc; }
  HighestBids merge(HighestBids a, const HighestBids& b) override {
    for (const Bid& bid : b.bids) keepHighest(a, bid);
    return a;
  }
};

}  // namespace

// q7: per tumbling 10 s window, the bids with the highest price. Each auction's highest
// bids first (in parallel), then the highest of those in one instance.
DataStream<Q7Result> q7(DataStream<Event> events) {
  return bids(events)
      .keyBy([](const Bid& b) { return b.auction; })
      .window(TumblingEventTimeWindows::of(milliseconds(kQ7Window)))
      .aggregate(HighestOfAuction{})
      .name("q7 Highest per Auction")
      .windowAll(TumblingEventTimeWindows::of(milliseconds(kQ7Window)))
      .aggregate(HighestOfAll{})
      .process<Q7Result>([](const HighestBids& h, ProcessFunction<HighestBids, Q7Result>::Context& ctx,
                            Collector<Q7Result>& out) {
        for (const Bid& b : h.bids) out.collect({b, *ctx.timestamp() + 1});
      })
      .name("q7 Highest");
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

}  // namespace weir::nexmark
