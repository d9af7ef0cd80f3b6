// The source behind fromElements / fromCollection: a fixed list, read by one reader.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "weir/source.h"

namespace weir::detail {

template <class T>
class CollectionSource final : public Source<T> {
 public:
  explicit CollectionSource(std::vector<T> elements)
      : elements_(std::make_shared<const std::vector<T>>(std::move(elements))) {}

  Boundedness getBoundedness() const override { return Boundedness::BOUNDED; }
  int maxParallelism() const override { return 1; }
  bool supportsCheckpointing() const override { return true; }
  std::unique_ptr<SplitEnumerator> createEnumerator(int) const override { return nullptr; }
  std::unique_ptr<SourceReader<T>> createReader(const SourceReaderContext&) const override {
    return std::make_unique<Reader>(elements_);
  }

 private:
  class Reader final : public SourceReader<T> {
   public:
    explicit Reader(std::shared_ptr<const std::vector<T>> elements) : elements_(std::move(elements)) {}
    InputStatus pollNext(std::vector<T>& out, size_t maxRecords) override {
      size_t end = std::min(elements_->size(), next_ + maxRecords);
      out.insert(out.end(), elements_->begin() + static_cast<std::ptrdiff_t>(next_),
                 elements_->begin() + static_cast<std::ptrdiff_t>(end));
      next_ = end;
      return next_ == elements_->size() ? InputStatus::END_OF_INPUT : InputStatus::MORE_AVAILABLE;
    }

    // The position of the next element.
    std::vector<std::string> snapshotState(int64_t) override { return {std::to_string(next_)}; }
    void addSplits(std::vector<std::string> splits) override {
      for (const auto& s : splits) next_ = std::max(next_, static_cast<size_t>(std::stoull(s)));
    }

   private:
    std::shared_ptr<const std::vector<T>> elements_;
    size_t next_ = 0;
  };

  std::shared_ptr<const std::vector<T>> elements_;
};

}  // namespace weir::detail
