// Spans gathered into one OTLP ExportTraceServiceRequest (OTLP/JSON):
//   {"resourceSpans":[{"resource":{"attributes":[service.name, host.name]},
//                      "scopeSpans":[{"scope":{"name":"jackdaw",...},"spans":[...]}]}, ...]}
// one resourceSpans per service, in the order services first appeared.
// A batch holds whole requests: a request's spans never straddle two
// batches, so a receiver that drops a batch drops whole traces.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "export/otlp/request_spans.h"

namespace jackdaw::otlp {

class ExportBatch {
 public:
  ExportBatch(std::string host, std::string version) : host_(std::move(host)), version_(std::move(version)) {}

  void AddRequest(std::vector<ServiceSpan>&& spans);
  size_t spans() const { return spans_; }
  size_t requests() const { return requests_; }
  bool empty() const { return requests_ == 0; }
  // The ExportTraceServiceRequest as one line of JSON (no newline); empties
  // the batch.
  std::string TakeJson();

 private:
  std::string host_, version_;
  std::vector<std::pair<std::string, nlohmann::json>> services_;  // service -> its spans (array)
  size_t spans_ = 0, requests_ = 0;
};

}  // namespace jackdaw::otlp
