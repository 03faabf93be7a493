#include "export/otlp/request_spans.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

namespace jackdaw::otlp {
namespace {

using nlohmann::json;

// A request that arrived at nginx (tgid 10), which called php-fpm (20)
// over a unix socket and a remote database at 10.0.0.5:5432.
model::Request TwoTierRequest() {
  model::Request r;
  r.id = 77;
  r.tgid = 10;
  r.start_ns = 1000;
  r.end_ns = 9000;
  r.start_wall_ns = 1700000000000000000ull;
  r.end_wall_ns = r.start_wall_ns + 8000;
  r.threads = {11, 21};
  r.connections.push_back({"127.0.0.1:8080", "127.0.0.1:45678"});
  r.totals.cpu_ns = 5000;
  r.totals.disk_bytes = 4096;
  r.totals.net_bytes_in = 300;
  r.totals.net_bytes_out = 900;
  r.totals.runq_wait_ns = 12;
  r.totals.blocked_ns = 34;
  r.connection_cpu_ns = 56;
  model::ProcessSegment front;
  front.tgid = 10;
  front.comm = "nginx";
  front.tier = 0;
  front.first_ns = 1000;
  front.last_ns = 9000;
  front.cpu_ns = 2000;
  model::ProcessSegment app = front;
  app.tgid = 20;
  app.comm = "php-fpm";
  app.tier = 1;
  app.first_ns = 2000;
  app.last_ns = 7000;
  app.cpu_ns = 3000;
  r.processes = {front, app};
  model::Call to_app;
  to_app.start_ns = 1500;
  to_app.end_ns = 7500;
  to_app.caller_tgid = 10;
  to_app.peer_tgid = 20;
  to_app.endpoint = {"unix:", "unix:/run/php.sock"};
  to_app.bytes_out = 100;
  to_app.bytes_in = 800;
  to_app.answered = true;
  model::Call to_db;
  to_db.start_ns = 3000;
  to_db.end_ns = 4000;
  to_db.caller_tgid = 20;
  to_db.endpoint = {"10.0.0.2:51000", "10.0.0.5:5432"};
  to_db.bytes_out = 60;
  to_db.bytes_in = 400;
  to_db.answered = true;
  r.calls = {to_app, to_db};
  return r;
}

std::map<std::string, json> Attributes(const json& span) {
  std::map<std::string, json> out;
  for (const json& kv : span["attributes"]) out[kv["key"]] = kv["value"];
  return out;
}

TEST(RequestSpans, OneSpanPerRequestProcessAndCall) {
  const auto spans = RequestSpans(TwoTierRequest(), {7, "web1"}, "c3");
  ASSERT_EQ(spans.size(), 5u);  // request, 2 processes, 2 calls
  EXPECT_EQ(spans[0].span["name"], "c3");
  EXPECT_EQ(spans[0].service, "nginx");
  EXPECT_EQ(spans[1].service, "nginx");
  EXPECT_EQ(spans[2].service, "php-fpm");
  EXPECT_EQ(spans[3].service, "nginx");    // the call nginx made
  EXPECT_EQ(spans[4].service, "php-fpm");  // the call php-fpm made
  EXPECT_EQ(spans[1].span["kind"], kSpanKindServer);
  EXPECT_EQ(spans[2].span["kind"], kSpanKindServer);
  EXPECT_EQ(spans[3].span["kind"], kSpanKindClient);
}

TEST(RequestSpans, ParentLinksFormTheCallTree) {
  const auto spans = RequestSpans(TwoTierRequest(), {7, "web1"}, "c3");
  const json& root = spans[0].span;
  EXPECT_FALSE(root.contains("parentSpanId"));
  const std::string trace = root["traceId"];
  for (const auto& s : spans) EXPECT_EQ(s.span["traceId"], trace);
  EXPECT_EQ(spans[1].span["parentSpanId"], root["spanId"]);             // nginx under the request
  EXPECT_EQ(spans[3].span["parentSpanId"], spans[1].span["spanId"]);   // nginx's call under nginx
  EXPECT_EQ(spans[2].span["parentSpanId"], spans[3].span["spanId"]);   // php-fpm under that call
  EXPECT_EQ(spans[4].span["parentSpanId"], spans[2].span["spanId"]);   // the db call under php-fpm
  std::set<std::string> ids;
  for (const auto& s : spans) ids.insert(s.span["spanId"].get<std::string>());
  EXPECT_EQ(ids.size(), spans.size());
}

TEST(RequestSpans, IdsAreHexAndStableAcrossExports) {
  const auto a = RequestSpans(TwoTierRequest(), {7, "web1"});
  const auto b = RequestSpans(TwoTierRequest(), {7, "web1"});
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].span.dump(), b[i].span.dump());
    EXPECT_EQ(a[i].span["spanId"].get<std::string>().size(), 16u);
    EXPECT_EQ(a[i].span["traceId"].get<std::string>().size(), 32u);
  }
  const auto other = RequestSpans(TwoTierRequest(), {8, "web1"});  // another recording
  EXPECT_NE(a[0].span["traceId"], other[0].span["traceId"]);
}

