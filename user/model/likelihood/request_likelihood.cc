#include "model/likelihood/request_likelihood.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "model/likelihood/calibration.h"

namespace jackdaw::model::likelihood {

RequestLikelihood::RequestLikelihood(const canonical::CanonicalOptions& canonical, const LikelihoodOptions& options)
    : canonicalize_(canonical), options_(options) {}

void RequestLikelihood::Encode(const canonical::CanonicalRequest& c) {
  buffer_.clear();
  cpu_buffer_.clear();
  for (const canonical::CanonicalEvent& e : c.events) {
    buffer_.push_back(symbols_.Intern(e.symbol));
    cpu_buffer_.push_back(e.demand.cpu_ns);
  }
}

uint32_t RequestLikelihood::AddString(uint64_t request_id, std::span<const uint64_t> cpu_ns) {
  const uint32_t state = tree_.Add(buffer_, cpu_ns);
  std::vector<uint64_t>& ids = ended_[state];
  if (ids.size() < options_.unlikely) {
    ids.push_back(request_id);
    std::push_heap(ids.begin(), ids.end());
  } else if (!ids.empty() && request_id < ids.front()) {
    std::pop_heap(ids.begin(), ids.end());
    ids.back() = request_id;
    std::push_heap(ids.begin(), ids.end());
  }
  return state;
}

uint32_t RequestLikelihood::Add(const Request& request) {
  if (request.incomplete) return kNoState;
  return Add(request, canonicalize_(request));
}

uint32_t RequestLikelihood::Add(const Request& request, const canonical::CanonicalRequest& canonical) {
  if (request.incomplete) return kNoState;
  Encode(canonical);
  return AddString(request.id, cpu_buffer_);
}

uint32_t RequestLikelihood::AddSymbols(uint64_t request_id, const std::vector<std::string>& symbols,
                                       const std::vector<uint64_t>& cpu_ns) {
  buffer_.clear();
  for (const std::string& s : symbols) buffer_.push_back(symbols_.Intern(s));
  return AddString(request_id, cpu_ns);
}

void RequestLikelihood::Learn() {
  const auto start = std::chrono::steady_clock::now();
  learned_ = LearnAlergia(tree_, AlergiaOptions{options_.alpha});
  // Every string ending at a tree state has the same score: compute it once
  // per state, parents first (a parent's index is below its child's), in the
  // order Automaton::Score() sums, so the two agree to the bit.
  const Automaton& a = learned_.automaton;
  const size_t n = tree_.states().size();
  std::vector<double> prefix_log(n, 0);
  state_score_.assign(n, 0);
  for (uint32_t s = 0; s < n; ++s) {
    if (s > 0) {
      const uint32_t p = tree_.parent(s);
      prefix_log[s] = prefix_log[p] + std::log(a.Probability(learned_.state_of[p], tree_.symbol_into(s)));
    }
    if (tree_.states()[s].ends)
      state_score_[s] = (prefix_log[s] + std::log(a.Probability(learned_.state_of[s], kEndSymbol))) /
                        static_cast<double>(tree_.depth(s) + 1);
  }
  unlikely_below_ = CalibratedThreshold(tree_, a);
  learn_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  learned_done_ = true;
}

std::optional<double> RequestLikelihood::ScoreOfState(uint32_t state) const {
  if (!learned_done_ || state >= state_score_.size() || tree_.states()[state].ends == 0) return std::nullopt;
  return state_score_[state];
}

std::optional<double> RequestLikelihood::Score(const Request& request) {
  if (!learned_done_ || request.incomplete) return std::nullopt;
  // A symbol the training never saw gets an id past the automaton's
  // alphabet: the unknown-symbol outcome.
  Encode(canonicalize_(request));
  return learned_.automaton.Score(buffer_);
}

std::string RequestLikelihood::SymbolName(uint32_t symbol) const {
  if (symbol == kEndSymbol) return "end";
  if (symbol >= symbols_.size()) return "?";
  return symbols_.Name(symbol);
}

UnlikelyRequest RequestLikelihood::Explain(uint64_t request_id, uint32_t state) const {
  const std::vector<uint32_t> path = tree_.Path(state);
  std::vector<Automaton::Step> steps;
  const Automaton& a = learned_.automaton;
  UnlikelyRequest u;
  u.request_id = request_id;
  u.log_likelihood = a.Score(path, &steps);
  u.events = static_cast<uint32_t>(path.size());
  // The steps that cost it: those within the automaton that did not take
  // the outcome it expected, least probable first (ties: earliest first).
  std::vector<const Automaton::Step*> costly;
  for (const Automaton::Step& s : steps) {
    if (s.state == kNoState) ++u.off_model_events;
    else if (s.symbol != s.expected && s.probability < s.expected_probability) costly.push_back(&s);
  }
  std::stable_sort(costly.begin(), costly.end(), [](const Automaton::Step* x, const Automaton::Step* y) {
    return x->probability < y->probability;
  });
  if (costly.size() > options_.steps_per_request) costly.resize(options_.steps_per_request);
  for (const Automaton::Step* s : costly) {
    UnlikelyStep out;
    out.position = s->position;
    out.symbol = SymbolName(s->symbol);
    out.probability = s->probability;
    out.expected = SymbolName(s->expected);
    out.expected_probability = s->expected_probability;
    const State& st = a.states()[s->state];
    out.state = s->state;
    out.state_visits = st.visits;
    out.state_cpu_mean_ns = st.cpu_ns.mean;
    out.state_cpu_stddev_ns = st.cpu_ns.stddev();
    u.steps.push_back(std::move(out));
  }
  return u;
}

LikelihoodSummary RequestLikelihood::Summary() const {
  LikelihoodSummary s;
  if (!learned_done_) return s;
  s.present = true;
  s.alpha = options_.alpha;
  s.requests_learned = tree_.strings();
  s.prefix_tree_states = tree_.states().size();
  s.states = learned_.automaton.num_states();
  s.transitions = learned_.automaton.num_transitions();
  s.alphabet = learned_.automaton.alphabet_size();  // symbols_ also holds any seen only by Score()
  s.merges = learned_.merges;
  s.learn_seconds = learn_seconds_;
  s.model.alpha = options_.alpha;
  s.model.automaton = learned_.automaton;
  s.model.unlikely_below = unlikely_below_;
  for (uint32_t i = 0; i < s.alphabet; ++i) s.model.symbols.push_back(symbols_.Name(i));
  // Least likely first; equal scores by the request id (the join numbers
  // requests as they begin).
  struct Ranked {
    double score;
    uint64_t id;
    uint32_t state;
  };
  std::vector<Ranked> ranked;
  for (const auto& [state, ids] : ended_)
    for (uint64_t id : ids) ranked.push_back({state_score_[state], id, state});
  const size_t k = std::min<size_t>(options_.unlikely, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<ptrdiff_t>(k), ranked.end(),
                    [](const Ranked& x, const Ranked& y) { return x.score < y.score || (x.score == y.score && x.id < y.id); });
  for (size_t i = 0; i < k; ++i) s.unlikely.push_back(Explain(ranked[i].id, ranked[i].state));
  return s;
}

}  // namespace jackdaw::model::likelihood
