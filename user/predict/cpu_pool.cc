#include "predict/cpu_pool.h"

#include <algorithm>

namespace jackdaw::predict {

double CpuPool::Rate() const {
  const double k = static_cast<double>(heap_.size());
  return k == 0 ? 0 : std::min(1.0, capacity_ / (k + background_));
}

void CpuPool::Advance(double now) {
  if (now <= now_) return;
  const double dt = now - now_;
  v_ += dt * Rate();
  busy_ += dt * Rate() * static_cast<double>(heap_.size());
  now_ = now;
}

void CpuPool::Add(double now, uint64_t job, double work_ns) {
  Advance(now);
  heap_.push({v_ + work_ns, seq_++, job});
}

double CpuPool::NextCompletion() const {
  if (heap_.empty()) return std::numeric_limits<double>::infinity();
  return now_ + std::max(0.0, heap_.top().finish_v - v_) / Rate();
}

uint64_t CpuPool::PopCompleted(double now) {
  Advance(now);
  const uint64_t job = heap_.top().job;
  // The finishing burst's virtual deadline is now: rounding must not leave
  // the others behind it.
  v_ = std::max(v_, heap_.top().finish_v);
  heap_.pop();
  return job;
}

double CpuPool::BusyNs(double now) const {
  const double dt = now > now_ ? now - now_ : 0;
  return busy_ + dt * Rate() * static_cast<double>(heap_.size());
}

}  // namespace jackdaw::predict
