#include "model/likelihood/alergia.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <utility>

namespace jackdaw::model::likelihood {

bool HoeffdingDifferent(uint64_t f1, uint64_t n1, uint64_t f2, uint64_t n2, double alpha) {
  if (n1 == 0 || n2 == 0) return false;
  const double a = static_cast<double>(n1), b = static_cast<double>(n2);
  const double gap = std::abs(static_cast<double>(f1) / a - static_cast<double>(f2) / b);
  return gap > std::sqrt(0.5 * std::log(2 / alpha)) * (1 / std::sqrt(a) + 1 / std::sqrt(b));
}

namespace {

enum class Color : uint8_t { kWhite, kBlue, kRed, kMerged };

class Learner {
 public:
  Learner(const PrefixTree& tree, const AlergiaOptions& o)
      : tree_(tree), states_(tree.states()), color_(states_.size(), Color::kWhite),
        parent_(states_.size()), alpha_(o.alpha), min_strings_(o.min_strings) {
    for (uint32_t s = 0; s < states_.size(); ++s) parent_[s] = tree.parent(s);
  }

  Learned Run() {
    color_[0] = Color::kRed;
    red_.push_back(0);
    MakeChildrenBlue(0);
    Learned out;
    while (!blue_.empty()) {
      const uint32_t b = blue_.top().second;
      blue_.pop();
      if (color_[b] != Color::kBlue) continue;  // merged since it was queued
      // Of the compatible red states, the one whose next-event
      // distribution is closest (see alergia.h); the earliest on ties.
      uint32_t into = kNoState;
      double closest = 0;
      for (uint32_t r : red_) {
        if (!Compatible(r, b)) continue;
        const double d = Distance(states_[r], states_[b]);
        if (into == kNoState || d < closest) into = r, closest = d;
      }
      if (into == kNoState) {
        color_[b] = Color::kRed;
        red_.push_back(b);
        MakeChildrenBlue(b);
      } else {
        Merge(into, b);
        ++out.merges;
      }
    }
    Compact(&out);
    return out;
  }

 private:
  using Entry = std::pair<uint64_t, uint32_t>;  // (rare << 63 | depth << 32 | state, state)

  // Nearest the root first, but a state fewer than min_strings strings
  // reached (when it became blue) after every other (alergia.h).
  void PushBlue(uint32_t s) {
    color_[s] = Color::kBlue;
    const uint64_t rare = states_[s].visits < min_strings_ ? 1 : 0;
    blue_.push(Entry{(rare << 63) | (static_cast<uint64_t>(tree_.depth(s)) << 32) | s, s});
  }
  void MakeChildrenBlue(uint32_t r) {
    for (const Transition& t : states_[r].out)
      if (color_[t.target] == Color::kWhite) PushBlue(t.target);
  }

  bool Different(const State& x, const State& y) const {
    if (HoeffdingDifferent(x.ends, x.visits, y.ends, y.visits, alpha_)) return true;
    // Both transition lists are sorted: walk their union.
    size_t i = 0, j = 0;
    while (i < x.out.size() || j < y.out.size()) {
      uint64_t fx = 0, fy = 0;
      if (j == y.out.size() || (i < x.out.size() && x.out[i].symbol < y.out[j].symbol)) {
        fx = x.out[i++].count;
      } else if (i == x.out.size() || y.out[j].symbol < x.out[i].symbol) {
        fy = y.out[j++].count;
      } else {
        fx = x.out[i++].count;
        fy = y.out[j++].count;
      }
      if (HoeffdingDifferent(fx, x.visits, fy, y.visits, alpha_)) return true;
    }
    return false;
  }

