// Which bucket (a sub-folder of the file sink's base path) a record is written into
// (Flink's BucketAssigner): DateTimeBucketAssigner, the default, makes one folder per
// hour of processing time; BasePathBucketAssigner writes into the base path itself.
#pragma once

#include <cstdint>
#include <string>

namespace weir {

namespace detail {
// Formats processing time by a Java DateTimeFormatter pattern of the letters y, M, d,
// H, m and s, and 'quoted' text; any other letter is an error naming it.
class DateTimeBucketFormat {
 public:
  // `zoneId`: "" for the machine's time zone, "UTC" (or "Z") for UTC; anything else is
  // an error naming it.
  DateTimeBucketFormat(const std::string& pattern, const std::string& zoneId);
  // The bucket of `millis`; the same string as the last call while the second is the same.
  const std::string& format(int64_t millis);

 private:
  std::string strftimePattern_;
  bool utc_;
  int64_t cachedSecond_ = INT64_MIN;
  std::string cached_;
};
}  // namespace detail

template <class T>
class BucketAssigner {
 public:
  // What an assigner may use besides the record.
  class Context {
   public:
    explicit Context(int64_t processingTime) : processingTime_(processingTime) {}
    // The job's clock (env.setClock) when the record reached the sink.
    int64_t currentProcessingTime() const { return processingTime_; }

   private:
    int64_t processingTime_;
  };

  virtual ~BucketAssigner() = default;
  // The bucket of `element`: a path relative to the base path ("" is the base path
  // itself), made of folder names separated by '/'. Each sink subtask calls its own
  // copy, so an assigner may cache.
  virtual std::string getBucketId(const T& element, const Context& context) = 0;
};

// Every record into the base path itself.
template <class T>
class BasePathBucketAssigner final : public BucketAssigner<T> {
 public:
  std::string getBucketId(const T&, const typename BucketAssigner<T>::Context&) override { return {}; }
};

// One bucket per period of processing time, named by a date-time pattern (default
// "yyyy-MM-dd--HH": a folder per hour) in the machine's time zone, or in `zoneId`
// ("UTC").
template <class T>
class DateTimeBucketAssigner final : public BucketAssigner<T> {
 public:
  explicit DateTimeBucketAssigner(std::string formatString = "yyyy-MM-dd--HH", std::string zoneId = "")
      : format_(formatString, zoneId) {}
  std::string getBucketId(const T&, const typename BucketAssigner<T>::Context& context) override {
    return format_.format(context.currentProcessingTime());
  }

 private:
  detail::DateTimeBucketFormat format_;
};

}  // namespace weir
