#include "nexmark/generator.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "nexmark/java_random.h"

namespace weir::nexmark {
namespace {

constexpr int64_t kFirstPersonId = 1000, kFirstAuctionId = 1000, kFirstCategoryId = 10, kNumCategories = 5;
constexpr int64_t kPersonProportion = 1, kAuctionProportion = 3, kTotalProportion = 50;
constexpr int64_t kPersonIdLead = 10, kAuctionIdLead = 10;
constexpr int64_t kHotSellerRatio = 100, kHotAuctionRatio = 100, kHotBidderRatio = 100;

constexpr std::array<const char*, 11> kFirstNames{"Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                                  "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::array<const char*, 9> kLastNames{"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                                "Walton", "Smith",  "Jones",   "Noris"};
constexpr std::array<const char*, 10> kCities{"Phoenix",  "Los Angeles", "San Francisco", "Boise", "Portland",
                                              "Bend",     "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
constexpr std::array<const char*, 6> kStates{"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::array<const char*, 4> kHotChannels{"Google", "Facebook", "Baidu", "Apple"};

int64_t lastBase0PersonId(int64_t id) {
  int64_t epoch = id / kTotalProportion, offset = id % kTotalProportion;
  if (offset >= kPersonProportion) offset = kPersonProportion - 1;
  return epoch * kPersonProportion + offset;
}
int64_t lastBase0AuctionId(int64_t id) {
  int64_t epoch = id / kTotalProportion, offset = id % kTotalProportion;
  if (offset < kPersonProportion) {
    --epoch;
    offset = kAuctionProportion - 1;
  } else if (offset >= kPersonProportion + kAuctionProportion) {
    offset = kAuctionProportion - 1;
  } else {
    offset -= kPersonProportion;
  }
  return epoch * kAuctionProportion + offset;
}
int64_t nextBase0PersonId(const GeneratorConfig& c, int64_t id, JavaRandom& rnd) {
  int64_t people = lastBase0PersonId(id) + 1;
  int64_t active = std::min(people, c.numActivePeople);
  return people - active + rnd.nextLong(active + kPersonIdLead);
}
int64_t nextBase0AuctionId(const GeneratorConfig& c, int64_t id, JavaRandom& rnd) {
  int64_t maxAuction = lastBase0AuctionId(id);
  int64_t minAuction = std::max<int64_t>(maxAuction - c.numInFlightAuctions, 0);
  return minAuction + rnd.nextLong(maxAuction - minAuction + 1 + kAuctionIdLead);
}

// 3 to max − 1 letters, each a `special` one time in 13, trimmed of spaces at both ends.
// Written into a buffer on the stack (so max ≤ 129) and copied out once, trimmed.
std::string nextString(JavaRandom& rnd, int max, char special = ' ') {
  char letters[128];
  int length = 3 + rnd.nextInt(max - 3);
  for (int i = 0; i < length; ++i) letters[i] = rnd.nextLetter(special);
  std::string_view s(letters, static_cast<size_t>(length));
  size_t first = s.find_first_not_of(' ');
  if (first == std::string_view::npos) return "";
  return std::string(s.substr(first, s.find_last_not_of(' ') - first + 1));
}
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Letters a–z, uniform: the text a record's padding is a slice of. The reference draws
// every letter of every record; copying a slice of one fixed text costs a memcpy instead
// of a draw per letter (which took a quarter of the generator's time), and the padding's
// only use, q14's count of 'c's, sees the same distribution.
constexpr size_t kPaddingStarts = size_t{1} << 16, kPaddingSlice = 4096;
const std::string& paddingText() {
  static const std::string text = [] {
    std::string t(kPaddingStarts + kPaddingSlice, '\0');
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<char>('a' + mix(i) % 26);
    return t;
  }();
  return text;
}
// Exactly `length` letters: slices of the padding text from a drawn start.
std::string nextExactString(JavaRandom& rnd, int64_t length) {
  const std::string& text = paddingText();
  if (length > 0 && static_cast<size_t>(length) <= kPaddingSlice)  // (no draw for no padding)
    return std::string(text.data() + rnd.nextInt(static_cast<int32_t>(kPaddingStarts)), static_cast<size_t>(length));
  std::string s;
  s.reserve(static_cast<size_t>(length));
  for (auto left = static_cast<size_t>(length); left > 0;) {
    size_t n = std::min(left, kPaddingSlice);
    s.append(text, static_cast<size_t>(rnd.nextInt(static_cast<int32_t>(kPaddingStarts))), n);
    left -= n;
  }
  return s;
}
// Padding that brings a record of `size` bytes to about `average` (±20% of the gap).
std::string nextExtra(JavaRandom& rnd, int64_t size, int64_t average) {
  if (size > average) return "";
  int64_t gap = average - size;
  auto delta = static_cast<int64_t>(static_cast<double>(gap) * 0.2 + 0.5);  // (≥ 0: the cast floors)
  int64_t length = gap - delta + (delta == 0 ? 0 : rnd.nextInt(static_cast<int32_t>(2 * delta)));
  return nextExactString(rnd, length);
}
// Cents, log-uniform from $1 to $1,000,000: the reference's 10^(6u), as e^(6u·ln 10),
// which costs a third of pow.
int64_t nextPrice(JavaRandom& rnd) {
  return static_cast<int64_t>(std::exp(rnd.nextDouble() * (6 * std::numbers::ln10)) * 100 + 0.5);  // (the cast floors)
}

int64_t timestampOf(const GeneratorConfig& c, int64_t m) {
  double delayUs = 1'000'000.0 / c.eventRate;
  return c.baseTime + static_cast<int64_t>(static_cast<double>(m) * delayUs) / 1000;
}

// A channel's url, from a generator seeded with the channel (the reference draws it from
// an unseeded one): three path parts of 3–4 letters or '_', and for 9 channels in 10
// "&channel_id=" and the channel's id reversed bitwise.
std::string channelUrl(int32_t channel) {
  JavaRandom rnd(channel);
  std::string url = "https://www.nexmark.com";
  for (int part = 0; part < 3; ++part) url.append("/").append(nextString(rnd, 5, '_'));
  url += "/item.htm?query=1";
  if (rnd.nextInt(10) > 0) {
    uint32_t reversed = 0, v = static_cast<uint32_t>(channel);
    for (int i = 0; i < 32; ++i, v >>= 1) reversed = (reversed << 1) | (v & 1);
    url += "&channel_id=" + std::to_string(std::abs(static_cast<int64_t>(static_cast<int32_t>(reversed))));
  }
  return url;
}

constexpr int32_t kChannels = 10000;

// Every channel's url, then the hot channels' (the reference caches them too), end to
// end in one block of about 730 KB: a bid's url is one copy out of it. (Assembling the
// url per bid from 24 bytes of parts, as before, took 15% longer a bid on a machine
// with 2 MiB of L2 cache, where the block stays; on the AMD EPYC of earlier runs the
// parts were the faster: see bench/README.md.)
class ChannelUrls {
 public:
  static const ChannelUrls& get() {
    static const ChannelUrls urls;
    return urls;
  }
  std::string_view operator[](size_t channel) const {
    return std::string_view(text_).substr(start_[channel], start_[channel + 1] - start_[channel]);
  }

 private:
  ChannelUrls() {
    for (int32_t c = 0; c < kChannels + 4; ++c) {
      start_[static_cast<size_t>(c)] = static_cast<uint32_t>(text_.size());
      text_ += channelUrl(c < kChannels ? c : kChannels - 1 - c);
    }
    start_.back() = static_cast<uint32_t>(text_.size());
  }
  std::string text_;
  std::array<uint32_t, kChannels + 5> start_{};
};

void person(const GeneratorConfig& c, int64_t id, int64_t time, JavaRandom& rnd, Person& p) {
  p.id = lastBase0PersonId(id) + kFirstPersonId;
  p.name = std::string(kFirstNames[static_cast<size_t>(rnd.nextInt(11))]) + " " + kLastNames[static_cast<size_t>(rnd.nextInt(9))];
  p.emailAddress = nextString(rnd, 7) + "@" + nextString(rnd, 5) + ".com";
  char card[19];  // four groups of four digits, zero-padded, apart by spaces
  for (int group = 0; group < 4; ++group) {
    int digits = rnd.nextInt(10000);
    for (int i = 3; i >= 0; --i, digits /= 10) card[group * 5 + i] = static_cast<char>('0' + digits % 10);
    if (group < 3) card[group * 5 + 4] = ' ';
  }
  p.creditCard.assign(card, sizeof card);
  p.city = kCities[static_cast<size_t>(rnd.nextInt(10))];
  p.state = kStates[static_cast<size_t>(rnd.nextInt(6))];
  p.dateTime = time;
  auto size = static_cast<int64_t>(8 + p.name.size() + p.emailAddress.size() + p.creditCard.size() + p.city.size() +
                                   p.state.size());
  p.extra = nextExtra(rnd, size, c.avgPersonBytes);
}

void auction(const GeneratorConfig& c, int64_t m, int64_t id, int64_t time, JavaRandom& rnd, Auction& a) {
  a.id = lastBase0AuctionId(id) + kFirstAuctionId;
  a.seller = (rnd.nextInt(c.hotSellersRatio) > 0 ? (lastBase0PersonId(id) / kHotSellerRatio) * kHotSellerRatio
                                                 : nextBase0PersonId(c, id, rnd)) +
             kFirstPersonId;
  a.category = kFirstCategoryId + rnd.nextInt(static_cast<int32_t>(kNumCategories));
  a.initialBid = nextPrice(rnd);
  // Open until about when numInFlightAuctions more auctions have started.
  const int64_t ahead = c.numInFlightAuctions * kTotalProportion / kAuctionProportion;
  int64_t horizon = timestampOf(c, m + ahead) - timestampOf(c, m);
  a.dateTime = time;
  a.expires = time + 1 + rnd.nextLong(std::max<int64_t>(2 * horizon, 1));
  a.itemName = nextString(rnd, 20);
  a.description = nextString(rnd, 100);
  a.reserve = a.initialBid + nextPrice(rnd);
  a.extra = nextExtra(rnd, static_cast<int64_t>(8 + a.itemName.size() + a.description.size() + 40), c.avgAuctionBytes);
}

void bid(const GeneratorConfig& c, int64_t id, int64_t time, JavaRandom& rnd, Bid& b) {
  b.auction = (rnd.nextInt(c.hotAuctionRatio) > 0 ? (lastBase0AuctionId(id) / kHotAuctionRatio) * kHotAuctionRatio
                                                  : nextBase0AuctionId(c, id, rnd)) +
              kFirstAuctionId;
  b.bidder = (rnd.nextInt(c.hotBiddersRatio) > 0 ? (lastBase0PersonId(id) / kHotBidderRatio) * kHotBidderRatio + 1
                                                 : nextBase0PersonId(c, id, rnd)) +
             kFirstPersonId;
  b.price = nextPrice(rnd);
  if (rnd.nextInt(2) > 0) {
    int32_t i = rnd.nextInt(4);
    b.channel = kHotChannels[static_cast<size_t>(i)];
    b.url = ChannelUrls::get()[static_cast<size_t>(kChannels + i)];
  } else {
    int32_t channel = rnd.nextInt(kChannels);
    char name[24] = "channel-";
    b.channel.assign(name, static_cast<size_t>(std::to_chars(name + 8, name + sizeof name, channel).ptr - name));
    b.url = ChannelUrls::get()[static_cast<size_t>(channel)];
  }
  b.dateTime = time;
  b.extra = nextExtra(rnd, 32, c.avgBidBytes);
}

}  // namespace

void generateEvent(const GeneratorConfig& c, int64_t m, Event& e) {
  const int64_t id = m;  // one generator, events in order: the id is the event number
  int64_t time = timestampOf(c, m);
  uint64_t h = mix(static_cast<uint64_t>(m) ^ mix(c.seed));
  if (static_cast<double>(h >> 11) * 0x1.0p-53 < c.probDelayed) time -= 1 + static_cast<int64_t>(mix(h) % static_cast<uint64_t>(c.maxDelayMs));
  JavaRandom rnd(id + static_cast<int64_t>(c.seed * 0x9e3779b97f4a7c15ull));
  int64_t slot = id % kTotalProportion;
  if (slot < kPersonProportion) person(c, id, time, rnd, e.person.emplace());
  else if (slot < kPersonProportion + kAuctionProportion) auction(c, m, id, time, rnd, e.auction.emplace());
  else bid(c, id, time, rnd, e.bid.emplace());
}

Event generateEvent(const GeneratorConfig& c, int64_t m) {
  Event e;
  generateEvent(c, m, e);
  return e;
}

WatermarkStrategy<Event> nexmarkWatermarks(const GeneratorConfig& config) {
  return WatermarkStrategy<Event>::forBoundedOutOfOrderness(std::chrono::milliseconds(config.maxDelayMs))
      .withTimestampAssigner([](const Event& e) { return e.dateTime(); });
}

namespace {

// Event numbers first, first + stride, ... below the configured count.
struct StrideSplit final : SourceSplit {
  StrideSplit(int64_t f, int64_t s) : first(f), stride(s) {}
  std::string splitId() const override { return std::to_string(first) + "/" + std::to_string(stride); }
  int64_t first;
  int64_t stride;
};

class Reader final : public SourceReader<Event> {
 public:
  Reader(std::shared_ptr<const GeneratorConfig> config, SplitEnumerator* enumerator, int subtask)
      : config_(std::move(config)), enumerator_(enumerator), subtask_(subtask) {}

  InputStatus pollNext(std::vector<Event>& out, size_t maxRecords) override {
    while (next_ >= config_->events) {
      if (!restored_.empty()) {
        std::tie(next_, stride_) = restored_.front();
        restored_.pop_front();
        continue;
      }
      auto split = enumerator_->nextSplit(subtask_);
      if (!split) return InputStatus::END_OF_INPUT;
      auto& s = static_cast<StrideSplit&>(*split);
      next_ = s.first;
      stride_ = s.stride;
    }
    for (size_t i = 0; i < maxRecords && next_ < config_->events; ++i, next_ += stride_)
      generateEvent(*config_, next_, out.emplace_back());
    return InputStatus::MORE_AVAILABLE;
  }

  // "next:stride" of the split being read and of restored ones not yet begun.
  std::vector<std::string> snapshotState(int64_t) override {
    std::vector<std::string> out;
    if (next_ < config_->events) out.push_back(std::to_string(next_) + ":" + std::to_string(stride_));
    for (auto [next, stride] : restored_) out.push_back(std::to_string(next) + ":" + std::to_string(stride));
    return out;
  }
  void addSplits(std::vector<std::string> splits) override {
    for (const auto& s : splits) {
      auto colon = s.find(':');
      if (colon == std::string::npos) throw Error(ErrorCode::kCheckpoint, "NexmarkSource: bad split state '" + s + "'");
      restored_.emplace_back(std::stoll(s.substr(0, colon)), std::stoll(s.substr(colon + 1)));
    }
  }

 private:
  std::shared_ptr<const GeneratorConfig> config_;
  SplitEnumerator* enumerator_;
  int subtask_;
  std::deque<std::pair<int64_t, int64_t>> restored_;
  int64_t next_ = std::numeric_limits<int64_t>::max();
  int64_t stride_ = 1;
};

}  // namespace

NexmarkSource::NexmarkSource(GeneratorConfig config) : config_(std::make_shared<const GeneratorConfig>(config)) {
  if (config.events < 0) throw Error(ErrorCode::kInvalidArgument, "nexmark: the number of events must be >= 0");
  if (!(config.eventRate > 0)) throw Error(ErrorCode::kInvalidArgument, "nexmark: the event rate must be positive");
  if (config.maxDelayMs < 1) throw Error(ErrorCode::kInvalidArgument, "nexmark: the largest delay must be >= 1 ms");
}

std::unique_ptr<SplitEnumerator> NexmarkSource::createEnumerator(int parallelism) const {
  std::vector<std::deque<std::unique_ptr<SourceSplit>>> splits(static_cast<size_t>(parallelism));
  for (int r = 0; r < parallelism; ++r) splits[static_cast<size_t>(r)].push_back(std::make_unique<StrideSplit>(r, parallelism));
  return std::make_unique<StaticSplitEnumerator>(std::move(splits));
}

std::unique_ptr<SourceReader<Event>> NexmarkSource::createReader(const SourceReaderContext& context) const {
  return std::make_unique<Reader>(config_, context.enumerator, context.subtaskIndex);
}

}  // namespace weir::nexmark
