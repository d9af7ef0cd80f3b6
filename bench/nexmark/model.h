// The Nexmark data model: an online auction's people, auctions and bids, as one event
// stream (the shape of the Nexmark project's generator: an event holds exactly one of
// the three). Times are milliseconds since the epoch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "weir/weir.h"

namespace weir::nexmark {

struct Person {
  int64_t id = 0;
  std::string name;
  std::string emailAddress;
  std::string creditCard;
  std::string city;
  std::string state;
  int64_t dateTime = 0;
  std::string extra;
  bool operator==(const Person&) const = default;
};
WEIR_STRUCT(Person, id, name, emailAddress, creditCard, city, state, dateTime, extra);

struct Auction {
  int64_t id = 0;
  std::string itemName;
  std::string description;
  int64_t initialBid = 0;
  int64_t reserve = 0;
  int64_t dateTime = 0;
  int64_t expires = 0;
  int64_t seller = 0;
  int64_t category = 0;
  std::string extra;
  bool operator==(const Auction&) const = default;
};
WEIR_STRUCT(Auction, id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra);

struct Bid {
  int64_t auction = 0;
  int64_t bidder = 0;
  int64_t price = 0;
  std::string channel;
  std::string url;
  int64_t dateTime = 0;
  std::string extra;
  bool operator==(const Bid&) const = default;
};
WEIR_STRUCT(Bid, auction, bidder, price, channel, url, dateTime, extra);

// One event of the stream: exactly one of the three is set.
struct Event {
  // Written out so that a new event is not zeroed first (512 bytes, for nothing: the
  // optionals start empty anyway), as value-initialization does with an implicit one.
  Event() noexcept {}  // NOLINT(modernize-use-equals-default)
  std::optional<Person> person;
  std::optional<Auction> auction;
  std::optional<Bid> bid;
  int64_t dateTime() const { return person ? person->dateTime : auction ? auction->dateTime : bid->dateTime; }
  bool operator==(const Event&) const = default;
};
WEIR_STRUCT(Event, person, auction, bid);

}  // namespace weir::nexmark
