// The ClickHouse options `jackdaw analyze` and `jackdaw live` share
// (--clickhouse, --clickhouse-cluster, --host-id) and the two steps both
// take around the sink (export/clickhouse/clickhouse_sink.h): opening it,
// and the model snapshot at the end that also settles the requests still
// waiting for their cluster (docs/clickhouse.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "jackdaw/abi.h"
#include "trace/clock.h"
#include "export/clickhouse/clickhouse_sink.h"
#include "model/streaming_model.h"

namespace jackdaw::cli {

struct ClickHouseArgs {
  std::string url;
  std::string cluster;
  std::string host_id;  // the rows' host: this name instead of the machine's
};

void AddClickHouseOptions(CLI::App* sub, ClickHouseArgs* args);

// The URL alone, before any work: a bad one ends the command at once.
Status CheckClickHouseUrl(const ClickHouseArgs& args);

// The sink for `host` (unless --host-id) and `schema`. `offline`: analyze,
// which waits for a busy store rather than dropping; live never waits.
// Does not contact the store: CreateTables() does.
StatusOr<std::unique_ptr<clickhouse::ClickHouseSink>> OpenClickHouse(const ClickHouseArgs& args,
                                                                     const std::string& host,
                                                                     const std::string& schema, bool offline);

// The model's last snapshot into `models` (source "analyze" or "live") at
// `snapshot_ns`, after its last request: the running clusters past the
// warm-up; within it, the batch model over the warm-up's requests (`built`
// when the caller has it, else made here), whose clusters also settle the
// requests still waiting for one.
void SendFinalModel(clickhouse::ClickHouseSink* sink, const model::StreamingModel& sm,
                    const model::WorkloadModel* built, const std::string& source, uint64_t snapshot_ns);

// An in-kernel interaction summary as a `jackdaw.interactions` row's
// fields: its times from the trace's timebase to the wall clock.
clickhouse::InteractionSummary InteractionOf(uint32_t tgid, const jdw_interaction& ia,
                                            const trace::TimeConverter& time);

// The sink's counts for live's JSON lines ({"sent", "dropped", "failed",
// "pending", "last_error"}) and its view and closing line ("ClickHouse:
// 1200 requests stored, 0 dropped, 0 failed").
nlohmann::json SinkStatsJson(const http::SenderStats& s, size_t pending);
std::string SinkStatsText(const http::SenderStats& s);

// CLOCK_REALTIME now, ns: a live model snapshot's time.
uint64_t WallNowNs();

}  // namespace jackdaw::cli
