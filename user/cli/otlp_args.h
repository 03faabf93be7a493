// The OpenTelemetry options `jackdaw analyze` and `jackdaw live` share
// (--otlp URL, --otlp-json FILE) and opening the exporter behind them
// (export/otlp/otlp_exporter.h, docs/otlp.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "export/otlp/otlp_exporter.h"

namespace jackdaw::cli {

struct OtlpArgs {
  std::string url;        // --otlp
  std::string json_path;  // --otlp-json
  bool any() const { return !url.empty() || !json_path.empty(); }
};

void AddOtlpOptions(CLI::App* sub, OtlpArgs* args);

// The URL and the file, before any work: a bad one ends the command at once.
Status CheckOtlpArgs(const OtlpArgs& args);

// The exporter for the traced `host`; `trace_key` names the recording or
// session the span ids derive from. `offline` (analyze) waits for a busy
// receiver; live never waits, it drops and counts.
StatusOr<std::unique_ptr<otlp::OtlpExporter>> OpenOtlp(const OtlpArgs& args, const std::string& host,
                                                      uint64_t trace_key, bool offline);

// The exporter's counts for live's JSON lines: {"requests", "spans",
// "sent", "dropped", "failed", "last_error"}.
nlohmann::json OtlpStatsJson(const otlp::OtlpExporter& e);

}  // namespace jackdaw::cli
