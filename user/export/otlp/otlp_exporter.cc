#include "export/otlp/otlp_exporter.h"

#include <cerrno>
#include <cstring>

#include "common/safe_file.h"

namespace jackdaw::otlp {

StatusOr<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(ExporterOptions options) {
  std::unique_ptr<OtlpExporter> e(new OtlpExporter(std::move(options)));
  if (!e->opt_.url.empty()) {
    auto url = http::ParseHttpUrl(e->opt_.url);
    if (!url.ok()) return url.status();
    e->opt_.sender.url = *url;
  }
  if (!e->opt_.json_path.empty()) {
    auto f = OpenOwnedStream(e->opt_.json_path, kOutputFileMode);
    if (!f.ok()) return ErrStatus("--otlp-json: %s", f.status().message().c_str());
    e->file_ = *f;
    setvbuf(e->file_, nullptr, _IOFBF, 1 << 20);
  }
  if (!e->opt_.url.empty()) e->sender_ = std::make_unique<http::BatchSender>(e->opt_.sender);
  return e;
}

OtlpExporter::~OtlpExporter() {
  if (file_) fclose(file_);
}

void OtlpExporter::Add(const model::Request& r, const std::string& cluster) {
  std::vector<ServiceSpan> spans = RequestSpans(r, opt_.context, cluster);
  requests_++;
  spans_ += spans.size();
  batch_.AddRequest(std::move(spans));
  if (batch_.spans() >= opt_.batch_spans) Flush();
}

void OtlpExporter::Flush() {
  if (batch_.empty()) return;
  const size_t requests = batch_.requests(), spans = batch_.spans();
  std::string json = batch_.TakeJson();
  if (file_) {
    json += '\n';
    if (fwrite(json.data(), 1, json.size(), file_) != json.size()) write_failed_ = true;
    lines_++;
    json.pop_back();
  }
  if (sender_) sender_->Enqueue(std::move(json), requests, spans);
}

Status OtlpExporter::Finish() {
  Flush();
  if (sender_) sent_ = sender_->Finish();
  if (file_) {
    const bool failed = fflush(file_) != 0 || write_failed_;
    const int err = errno;
    fclose(file_);
    file_ = nullptr;
    if (failed)
      return ErrStatus("--otlp-json: writing %s failed: %s; check the disk has room", opt_.json_path.c_str(),
                       strerror(err));
  }
  return Status::Ok();
}

std::string OtlpExporter::Summary() const {
  std::string out;
  char buf[512];
  if (!opt_.json_path.empty()) {
    snprintf(buf, sizeof(buf), "jackdaw: OTLP/JSON: %llu requests (%llu spans) in %llu lines written to %s\n",
             static_cast<unsigned long long>(requests_), static_cast<unsigned long long>(spans_),
             static_cast<unsigned long long>(lines_),
             IsStdoutPath(opt_.json_path) ? "standard output" : opt_.json_path.c_str());
    out += buf;
  }
  if (sender_) {
    const http::SenderStats& s = sent_;
    snprintf(buf, sizeof(buf),
             "jackdaw: OTLP/HTTP %s: %llu requests (%llu spans) sent in %llu batches; %llu requests (%llu spans) "
             "dropped; %llu requests (%llu spans) failed; %llu retries%s%s\n",
             opt_.url.c_str(), static_cast<unsigned long long>(s.requests_sent),
             static_cast<unsigned long long>(s.items_sent), static_cast<unsigned long long>(s.batches_sent),
             static_cast<unsigned long long>(s.requests_dropped), static_cast<unsigned long long>(s.items_dropped),
             static_cast<unsigned long long>(s.requests_failed), static_cast<unsigned long long>(s.items_failed),
             static_cast<unsigned long long>(s.retries), s.last_error.empty() ? "" : "; last error: ",
             s.last_error.c_str());
    out += buf;
  }
  return out;
}

}  // namespace jackdaw::otlp
