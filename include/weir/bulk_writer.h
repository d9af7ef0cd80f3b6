// How a bulk-format file sink writes a whole part file (Flink's BulkWriter): for formats
// that cannot be cut at any byte (columnar, compressed, with a footer), so their part
// files roll at every checkpoint and are never resumed.
#pragma once

#include <memory>
#include <string>

namespace weir {

template <class T>
class BulkWriter {
 public:
  // Makes the writer of each new part file (Flink's BulkWriter.Factory). Each sink
  // subtask uses its own copy.
  class Factory {
   public:
    virtual ~Factory() = default;
    virtual std::unique_ptr<BulkWriter> create() = 0;
  };

  virtual ~BulkWriter() = default;
  // Adds a record; appends to `out` the bytes that are ready (perhaps none: a writer
  // may hold rows until it has a block).
  virtual void addElement(const T& element, std::string& out) = 0;
  // The part file ends (at a checkpoint, or at the end of input): appends what is left
  // (rows held back, a footer). The writer is not used after.
  virtual void finish(std::string& out) = 0;
};

}  // namespace weir
