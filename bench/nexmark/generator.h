// The Nexmark event generator as a weir source. Event number m is a pure function of m
// and the configuration (every event draws from its own java.util.Random seeded with its
// id, as the reference generator of Apache Beam does), so a stream is the same for the
// same seed whatever the parallelism: reader r of P generates m = r, r + P, r + 2P, ...
// and all readers move through event time together. Where each rule comes from is in
// bench/nexmark/README.md.
#pragma once

#include <cstdint>
#include <memory>

#include "nexmark/model.h"
#include "weir/weir.h"

namespace weir::nexmark {

struct GeneratorConfig {
  int64_t events = 1'000'000;
  // Event time moves 1e6 / eventRate µs per event (the reference's firstEventRate).
  double eventRate = 10'000;
  // 2015-07-15T00:00:00Z, Beam's base time: a fixed start keeps runs comparable.
  int64_t baseTime = 1'436'918'400'000;
  // Events whose id mixes with the seed below probDelayed are stamped up to maxDelayMs
  // (at least 1 ms) earlier than their place in the stream: they arrive out of order.
  double probDelayed = 0.1;
  int64_t maxDelayMs = 3'000;
  uint64_t seed = 0;
  // The reference's defaults.
  int hotAuctionRatio = 2;
  int hotSellersRatio = 4;
  int hotBiddersRatio = 4;
  int64_t numActivePeople = 1000;
  int64_t numInFlightAuctions = 100;
  int avgPersonBytes = 200;
  int avgAuctionBytes = 500;
  int avgBidBytes = 100;
};

// Event number m of the stream, into an empty `out` or as a new event.
void generateEvent(const GeneratorConfig& config, int64_t m, Event& out);
Event generateEvent(const GeneratorConfig& config, int64_t m);

// The timestamps and watermarks the queries expect: each event's dateTime, with the
// delayed events' bound as the out-of-orderness, so no event is late.
WatermarkStrategy<Event> nexmarkWatermarks(const GeneratorConfig& config);

// config.events events, split into parallel readers by stride; checkpointable.
class NexmarkSource final : public Source<Event> {
 public:
  explicit NexmarkSource(GeneratorConfig config);
  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  bool supportsCheckpointing() const override { return true; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int parallelism) const override;
  std::unique_ptr<SourceReader<Event>> createReader(const SourceReaderContext& context) const override;

 private:
  std::shared_ptr<const GeneratorConfig> config_;
};

}  // namespace weir::nexmark
