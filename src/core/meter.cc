#include "weir/meter.h"

#include "weir/detail/core/meter_window.h"

namespace weir {

void Meter::markEvent(uint64_t n) const {
  if (window_ != nullptr) window_->mark(n);
}

double Meter::getRate() const { return window_ != nullptr ? window_->rate(detail::MeterWindow::Clock::now()) : 0; }

uint64_t Meter::getCount() const { return window_ != nullptr ? window_->count() : 0; }

}  // namespace weir
