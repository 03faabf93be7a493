// Where "unlikely" begins, taken from what the model learned. A fixed score
// cannot serve every workload: a server whose requests come in four equally
// common kinds puts a 25 % branch in every request, so each of its ~8-event
// strings scores about -0.17 per event, below any threshold a workload of
// one kind would want. So the threshold is a quantile of the learned
// requests' own scores under the automaton learned from them: a request is
// unlikely when it is less likely than all but that share of the requests
// the model knows, whatever the workload's usual branching.
#pragma once

#include "model/likelihood/automaton.h"
#include "model/likelihood/prefix_tree.h"

namespace jackdaw::model::likelihood {

// The share of learned requests that score below the threshold at most.
inline constexpr double kUnlikelyQuantile = 0.001;

// The score (mean log-probability per event, as Automaton::Score gives it)
// at `quantile` of the strings `tree` holds, each weighed by how many times
// it was seen, under `automaton`. A request scoring strictly below it is
// unlikely. 0 when the tree holds no string.
double CalibratedThreshold(const PrefixTree& tree, const Automaton& automaton, double quantile = kUnlikelyQuantile);

}  // namespace jackdaw::model::likelihood