  // L1 distance between the two states' next-outcome frequencies (the end
  // and each symbol).
  static double Distance(const State& x, const State& y) {
    const double nx = static_cast<double>(std::max<uint64_t>(x.visits, 1));
    const double ny = static_cast<double>(std::max<uint64_t>(y.visits, 1));
    double d = std::abs(static_cast<double>(x.ends) / nx - static_cast<double>(y.ends) / ny);
    size_t i = 0, j = 0;
    while (i < x.out.size() || j < y.out.size()) {
      double fx = 0, fy = 0;
      if (j == y.out.size() || (i < x.out.size() && x.out[i].symbol < y.out[j].symbol)) {
        fx = static_cast<double>(x.out[i++].count);
      } else if (i == x.out.size() || y.out[j].symbol < x.out[i].symbol) {
        fy = static_cast<double>(y.out[j++].count);
      } else {
        fx = static_cast<double>(x.out[i++].count);
        fy = static_cast<double>(y.out[j++].count);
      }
      d += std::abs(fx / nx - fy / ny);
    }
    return d;
  }

  // The recursive test, with an explicit stack: strings can be thousands of
  // events long. The blue side is a tree, so the walk ends.
  bool Compatible(uint32_t r, uint32_t b) {
    stack_.clear();
    stack_.emplace_back(r, b);
    while (!stack_.empty()) {
      auto [x, y] = stack_.back();
      stack_.pop_back();
      const State& sx = states_[x];
      const State& sy = states_[y];
      if (Different(sx, sy)) return false;
      for (const Transition& ty : sy.out)
        if (const Transition* tx = sx.Find(ty.symbol)) stack_.emplace_back(tx->target, ty.target);
    }
    return true;
  }

  // Points b's incoming transition at r and folds b's subtree into r.
  void Merge(uint32_t r, uint32_t b) {
    Transition* in = states_[parent_[b]].Find(tree_.symbol_into(b));
    in->target = r;
    stack_.clear();
    stack_.emplace_back(r, b);
    while (!stack_.empty()) {
      auto [x, y] = stack_.back();
      stack_.pop_back();
      State& sy = states_[y];
      color_[y] = Color::kMerged;
      {
        State& sx = states_[x];
        sx.visits += sy.visits;
        sx.ends += sy.ends;
        sx.cpu_ns.Combine(sy.cpu_ns);
      }
      for (const Transition& ty : sy.out) {
        Transition& tx = states_[x].FindOrInsert(ty.symbol);
        tx.count += ty.count;
        if (tx.target == kNoState) {
          // The subtree hangs under x now; under a red state it is blue.
          tx.target = ty.target;
          parent_[ty.target] = x;
          if (color_[x] == Color::kRed) PushBlue(ty.target);
        } else {
          stack_.emplace_back(tx.target, ty.target);
        }
      }
      std::vector<Transition>().swap(sy.out);
    }
  }

  // Renumbers the states reachable from the start (all red by now) densely,
  // in breadth-first order, and maps every tree state to its new number.
  void Compact(Learned* out) {
    std::vector<uint32_t> number(states_.size(), kNoState);
    std::vector<uint32_t> order{0};
    number[0] = 0;
    for (size_t k = 0; k < order.size(); ++k)
      for (const Transition& t : states_[order[k]].out)
        if (number[t.target] == kNoState) {
          number[t.target] = static_cast<uint32_t>(order.size());
          order.push_back(t.target);
        }
    std::vector<State> states(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      states[k] = std::move(states_[order[k]]);
      for (Transition& t : states[k].out) t.target = number[t.target];
    }
    out->automaton = Automaton(std::move(states), tree_.alphabet_size());
    // A tree state's prefix leads, in the automaton, where its parent's
    // does and then along its symbol (parents come first in the tree).
    out->state_of.assign(tree_.states().size(), kNoState);
    out->state_of[0] = 0;
    for (uint32_t s = 1; s < out->state_of.size(); ++s)
      out->state_of[s] = out->automaton.Next(out->state_of[tree_.parent(s)], tree_.symbol_into(s));
  }

  const PrefixTree& tree_;
  std::vector<State> states_;
  std::vector<Color> color_;
  std::vector<uint32_t> parent_;  // the state whose transition leads here (tree part)
  double alpha_;
  uint64_t min_strings_;
  std::vector<uint32_t> red_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> blue_;
  std::vector<std::pair<uint32_t, uint32_t>> stack_;
};

}  // namespace

Learned LearnAlergia(const PrefixTree& tree, const AlergiaOptions& options) {
  return Learner(tree, options).Run();
}

}  // namespace jackdaw::model::likelihood
