// jackdaw's requests out as OTLP traces: to a file of OTLP/JSON lines
// (--otlp-json) and/or an OTLP/HTTP receiver (--otlp URL). Requests are
// mapped as they come (request_spans.h), gathered into batches of whole
// requests of about `batch_spans` spans (export_batch.h), and each batch is
// written as one line of the file and queued for the sender
// (batch_sender.h): memory is one batch plus the sender's queue, whatever
// the number of requests.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "common/status.h"
#include "export/http/batch_sender.h"
#include "export/otlp/export_batch.h"
#include "export/otlp/request_spans.h"

namespace jackdaw::otlp {

struct ExporterOptions {
  std::string json_path;  // --otlp-json; empty: none
  std::string url;        // --otlp; empty: none
  size_t batch_spans = 512;
  SpanContext context;
  std::string version;    // the scope's version: jackdaw's
  http::SenderOptions sender;   // its url is filled from `url`
};

class OtlpExporter {
 public:
  // Opens the file (safe_file.h's checked open) and checks the URL; the
  // sender's thread starts here.
  static StatusOr<std::unique_ptr<OtlpExporter>> Create(ExporterOptions options);
  ~OtlpExporter();

  void Add(const model::Request& r, const std::string& cluster = {});
  // Writes and queues the batch gathered so far: a live session does this
  // at every refresh, so a slow stream's requests do not wait for a full
  // batch.
  void Flush();
  // Flushes the last batch, waits for the sender (bounded), closes the file.
  Status Finish();

  uint64_t requests() const { return requests_; }
  uint64_t spans() const { return spans_; }
  const http::SenderStats& sender_stats() const { return sent_; }
  // While running: the sender's counts so far (none without --otlp).
  http::SenderStats running_stats() const { return sender_ ? sender_->stats() : sent_; }
  // "jackdaw: OTLP: 640 requests (3,712 spans) sent to URL, 0 dropped, 0 failed"
  // lines, one per destination.
  std::string Summary() const;

 private:
  explicit OtlpExporter(ExporterOptions options) : opt_(std::move(options)), batch_(opt_.context.host, opt_.version) {}

  ExporterOptions opt_;
  ExportBatch batch_;
  FILE* file_ = nullptr;
  bool write_failed_ = false;
  std::unique_ptr<http::BatchSender> sender_;
  http::SenderStats sent_;
  uint64_t requests_ = 0, spans_ = 0, lines_ = 0;
};

}  // namespace jackdaw::otlp
