#include "predict/scenario.h"

#include <cmath>
#include <cstdlib>

namespace jackdaw::predict {
namespace {

bool ParseNumber(const std::string& s, double* v) {
  char* end = nullptr;
  *v = strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0' && std::isfinite(*v);
}

std::string Labels(const RecordedWorkload& w) {
  std::string s;
  for (const RecordedKind& k : w.kinds) s += (s.empty() ? "" : ", ") + k.label;
  return s;
}

}  // namespace

StatusOr<Scale> ParseScale(const std::string& text) {
  const size_t colon = text.find(':'), eq = text.find('=');
  if (colon == std::string::npos || eq == std::string::npos || eq < colon)
    return ErrStatus("--scale '%s' is not KIND:RESOURCE=FACTOR; write e.g. --scale c0:cpu=0.7", text.c_str());
  Scale s;
  s.kind = text.substr(0, colon);
  s.resource = text.substr(colon + 1, eq - colon - 1);
  if (s.resource != "cpu" && s.resource != "disk" && s.resource != "wait")
    return ErrStatus("--scale '%s': resource '%s' is not one the model replays; use cpu, disk or wait", text.c_str(),
                     s.resource.c_str());
  if (!ParseNumber(text.substr(eq + 1), &s.factor) || s.factor < 0)
    return ErrStatus("--scale '%s': the factor must be a number of at least 0; write e.g. %s:%s=1.5", text.c_str(),
                     s.kind.c_str(), s.resource.c_str());
  return s;
}

StatusOr<MixShare> ParseMix(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return ErrStatus("--mix '%s' is not KIND=SHARE; write e.g. --mix c1=0.3", text.c_str());
  MixShare m;
  m.kind = text.substr(0, eq);
  if (!ParseNumber(text.substr(eq + 1), &m.share) || m.share < 0 || m.share > 1)
    return ErrStatus("--mix '%s': the share must be a fraction from 0 to 1; write e.g. %s=0.3", text.c_str(),
                     m.kind.c_str());
  return m;
}

StatusOr<std::vector<SimKind>> MakeKinds(const RecordedWorkload& w, const std::vector<Scale>& scales,
                                         const std::vector<MixShare>& mix) {
  std::vector<SimKind> kinds;
  for (const RecordedKind& k : w.kinds) {
    SimKind s;
    s.label = k.label;
    s.share = w.requests ? static_cast<double>(k.count) / static_cast<double>(w.requests) : 0;
    for (const RequestScript& r : k.scripts) s.scripts.push_back(&r);
    kinds.push_back(std::move(s));
  }
  auto find = [&](const std::string& label) -> SimKind* {
    for (SimKind& k : kinds)
      if (k.label == label) return &k;
    return nullptr;
  };
  for (const Scale& sc : scales) {
    SimKind* k = find(sc.kind);
    if (!k)
      return ErrStatus("--scale: kind '%s' is not in the recording; use one of its kinds (%s)", sc.kind.c_str(),
                       Labels(w).c_str());
    (sc.resource == "cpu" ? k->cpu_scale : sc.resource == "disk" ? k->disk_scale : k->wait_scale) *= sc.factor;
  }
  if (mix.empty()) return kinds;
  double given = 0, rest_recorded = 0;
  std::vector<bool> fixed(kinds.size(), false);
  for (const MixShare& m : mix) {
    SimKind* k = find(m.kind);
    if (!k)
      return ErrStatus("--mix: kind '%s' is not in the recording; use one of its kinds (%s)", m.kind.c_str(),
                       Labels(w).c_str());
    const size_t i = static_cast<size_t>(k - kinds.data());
    if (fixed[i]) return ErrStatus("--mix: kind '%s' is given twice; give each kind once", m.kind.c_str());
    fixed[i] = true;
    given += m.share;
  }
  for (size_t i = 0; i < kinds.size(); ++i)
    if (!fixed[i]) rest_recorded += kinds[i].share;
  constexpr double kSlack = 0.01;
  if (given > 1 + kSlack)
    return ErrStatus("--mix: the shares sum to %.3g, more than 1; give fractions of the arrivals that sum to 1 at most",
                     given);
  if (rest_recorded <= 0 && std::abs(given - 1) > kSlack)
    return ErrStatus("--mix: every kind is given and the shares sum to %.3g; make them sum to 1", given);
  if (given <= 0 && rest_recorded <= 0)
    return ErrStatus("--mix: no kind is left to arrive; give at least one kind a share above 0");
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (fixed[i]) continue;
    kinds[i].share = rest_recorded > 0 ? kinds[i].share / rest_recorded * std::max(0.0, 1 - given) : 0;
  }
  for (const MixShare& m : mix) find(m.kind)->share = m.share;
  return kinds;
}

}  // namespace jackdaw::predict
