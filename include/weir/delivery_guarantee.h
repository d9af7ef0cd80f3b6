// What a sink promises about the records it writes when the job fails and resumes
// (Flink's DeliveryGuarantee).
#pragma once

namespace weir {

enum class DeliveryGuarantee {
  NONE,           // records may be lost or written twice
  AT_LEAST_ONCE,  // every record a completed checkpoint covers is written, some maybe twice
  EXACTLY_ONCE,   // every record a completed checkpoint covers is visible exactly once
};

}  // namespace weir
