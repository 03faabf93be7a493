// Merging the hosts' clusters into fleet kinds (docs/clickhouse.md, "jackdaw
// fleet"). Each host's model already told its kinds apart; across hosts two
// clusters are one kind when their representatives are close by Magpie's
// distance (cluster/distance.h: the edit distance over canonical events with
// their demands, plus the log-scale terms on the totals), read back from the
// canonical strings the models table stores.
#pragma once

#include <string>
#include <vector>

#include "canonical/serialize.h"
#include "fleet/host_cluster.h"

namespace jackdaw::fleet {

struct MergeOptions {
  // Largest distance between representatives of one kind. Magpie's unit:
  // a typical request's whole demand of one resource, or ten events; 0.5
  // is twice the clusterer's floor threshold (cluster.h kFloorThreshold):
  // the same kind seen on two machines differs by more than on one.
  double max_distance = 0.5;
};

// The canonical string (canonical::ToText) as tokens again, symbols interned
// in `symbols`. Unreadable annotations count as no demand: never fails.
canonical::SerializedRequest ParseRepresentative(const std::string& text, canonical::SymbolTable* symbols);

// Greedy and deterministic: clusters in order of requests (largest first)
// join the nearest kind of their schema within max_distance of the kind's
// founding representative that has no cluster of their host yet (a host's
// own model already separated its clusters), else found a kind. A cluster
// without a representative (no model row) is a kind of its own. Kinds are
// named k0, k1... by requests, members ordered by requests (the founder
// first). A kind of one cluster is given its nearest other kind.
std::vector<FleetKind> MergeKinds(const std::vector<HostCluster>& rows, const MergeOptions& options);

}  // namespace jackdaw::fleet
