#include "cli/otlp_args.h"

#include "cli/usage.h"
#include "common/safe_file.h"
#include "export/http/http_post.h"

namespace jackdaw::cli {

void AddOtlpOptions(CLI::App* sub, OtlpArgs* args) {
  Output(sub->add_option("--otlp-json", args->json_path,
                         "write the requests as OpenTelemetry traces, OTLP/JSON, one ExportTraceServiceRequest per "
                         "line (docs/otlp.md)")
             ->type_name("FILE"));
  sub->add_option("--otlp", args->url,
                  "send the requests as OpenTelemetry traces to an OTLP/HTTP receiver, JSON encoding "
                  "(e.g. http://127.0.0.1:4318/v1/traces; http only; docs/otlp.md)")
      ->type_name("URL");
}

Status CheckOtlpArgs(const OtlpArgs& args) {
  if (!args.json_path.empty()) {
    if (Status st = CheckOutput(args.json_path); !st.ok()) return ErrStatus("--otlp-json: %s", st.message().c_str());
  }
  if (!args.url.empty())
    if (auto url = http::ParseHttpUrl(args.url); !url.ok()) return url.status();
  return Status::Ok();
}

StatusOr<std::unique_ptr<otlp::OtlpExporter>> OpenOtlp(const OtlpArgs& args, const std::string& host,
                                                      uint64_t trace_key, bool offline) {
  otlp::ExporterOptions eo;
  eo.json_path = args.json_path;
  eo.url = args.url;
  eo.version = JDW_VERSION;
  eo.context.host = host.empty() ? "unknown" : host;
  eo.context.trace_key = trace_key;
  // Offline a busy receiver is waited for; one that is down is not. Live
  // never stalls its capture on a receiver.
  eo.sender.wait_when_full = offline;
  return otlp::OtlpExporter::Create(std::move(eo));
}

nlohmann::json OtlpStatsJson(const otlp::OtlpExporter& e) {
  const http::SenderStats s = e.running_stats();
  return {{"requests", e.requests()}, {"spans", e.spans()},       {"sent", s.requests_sent},
          {"dropped", s.requests_dropped}, {"failed", s.requests_failed}, {"last_error", s.last_error}};
}

}  // namespace jackdaw::cli
