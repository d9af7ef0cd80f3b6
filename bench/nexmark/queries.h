// The Nexmark queries as weir DataStream jobs. Each takes the event stream (with event
// timestamps and watermarks) and returns its result stream; the driver sinks it to a
// DiscardingSink, the tests to a CollectSink. The SQL each one follows is in
// bench/nexmark/README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nexmark/model.h"
#include "weir/weir.h"

namespace weir::nexmark {

// q1, q14: dollars to euros.
inline constexpr double kDollarToEuro = 0.908;

struct Q1Result {
  int64_t auction = 0;
  int64_t bidder = 0;
  double price = 0;
  int64_t dateTime = 0;
  std::string extra;
  bool operator==(const Q1Result&) const = default;
};
WEIR_STRUCT(Q1Result, auction, bidder, price, dateTime, extra);

struct Q2Result {
  int64_t auction = 0;
  int64_t price = 0;
  bool operator==(const Q2Result&) const = default;
};
WEIR_STRUCT(Q2Result, auction, price);

// q5: an auction with the most bids of a sliding window, and how many.
struct Q5Result {
  int64_t auction = 0;
  int64_t count = 0;
  int64_t windowEnd = 0;
  bool operator==(const Q5Result&) const = default;
};
WEIR_STRUCT(Q5Result, auction, count, windowEnd);

// q7: a bid with the highest price of its tumbling window, made in the window or at
// exactly its end (the SQL's BETWEEN window_end - 10 s AND window_end).
struct Q7Result {
  Bid bid;
  int64_t windowEnd = 0;
  bool operator==(const Q7Result&) const = default;
};
WEIR_STRUCT(Q7Result, bid, windowEnd);

// q8: a person who opened an auction in the tumbling window they registered in.
struct Q8Result {
  int64_t id = 0;
  std::string name;
  int64_t startTime = 0;
  bool operator==(const Q8Result&) const = default;
};
WEIR_STRUCT(Q8Result, id, name, startTime);

// q11: a bidder's session and its bids.
struct Q11Result {
  int64_t bidder = 0;
  int64_t count = 0;
  int64_t start = 0;
  int64_t end = 0;
  bool operator==(const Q11Result&) const = default;
};
WEIR_STRUCT(Q11Result, bidder, count, start, end);

// q12: a bidder's bids in a processing-time window, the same fields.
using Q12Result = Q11Result;

struct Q14Result {
  int64_t auction = 0;
  int64_t bidder = 0;
  double price = 0;
  std::string bidTimeType;
  int64_t dateTime = 0;
  std::string extra;
  int64_t cCounts = 0;
  bool operator==(const Q14Result&) const = default;
};
WEIR_STRUCT(Q14Result, auction, bidder, price, bidTimeType, dateTime, extra, cCounts);

// q3: a seller in Oregon, Idaho or California and their auction in category 10.
struct Q3Result {
  std::string name;
  std::string city;
  std::string state;
  int64_t id = 0;
  bool operator==(const Q3Result&) const = default;
};
WEIR_STRUCT(Q3Result, name, city, state, id);

// q4: the running average closing price of a category: AVG of a BIGINT, a BIGINT (the
// sum divided by the count, truncated toward zero).
struct Q4Result {
  int64_t category = 0;
  int64_t average = 0;
  bool operator==(const Q4Result&) const = default;
};
WEIR_STRUCT(Q4Result, category, average);

// q9 (and q20): an auction and a bid on it.
struct AuctionBid {
  Auction auction;
  Bid bid;
  bool operator==(const AuctionBid&) const = default;
};
WEIR_STRUCT(AuctionBid, auction, bid);

// q17: the running statistics of an auction's bids on one day, in the SQL's column order
// (avg_price before sum_price); the average is a BIGINT, truncated toward zero.
struct Q17Result {
  int64_t auction = 0;
  std::string day;
  int64_t totalBids = 0;
  int64_t rank1Bids = 0;  // price < 10,000
  int64_t rank2Bids = 0;  // 10,000 <= price < 1,000,000
  int64_t rank3Bids = 0;  // price >= 1,000,000
  int64_t minPrice = 0;
  int64_t maxPrice = 0;
  int64_t avgPrice = 0;
  int64_t sumPrice = 0;
  bool operator==(const Q17Result&) const = default;
};
WEIR_STRUCT(Q17Result, auction, day, totalBids, rank1Bids, rank2Bids, rank3Bids, minPrice, maxPrice, avgPrice, sumPrice);

// q15: per day, bids, distinct bidders and distinct auctions, in total and per price band
// (rank 1: price < 10,000; rank 2: < 1,000,000; rank 3: the rest).
struct Q15Result {
  std::string day;
  int64_t totalBids = 0, rank1Bids = 0, rank2Bids = 0, rank3Bids = 0;
  int64_t totalBidders = 0, rank1Bidders = 0, rank2Bidders = 0, rank3Bidders = 0;
  int64_t totalAuctions = 0, rank1Auctions = 0, rank2Auctions = 0, rank3Auctions = 0;
  bool operator==(const Q15Result&) const = default;
};
WEIR_STRUCT(Q15Result, day, totalBids, rank1Bids, rank2Bids, rank3Bids, totalBidders, rank1Bidders, rank2Bidders,
            rank3Bidders, totalAuctions, rank1Auctions, rank2Auctions, rank3Auctions);

// q16: q15's columns per channel and day, and the latest minute (HH:mm, UTC) of a bid of
// the channel that day (max(DATE_FORMAT(dateTime, 'HH:mm'))).
struct Q16Result {
  std::string channel;
  std::string day;
  std::string minute;
  int64_t totalBids = 0, rank1Bids = 0, rank2Bids = 0, rank3Bids = 0;
  int64_t totalBidders = 0, rank1Bidders = 0, rank2Bidders = 0, rank3Bidders = 0;
  int64_t totalAuctions = 0, rank1Auctions = 0, rank2Auctions = 0, rank3Auctions = 0;
  bool operator==(const Q16Result&) const = default;
};
WEIR_STRUCT(Q16Result, channel, day, minute, totalBids, rank1Bids, rank2Bids, rank3Bids, totalBidders, rank1Bidders,
            rank2Bidders, rank3Bidders, totalAuctions, rank1Auctions, rank2Auctions, rank3Auctions);

// q21: a bid and the channel id its channel or url names.
struct Q21Result {
  int64_t auction = 0;
  int64_t bidder = 0;
  int64_t price = 0;
  std::string channel;
  std::string channelId;
  bool operator==(const Q21Result&) const = default;
};
WEIR_STRUCT(Q21Result, auction, bidder, price, channel, channelId);

// q22: a bid and the first three directories of its url (NULL past its last part).
struct Q22Result {
  int64_t auction = 0;
  int64_t bidder = 0;
  int64_t price = 0;
  std::string channel;
  std::optional<std::string> dir1;
  std::optional<std::string> dir2;
  std::optional<std::string> dir3;
  bool operator==(const Q22Result&) const = default;
};
WEIR_STRUCT(Q22Result, auction, bidder, price, channel, dir1, dir2, dir3);

// The window sizes of the queries (ms).
inline constexpr int64_t kQ5Size = 10'000, kQ5Slide = 2'000;
inline constexpr int64_t kQ7Window = 10'000;
inline constexpr int64_t kQ8Window = 10'000;
inline constexpr int64_t kQ11Gap = 10'000;
inline constexpr int64_t kQ12Window = 10'000;

// The bids of the stream.
DataStream<Bid> bids(DataStream<Event> events);
DataStream<Person> persons(DataStream<Event> events);
DataStream<Auction> auctions(DataStream<Event> events);

DataStream<Bid> q0(DataStream<Event> events);
DataStream<Q1Result> q1(DataStream<Event> events);
DataStream<Q2Result> q2(DataStream<Event> events);
DataStream<Q5Result> q5(DataStream<Event> events);
DataStream<Q7Result> q7(DataStream<Event> events);
DataStream<Q8Result> q8(DataStream<Event> events);
DataStream<Q11Result> q11(DataStream<Event> events);
DataStream<Q12Result> q12(DataStream<Event> events);
DataStream<Q14Result> q14(DataStream<Event> events);
DataStream<Q3Result> q3(DataStream<Event> events);
DataStream<AuctionBid> q9(DataStream<Event> events);
DataStream<Q4Result> q4(DataStream<Event> events);
DataStream<Q15Result> q15(DataStream<Event> events);
DataStream<Q16Result> q16(DataStream<Event> events);
DataStream<Q17Result> q17(DataStream<Event> events);
DataStream<Bid> q18(DataStream<Event> events);
DataStream<Bid> q19(DataStream<Event> events);
DataStream<AuctionBid> q20(DataStream<Event> events);
DataStream<Q21Result> q21(DataStream<Event> events);
DataStream<Q22Result> q22(DataStream<Event> events);

// Rules shared with the tests.
std::string bidTimeType(int64_t dateTime);
int64_t countChar(const std::string& s, char c);
std::string dayOf(int64_t dateTime);  // yyyy-MM-dd (UTC)
int priceBand(int64_t price);          // q15, q16, q17: 1, 2 or 3
// q21's REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2), or nullopt.
std::optional<std::string> channelIdOf(const std::string& url);
// SPLIT_INDEX(s, '/', i): the i-th (from 0) part of `s` split at every '/' (empty parts
// kept), or nullopt (NULL) past the last part; an empty `s` has no parts.
std::optional<std::string> splitIndex(const std::string& s, int i);

}  // namespace weir::nexmark
