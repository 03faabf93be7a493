#include "model/likelihood/request_likelihood.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace jackdaw::model::likelihood {

RequestLikelihood::RequestLikelihood(const canonical::CanonicalOptions& canonical, const LikelihoodOptions& options)
    : canonicalize_(canonical), options_(options) {}

void RequestLikelihood::Add(const Request& request) {
  if (request.incomplete) {
    ids_.push_back(request.id);
    nodes_.push_back(kNoState);
    return;
  }
  const canonical::CanonicalRequest c = canonicalize_(request);
  buffer_.clear();
  cpu_buffer_.clear();
  for (const canonical::CanonicalEvent& e : c.events) {
    buffer_.push_back(symbols_.Intern(e.symbol));
    cpu_buffer_.push_back(e.demand.cpu_ns);
  }
  ids_.push_back(request.id);
  nodes_.push_back(tree_.Add(buffer_, cpu_buffer_));
}

void RequestLikelihood::AddSymbols(uint64_t request_id, const std::vector<std::string>& symbols,
                                   const std::vector<uint64_t>& cpu_ns) {
  buffer_.clear();
  for (const std::string& s : symbols) buffer_.push_back(symbols_.Intern(s));
  ids_.push_back(request_id);
  nodes_.push_back(tree_.Add(buffer_, cpu_ns));
}

void RequestLikelihood::Learn() {
  const auto start = std::chrono::steady_clock::now();
  learned_ = LearnAlergia(tree_, AlergiaOptions{options_.alpha});
  // Every string ending at a tree state has the same score: compute it once
  // per state, parents first (a parent's index is below its child's).
  const Automaton& a = learned_.automaton;
  const size_t n = tree_.states().size();
  std::vector<double> prefix_log(n, 0);
  node_score_.assign(n, 0);
  for (uint32_t s = 0; s < n; ++s) {
    if (s > 0) {
      const uint32_t p = tree_.parent(s);
      prefix_log[s] = prefix_log[p] + std::log(a.Probability(learned_.state_of[p], tree_.symbol_into(s)));
    }
    if (tree_.states()[s].ends)
      node_score_[s] = (prefix_log[s] + std::log(a.Probability(learned_.state_of[s], kEndSymbol))) /
                       static_cast<double>(tree_.depth(s) + 1);
  }
  learn_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  learned_done_ = true;
}

std::optional<double> RequestLikelihood::ScoreAt(size_t arrival) const {
  if (!learned_done_ || arrival >= nodes_.size() || nodes_[arrival] == kNoState) return std::nullopt;
  return node_score_[nodes_[arrival]];
}

std::vector<std::optional<double>> RequestLikelihood::ScoresOf(const std::vector<uint64_t>& ids) const {
  std::unordered_map<uint64_t, size_t> wanted;
  for (size_t i = 0; i < ids.size(); ++i) wanted.emplace(ids[i], i);
  std::vector<std::optional<double>> out(ids.size());
  for (size_t a = 0; a < ids_.size(); ++a)
    if (auto it = wanted.find(ids_[a]); it != wanted.end()) out[it->second] = ScoreAt(a);
  return out;
}

std::string RequestLikelihood::SymbolName(uint32_t symbol) const {
  if (symbol == kEndSymbol) return "end";
  if (symbol >= symbols_.size()) return "?";
  return symbols_.Name(symbol);
}

UnlikelyRequest RequestLikelihood::Explain(size_t arrival) const {
  const uint32_t node = nodes_[arrival];
  const std::vector<uint32_t> path = tree_.Path(node);
  std::vector<Automaton::Step> steps;
  const Automaton& a = learned_.automaton;
  UnlikelyRequest u;
  u.request_id = ids_[arrival];
  u.log_likelihood = a.Score(path, &steps);
  u.events = static_cast<uint32_t>(path.size());
  // The steps that cost it: those that did not take the outcome the model
  // expected, least probable first (ties: earliest first).
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
  s.alphabet = static_cast<uint32_t>(symbols_.size());
  s.merges = learned_.merges;
  s.learn_seconds = learn_seconds_;
  std::vector<size_t> scored;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i] != kNoState) scored.push_back(i);
  const size_t k = std::min<size_t>(options_.unlikely, scored.size());
  // Least likely first; equal scores in arrival order.
  std::partial_sort(scored.begin(), scored.begin() + static_cast<ptrdiff_t>(k), scored.end(),
                    [&](size_t x, size_t y) {
                      const double sx = node_score_[nodes_[x]], sy = node_score_[nodes_[y]];
                      return sx < sy || (sx == sy && x < y);
                    });
  for (size_t i = 0; i < k; ++i) s.unlikely.push_back(Explain(scored[i]));
  return s;
}

}  // namespace jackdaw::model::likelihood
