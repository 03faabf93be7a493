#include "predict/cpu_pool.h"

#include <algorithm>

namespace jackdaw::predict {

void CpuPool::Rates(double* woken, double* rest) const {
  const double kw = static_cast<double>(cls_[1].heap.size());
  const double kr = static_cast<double>(cls_[0].heap.size());
  *woken = kw == 0 ? 0 : std::min(1.0, capacity_ / kw);
  const double left = std::max(0.0, capacity_ - kw * *woken);
  *rest = kr == 0 ? 0 : std::min(1.0, left / (kr + background_));
}

void CpuPool::Advance(double now) {
  if (now <= now_) return;
  const double dt = now - now_;
  double rw = 0, rr = 0;
  Rates(&rw, &rr);
  cls_[1].v += dt * rw;
  cls_[0].v += dt * rr;
  busy_ += dt * (rw * static_cast<double>(cls_[1].heap.size()) + rr * static_cast<double>(cls_[0].heap.size()));
  now_ = now;
}

void CpuPool::Add(double now, uint64_t job, double work_ns, bool woken) {
  Advance(now);
  Class& c = cls_[woken ? 1 : 0];
  c.heap.push({c.v + work_ns, seq_++, job});
}

double CpuPool::NextIn(int c, double rate) const {
  const Class& k = cls_[c];
  if (k.heap.empty() || rate <= 0) return std::numeric_limits<double>::infinity();
  return now_ + std::max(0.0, k.heap.top().finish_v - k.v) / rate;
}

double CpuPool::NextCompletion() const {
  double rw = 0, rr = 0;
  Rates(&rw, &rr);
  return std::min(NextIn(1, rw), NextIn(0, rr));
}

uint64_t CpuPool::PopCompleted(double now) {
  double rw = 0, rr = 0;
  Rates(&rw, &rr);
  // The class whose burst finishes first (woken ones on a tie).
  const int c = NextIn(1, rw) <= NextIn(0, rr) ? 1 : 0;
  Advance(now);
  Class& k = cls_[c];
  const uint64_t job = k.heap.top().job;
  // The finishing burst's virtual deadline is now: rounding must not leave
  // the others behind it.
  k.v = std::max(k.v, k.heap.top().finish_v);
  k.heap.pop();
  return job;
}

double CpuPool::BusyNs(double now) const {
  const double dt = now > now_ ? now - now_ : 0;
  double rw = 0, rr = 0;
  Rates(&rw, &rr);
  return busy_ + dt * (rw * static_cast<double>(cls_[1].heap.size()) + rr * static_cast<double>(cls_[0].heap.size()));
}

}  // namespace jackdaw::predict
