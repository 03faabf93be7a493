// The model's clusters as `models` rows (rows.h's ModelCluster), from the
// two shapes the model comes in: a streaming model's running clusters
// (past its warm-up, live and analyze alike) and a batch model (a stream
// that ended within the warm-up). The cluster ids are those the requests'
// rows got from the same model, so requests join their cluster's row.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "export/clickhouse/rows.h"
#include "model/streaming_model.h"
#include "model/workload_model.h"

namespace jackdaw::clickhouse {

// Running clusters, largest first (StreamingModel::Running()'s order, the
// reports' c0, c1, ...); ids the streaming clusterer's stable ones.
std::vector<ModelCluster> ClustersOf(const std::vector<model::ClusterRunning>& running);

// A batch model's clusters; ids its cluster ids. Latency quantiles from its
// members (every request: a batch model keeps them all).
std::vector<ModelCluster> ClustersOf(const model::WorkloadModel& m);

// Request id -> its cluster in a batch model.
std::unordered_map<uint64_t, int64_t> ClusterOfRequests(const model::WorkloadModel& m);

}  // namespace jackdaw::clickhouse
