// ALERGIA (Carrasco & Oncina 1994), red-blue order (de la Higuera,
// "Grammatical Inference", 2010, §16): learns a probabilistic deterministic
// automaton from a frequency prefix tree by merging the states whose futures
// the counts cannot tell apart.
//
// States are red (kept, final) or blue (a red state's successor not yet
// decided). The blue state nearest the root (fewest symbols, then first
// added) is tested against every red state; it merges into a compatible
// one, else it turns red. Carrasco & Oncina merge into the first compatible
// red state; here it is the compatible one whose next-event frequencies are
// closest (L1; the earliest on ties). With many strings only one red state
// passes and the two agree; a state few strings reached passes against
// anything, and the first red state (the start) would splice a rare event's
// tail onto the beginning of a request, where the closest one continues it
// where it belongs (an extra disk read followed by the usual write merges
// into the state that expects the write).
//
// For the same reason the states few strings reached (fewer than
// min_strings when they became blue) wait until every other blue state is
// decided: in breadth-first order a rare path's state would be judged while
// only the states near the start are red, and the state it belongs with
// (the one after the event it skipped, say) is not there yet. Judged last,
// it merges into the closest state of the finished core. A merge points
// the blue state's incoming transition at the red state and folds the blue
// subtree into it, adding counts (and demand) state by state, so the result
// stays deterministic.
//
// Compatible(r, b): for the end and for every symbol, the frequencies
// f_r/n_r and f_b/n_b pass Hoeffding's test
//     |f_r/n_r - f_b/n_b| < sqrt(ln(2/alpha) / 2) * (1/sqrt(n_r) + 1/sqrt(n_b)),
// and so, recursively, do the pairs of states their common symbols lead to.
// alpha bounds the chance of telling apart two states that have the same
// distribution: smaller alpha merges more (fewer, bigger states). A state
// with few strings passes against anything (hence the two rules above);
// with many strings the bound tightens and only equal distributions merge. (1 M Reber strings, a 40,414-state tree:
// 85 ms with the tree's construction, bench_likelihood.)
#pragma once

#include <cstdint>
#include <vector>

#include "model/likelihood/automaton.h"
#include "model/likelihood/prefix_tree.h"

namespace jackdaw::model::likelihood {

struct AlergiaOptions {
  double alpha = 0.05;  // in (0, 1]
  // Below this many strings Hoeffding's bound exceeds any difference of
  // frequencies (at alpha 0.05 it is 1.36 (1/sqrt(n1) + 1/sqrt(n2)) > 0.6
  // for n <= 5): such a state is judged after all the others.
  uint64_t min_strings = 5;
};

struct Learned {
  Automaton automaton;
  // For each prefix-tree state, the automaton state its prefix leads to.
  std::vector<uint32_t> state_of;
  uint32_t merges = 0;
};

Learned LearnAlergia(const PrefixTree& tree, const AlergiaOptions& options = {});

// Hoeffding's test above: true when f1/n1 and f2/n2 differ by more than the
// bound (an empty side never differs).
bool HoeffdingDifferent(uint64_t f1, uint64_t n1, uint64_t f2, uint64_t n2, double alpha);

}  // namespace jackdaw::model::likelihood
