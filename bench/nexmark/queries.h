// The Nexmark queries as weir DataStream jobs. Each takes the event stream (with event
// timestamps and watermarks) and returns its result stream; the driver sinks it to a
// DiscardingSink, the tests to a CollectSink. The SQL each one follows is in
// bench/nexmark/README.md.
#pragma once

#include <cstdint>
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

// q7: a bid with the highest price of its tumbling window.
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

// The window sizes of the queries (ms).
inline constexpr int64_t kQ5Size = 10'000, kQ5Slide = 2'000;
inline constexpr int64_t kQ7Window = 10'000;
inline constexpr int64_t kQ8Window = 10'000;
inline constexpr int64_t kQ11Gap = 10'000;

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
DataStream<Q14Result> q14(DataStream<Event> events);

// q14's rules, shared with its test.
std::string bidTimeType(int64_t dateTime);
int64_t countChar(const std::string& s, char c);

}  // namespace weir::nexmark
