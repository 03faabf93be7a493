#include "export/http/batch_sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

#include "export/http/test_receiver.h"

namespace jackdaw::http {
namespace {

SenderOptions Options(const std::string& url) {
  SenderOptions o;
  o.url = *ParseHttpUrl(url);
  o.initial_backoff_ms = 10;
  o.max_backoff_ms = 40;
  o.timeout_ms = 2000;
  o.drain_timeout_ms = 5000;
  return o;
}

TEST(BatchSender, RetriesA503ThenDelivers) {
  TestReceiver rx({503, 429});
  BatchSender sender(Options(rx.url()));
  EXPECT_TRUE(sender.Enqueue("{\"n\":1}", 3, 12));
  EXPECT_TRUE(sender.Enqueue("{\"n\":2}", 2, 8));
  const SenderStats s = sender.Finish();
  EXPECT_EQ(s.batches_sent, 2u);
  EXPECT_EQ(s.requests_sent, 5u);
  EXPECT_EQ(s.items_sent, 20u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.requests_dropped + s.requests_failed, 0u);
  EXPECT_EQ(rx.posts(), 4);
  ASSERT_EQ(rx.accepted().size(), 2u);
  EXPECT_EQ(rx.accepted()[0], "{\"n\":1}");  // in order
  EXPECT_EQ(rx.accepted()[1], "{\"n\":2}");
}

TEST(BatchSender, A400IsFinalNotRetried) {
  TestReceiver rx({400});
  BatchSender sender(Options(rx.url()));
  sender.Enqueue("{}", 1, 4);
  const SenderStats s = sender.Finish();
  EXPECT_EQ(s.requests_failed, 1u);
  EXPECT_EQ(s.items_failed, 4u);
  EXPECT_EQ(s.retries, 0u);
  // The status, then the first line of the receiver's explanation.
  EXPECT_EQ(s.last_error, "HTTP 400: {\"code\":14,\"message\":\"busy\"}");
  EXPECT_EQ(rx.posts(), 1);
}

TEST(BatchSender, RetriesUsedUpCountAsFailed) {
  TestReceiver rx({503, 503, 503});
  SenderOptions o = Options(rx.url());
  o.max_attempts = 3;
  BatchSender sender(o);
  sender.Enqueue("{}", 2, 5);
  const SenderStats s = sender.Finish();
  EXPECT_EQ(s.requests_failed, 2u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(rx.posts(), 3);
}

TEST(BatchSender, DownReceiverDropsAndCountsWithoutHanging) {
  SenderOptions o = Options("http://127.0.0.1:" + std::to_string(UnusedLoopbackPort()) + "/v1/traces");
  o.max_queued_batches = 2;
  o.wait_when_full = true;  // even so: a receiver known down never blocks the producer
  BatchSender sender(o);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t queued = 0;
  for (int i = 0; i < 200; ++i) queued += sender.Enqueue("{}", 1, 3);
  const SenderStats s = sender.Finish();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(s.requests_sent, 0u);
  EXPECT_EQ(s.requests_dropped + s.requests_failed, 200u);  // every request accounted for
  EXPECT_EQ(s.items_dropped + s.items_failed, 600u);
  EXPECT_GT(s.requests_dropped, 100u);  // the queue bound held
  EXPECT_EQ(s.requests_failed, queued);
  EXPECT_EQ(s.last_error, "connection refused");
}

TEST(BatchSender, PreparesOnceBeforeTheFirstBatch) {
  TestReceiver rx({503});  // the first preparation meets a busy receiver
  SenderOptions o = Options(rx.url());
  o.content_type = "text/plain";
  int prepared = 0;
  const HttpUrl url = o.url;
  o.prepare = [&] {
    ++prepared;
    return Post(url, "CREATE", PostOptions{});
  };
  BatchSender sender(o);
  sender.Enqueue("row 1", 1, 1);
  sender.Enqueue("row 2", 1, 1);
  const SenderStats s = sender.Finish();
  EXPECT_EQ(s.requests_sent, 2u);
  EXPECT_EQ(prepared, 2);  // the 503, then the success; not again for the second batch
  EXPECT_EQ(s.retries, 1u);
  const std::vector<std::string> got = rx.accepted();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "CREATE");
  EXPECT_EQ(got[1], "row 1");
  EXPECT_NE(rx.heads()[2].find("Content-Type: text/plain"), std::string::npos);
}

TEST(BatchSender, WithoutWaitingAFullQueueDrops) {
  // A receiver that holds each POST for long: the queue fills.
  TestReceiver rx;
  SenderOptions o = Options(rx.url());
  o.max_queued_batches = 1;
  BatchSender sender(o);
  uint64_t dropped = 0;
  for (int i = 0; i < 50; ++i) dropped += !sender.Enqueue(std::string(1 << 16, ' '), 1, 1);
  const SenderStats s = sender.Finish();
  EXPECT_EQ(s.requests_dropped, dropped);
  EXPECT_EQ(s.requests_sent + s.requests_dropped, 50u);
  EXPECT_EQ(static_cast<uint64_t>(rx.accepted().size()), s.requests_sent);
}

}  // namespace
}  // namespace jackdaw::http
