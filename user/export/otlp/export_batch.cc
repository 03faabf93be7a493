#include "export/otlp/export_batch.h"

namespace jackdaw::otlp {

using nlohmann::json;

void ExportBatch::AddRequest(std::vector<ServiceSpan>&& spans) {
  for (ServiceSpan& s : spans) {
    // Few services per batch (a request's processes): a linear search.
    auto it = services_.begin();
    while (it != services_.end() && it->first != s.service) ++it;
    if (it == services_.end()) it = services_.insert(services_.end(), {s.service, json::array()});
    it->second.push_back(std::move(s.span));
    ++spans_;
  }
  ++requests_;
}

std::string ExportBatch::TakeJson() {
  json resource_spans = json::array();
  for (auto& [service, spans] : services_) {
    json attributes = json::array({{{"key", "service.name"}, {"value", {{"stringValue", service}}}},
                                   {{"key", "host.name"}, {"value", {{"stringValue", host_}}}}});
    resource_spans.push_back(
        {{"resource", {{"attributes", std::move(attributes)}}},
         {"scopeSpans", json::array({{{"scope", {{"name", "jackdaw"}, {"version", version_}}},
                                      {"spans", std::move(spans)}}})}});
  }
  services_.clear();
  spans_ = requests_ = 0;
  return json{{"resourceSpans", std::move(resource_spans)}}.dump();
}

}  // namespace jackdaw::otlp