TEST(RequestSpans, TimesAreWallClockDecimalStrings) {
  const auto spans = RequestSpans(TwoTierRequest(), {7, "web1"});
  EXPECT_EQ(spans[0].span["name"], "request");  // no cluster known
  EXPECT_EQ(spans[0].span["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(spans[0].span["endTimeUnixNano"], "1700000000000008000");
  EXPECT_EQ(spans[2].span["startTimeUnixNano"], "1700000000000001000");  // php-fpm at mono 2000
  EXPECT_EQ(spans[4].span["endTimeUnixNano"], "1700000000000003000");    // db call ends at mono 4000
}

TEST(RequestSpans, AttributesCarryTheRequestsDemand) {
  const auto spans = RequestSpans(TwoTierRequest(), {7, "web1"}, "c3");
  auto root = Attributes(spans[0].span);
  EXPECT_EQ(root["jackdaw.cluster"]["stringValue"], "c3");
  EXPECT_EQ(root["jackdaw.cpu_ns"]["intValue"], "5000");  // int64 as a string
  EXPECT_EQ(root["jackdaw.disk_bytes"]["intValue"], "4096");
  EXPECT_EQ(root["jackdaw.net_bytes_in"]["intValue"], "300");
  EXPECT_EQ(root["jackdaw.net_bytes_out"]["intValue"], "900");
  EXPECT_EQ(root["jackdaw.runq_wait_ns"]["intValue"], "12");
  EXPECT_EQ(root["jackdaw.blocked_ns"]["intValue"], "34");
  EXPECT_EQ(root["jackdaw.connection_cpu_ns"]["intValue"], "56");
  EXPECT_EQ(root["jackdaw.incomplete"]["boolValue"], false);
  EXPECT_EQ(root["net.peer.name"]["stringValue"], "127.0.0.1");
  EXPECT_EQ(root["net.peer.port"]["intValue"], "45678");
  EXPECT_EQ(spans[0].span["status"]["code"], 0);
  auto db = Attributes(spans[4].span);
  EXPECT_EQ(db["net.peer.name"]["stringValue"], "10.0.0.5");
  EXPECT_EQ(db["net.peer.port"]["intValue"], "5432");
  EXPECT_EQ(db["jackdaw.bytes_out"]["intValue"], "60");
  EXPECT_EQ(db["jackdaw.bytes_in"]["intValue"], "400");
  EXPECT_EQ(db["jackdaw.remote"]["boolValue"], true);
  EXPECT_EQ(Attributes(spans[2].span)["jackdaw.cpu_ns"]["intValue"], "3000");
}

TEST(RequestSpans, IncompleteRequestIsAnErrorSpan) {
  model::Request r = TwoTierRequest();
  r.incomplete = true;
  r.incomplete_reason = "sched records lost on cpu 1";
  const auto spans = RequestSpans(r, {7, "web1"});
  EXPECT_EQ(spans[0].span["status"]["code"], 2);
  EXPECT_EQ(Attributes(spans[0].span)["jackdaw.incomplete_reason"]["stringValue"], "sched records lost on cpu 1");
}

TEST(RequestSpans, ARequestWithoutProcessesIsOneSpan) {
  model::Request r;
  r.id = 1;
  r.tgid = 5;
  r.start_ns = 10;
  r.end_ns = 20;
  r.start_wall_ns = 100;
  const auto spans = RequestSpans(r, {7, "h"});
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].service, "pid 5");
}

TEST(SplitEndpoint, Forms) {
  EXPECT_EQ(SplitEndpoint("10.0.0.5:5432").name, "10.0.0.5");
  EXPECT_EQ(SplitEndpoint("10.0.0.5:5432").port, 5432u);
  EXPECT_EQ(SplitEndpoint("[::1]:80").name, "::1");
  EXPECT_EQ(SplitEndpoint("unix:/run/php.sock").name, "unix:/run/php.sock");
  EXPECT_EQ(SplitEndpoint("unix:/run/php.sock").port, 0u);
}

}  // namespace
}  // namespace jackdaw::otlp
