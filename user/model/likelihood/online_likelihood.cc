#include "model/likelihood/online_likelihood.h"

#include <cstring>

#include "model/likelihood/alergia.h"
#include "model/likelihood/calibration.h"

namespace jackdaw::model::likelihood {
namespace {

// A symbol past max_symbols: no automaton has it (below kEndSymbol, above
// every alphabet), so it takes the unknown-symbol outcome.
constexpr uint32_t kUnknownSymbol = kEndSymbol - 1;

// The cache slot of a name: its length and first and last (up to) 8 bytes,
// mixed. Names of one schema differ in those (sys_enter:read, sys_exit:read).
size_t Slot(const std::string& s, size_t slots) {
  uint64_t head = 0, tail = 0;
  const size_t n = s.size();
  std::memcpy(&head, s.data(), std::min<size_t>(n, 8));
  if (n > 8) std::memcpy(&tail, s.data() + n - 8, 8);
  const uint64_t h = (head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ n;
  return static_cast<size_t>(h >> 58) & (slots - 1);
}

}  // namespace

// A baseline saved before calibration: one 1 % branch (log 0.01 = -4.6) in
// a string of up to ~45 events.
constexpr double kUncalibratedThreshold = -0.1;

OnlineLikelihood::OnlineLikelihood(const OnlineOptions& options)
    : options_(options), threshold_(options.threshold.value_or(0)) {}

OnlineLikelihood::OnlineLikelihood(SavedModel baseline, const OnlineOptions& options)
    : options_(options),
      threshold_(options.threshold.value_or(baseline.unlikely_below.value_or(kUncalibratedThreshold))),
      learning_(false),
      automaton_(std::move(baseline.automaton)),
      has_model_(true) {
  for (uint32_t i = 0; i < baseline.symbols.size(); ++i) ids_.emplace(std::move(baseline.symbols[i]), i);
  next_id_ = static_cast<uint32_t>(baseline.symbols.size());
}

uint32_t OnlineLikelihood::Id(const std::string& symbol) {
  CacheSlot& slot = cache_[Slot(symbol, kCacheSlots)];
  if (slot.name && *slot.name == symbol) return slot.id;
  if (auto it = ids_.find(symbol); it != ids_.end()) {
    slot = {&it->first, it->second};
    return it->second;
  }
  // A baseline's symbols are fixed: anything else is unknown to it, and is
  // not interned (a stream of novel symbols must not grow the table).
  if (!learning_) return automaton_.alphabet_size();
  if (ids_.size() >= options_.max_symbols) {
    unlearnable_ = true;
    return kUnknownSymbol;
  }
  ids_.emplace(symbol, next_id_);
  return next_id_++;
}

OnlineLikelihood::Result OnlineLikelihood::Observe(const Request& request, const canonical::CanonicalRequest& c) {
  if (request.incomplete) return {};  // kept out, as analyze keeps it out
  buffer_.clear();
  cpu_buffer_.clear();
  unlearnable_ = false;
  for (const canonical::CanonicalEvent& e : c.events) {
    buffer_.push_back(Id(e.symbol));
    cpu_buffer_.push_back(e.demand.cpu_ns);
  }
  return Take(cpu_buffer_);
}

OnlineLikelihood::Result OnlineLikelihood::ObserveSymbols(const std::vector<std::string>& symbols) {
  buffer_.clear();
  unlearnable_ = false;
  for (const std::string& s : symbols) buffer_.push_back(Id(s));
  return Take({});
}

OnlineLikelihood::Result OnlineLikelihood::Take(std::span<const uint64_t> cpu_ns) {
  Result r;
  r.events = static_cast<uint32_t>(buffer_.size());
  // Scored by the model as it was before this request: a request does not
  // vouch for itself.
  if (has_model_) {
    r.scored = true;
    r.log_likelihood = automaton_.Score(buffer_);
    r.unlikely = r.log_likelihood < threshold_;
    ++stats_.scored;
    stats_.unlikely += r.unlikely;
  }
  if (!learning_) return r;
  if (unlearnable_) {
    ++stats_.not_learned;
    return r;
  }
  tree_.Add(buffer_, cpu_ns);
  ++stats_.learned;
  ++since_learn_;
  if (since_learn_ >= (has_model_ ? options_.relearn_every : options_.warmup)) Learn();
  if (tree_.states().size() >= options_.max_tree_states) {
    // The cap (see the header): learn from what the tree holds, then let a
    // new tree collect the next generation while that automaton scores.
    if (since_learn_ > 0) Learn();
    tree_ = PrefixTree();
    ++stats_.tree_restarts;
  }
  return r;
}

void OnlineLikelihood::Learn() {
  Learned l = LearnAlergia(tree_, AlergiaOptions{options_.alpha});
  automaton_ = std::move(l.automaton);
  if (!options_.threshold) threshold_ = CalibratedThreshold(tree_, automaton_);
  has_model_ = true;
  since_learn_ = 0;
  ++stats_.learnings;
}

OnlineLikelihood::Stats OnlineLikelihood::stats() const {
  Stats s = stats_;
  s.tree_states = learning_ ? tree_.states().size() : 0;
  s.model_states = automaton_.num_states();
  s.baseline = !learning_;
  s.has_model = has_model_;
  return s;
}

}  // namespace jackdaw::model::likelihood
