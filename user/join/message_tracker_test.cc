// The message rule on synthetic event sequences of the server shapes the
// real-server suite covers: keep-alive, pipelining, an event loop with many
// connections, pre-forked workers, server-first protocols, goodbyes.
#include "join/message_tracker.h"

#include <gtest/gtest.h>

#include "jackdaw/abi.h"

namespace jackdaw::join {
namespace {

using Kind = Exchange::Kind;

std::vector<Exchange> OfKind(const std::vector<Exchange>& all, Kind k) {
  std::vector<Exchange> out;
  for (const auto& e : all)
    if (e.kind == k) out.push_back(e);
  return out;
}

// Keep-alive without packets: each read that returns bytes after a write
// starts a request at the read's return; the wait before it is idle time.
TEST(MessageTracker, KeepAliveWithoutPacketsStartsAtTheRead) {
  MessageTracker t;
  EXPECT_EQ(t.OnAccept(1, 100).exchange, kConnectionOwned);
  auto r1 = t.OnRead(1, 110, 200, 80);  // waited 90 for the first request
  EXPECT_TRUE(r1.starts_exchange);
  EXPECT_EQ(r1.exchange, 0u);
  EXPECT_EQ(r1.idle_ns, 90u);
  EXPECT_EQ(t.OnWrite(1, 250, 5120).exchange, 0u);
  EXPECT_TRUE(t.TakeFinished().empty()) << "open until the next message";
  auto r2 = t.OnRead(1, 260, 1260, 80);  // client thought for 1000
  EXPECT_TRUE(r2.starts_exchange);
  EXPECT_EQ(r2.exchange, 1u);
  EXPECT_EQ(r2.idle_ns, 1000u);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].kind, Kind::kRequest);
  EXPECT_EQ(done[0].start_ns, 200u);
  EXPECT_EQ(done[0].in_bytes, 80u);
  EXPECT_EQ(done[0].out_bytes, 5120u);
  EXPECT_FALSE(done[0].from_packet);
  EXPECT_EQ(t.OnWrite(1, 1300, 12288).exchange, 1u);
  auto eof = t.OnRead(1, 1310, 5000, 0);
  EXPECT_EQ(eof.exchange, kConnectionOwned);
  EXPECT_EQ(eof.idle_ns, 3690u);
  EXPECT_EQ(t.OnClose(1, 5010).exchange, kConnectionOwned);
  done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].index, 1u);
  EXPECT_EQ(done[0].out_bytes, 12288u);
  EXPECT_EQ(t.stats().requests, 2u);
  EXPECT_EQ(t.stats().eof_reads, 1u);
  EXPECT_EQ(t.stats().idle_ns, 90u + 1000u + 3690u);
  EXPECT_EQ(t.open_connections(), 0u);
}

// With packets the request starts at the packet that carried its first
// byte, and the read's wait up to that packet is the connection's.
TEST(MessageTracker, WithPacketsStartsAtTheArrival) {
  MessageTracker t;
  t.OnAccept(7, 0);
  t.OnInboundPacket(7, 500, 0, false);  // a pure ACK: no message
  t.OnInboundPacket(7, 1000, 120, true);
  auto r = t.OnRead(7, 10, 1040, 120);
  EXPECT_EQ(r.idle_ns, 990u);
  t.OnWrite(7, 1100, 4000);
  t.OnOutboundPacket(7, 1101, 4000);
  t.OnClose(7, 1200);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].start_ns, 1000u);
  EXPECT_TRUE(done[0].from_packet);
  EXPECT_FALSE(done[0].pipelined);
}

// An upload of many packets read in several reads, answered by several
// writes: one request (a message is a run of bytes in one direction).
TEST(MessageTracker, LargeMessagesInManyReadsAndWritesAreOneRequest) {
  MessageTracker t;
  t.OnAccept(3, 0);
  uint64_t ts = 100;
  for (int i = 0; i < 36; ++i) t.OnInboundPacket(3, ts += 5, 1448, i == 35);  // a 50 KB set, one push
  uint64_t read = 0;
  int reads = 0;
  while (read < 36 * 1448) {
    const int64_t n = std::min<int64_t>(16384, 36 * 1448 - int64_t(read));
    auto a = t.OnRead(3, ts, ts + 1, n);
    EXPECT_EQ(a.starts_exchange, reads == 0);
    EXPECT_EQ(a.exchange, 0u);
    read += uint64_t(n);
    ++reads;
    ts += 2;
  }
  t.OnWrite(3, ts + 10, 4096);
  t.OnWrite(3, ts + 20, 4096);
  t.OnClose(3, ts + 30);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].in_bytes, 36u * 1448u);
  EXPECT_EQ(done[0].reads, uint32_t(reads));
  EXPECT_EQ(done[0].writes, 2u);
  EXPECT_EQ(done[0].start_ns, 105u);
  EXPECT_FALSE(done[0].pipelined) << "pushes only at the end of the range";
}

// Two requests on the wire before the server answers the first: read one,
// write, read the other -> split, the second starting at its own packet
// (which arrived while the first was being served).
TEST(MessageTracker, PipelinedRequestsSplitWhenReadApart) {
  MessageTracker t;
  t.OnAccept(5, 0);
  t.OnInboundPacket(5, 100, 60, true);
  t.OnInboundPacket(5, 110, 70, true);
  auto a = t.OnRead(5, 105, 120, 60);
  EXPECT_EQ(a.exchange, 0u);
  t.OnWrite(5, 150, 1000);
  auto b = t.OnRead(5, 160, 161, 70);
  EXPECT_TRUE(b.starts_exchange);
  EXPECT_EQ(b.exchange, 1u);
  EXPECT_EQ(b.idle_ns, 0u) << "the data was there before the read";
  t.OnWrite(5, 170, 2000);
  t.OnClose(5, 200);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].start_ns, 100u);
  EXPECT_EQ(done[1].start_ns, 110u);
  EXPECT_FALSE(done[0].pipelined);
  EXPECT_FALSE(done[1].pipelined);
  EXPECT_EQ(t.stats().pipelined, 0u);
}

// Both requests returned by one read: the bytes cannot separate them, so
// the exchange is flagged, not split.
TEST(MessageTracker, PipelinedRequestsInOneReadAreFlagged) {
  MessageTracker t;
  t.OnAccept(5, 0);
  t.OnInboundPacket(5, 100, 60, true);
  t.OnInboundPacket(5, 110, 70, true);
  auto a = t.OnRead(5, 105, 120, 130);
  EXPECT_EQ(a.exchange, 0u);
  t.OnWrite(5, 150, 1000);
  t.OnWrite(5, 160, 2000);
  t.OnClose(5, 200);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].pipelined);
  EXPECT_EQ(t.stats().pipelined, 1u);
}

// An event loop: one thread, many connections, non-blocking reads that
// return EAGAIN. Connections never mix; EAGAIN reads are the connection's.
TEST(MessageTracker, EventLoopKeepsConnectionsApart) {
  MessageTracker t;
  constexpr int kConns = 50;
  uint64_t ts = 0;
  for (uint64_t c = 1; c <= kConns; ++c) t.OnAccept(c, ts++);
  for (int round = 0; round < 3; ++round) {
    for (uint64_t c = 1; c <= kConns; ++c) {
      auto r = t.OnRead(c, ts, ts + 1, 100 + int64_t(c));
      ts += 2;
      EXPECT_TRUE(r.starts_exchange);
      EXPECT_EQ(r.exchange, uint32_t(round));
      auto again = t.OnRead(c, ts, ts + 1, -11);  // EAGAIN: drained
      ts += 2;
      EXPECT_EQ(again.exchange, kConnectionOwned);
    }
    for (uint64_t c = kConns; c >= 1; --c) EXPECT_EQ(t.OnWrite(c, ts++, 1000 * int64_t(c)).exchange, uint32_t(round));
  }
  for (uint64_t c = 1; c <= kConns; ++c) t.OnClose(c, ts++);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), size_t(3 * kConns));
  for (const auto& e : done) {
    EXPECT_EQ(e.kind, Kind::kRequest);
    EXPECT_EQ(e.in_bytes, 100 + e.conn);
    EXPECT_EQ(e.out_bytes, 1000 * e.conn);
  }
  EXPECT_EQ(t.stats().empty_reads, uint64_t(3 * kConns));
}

// Pre-forked workers, connection per request: a connection that is
// accepted and closed without a message, and one whose client says only
// goodbye, yield no request.
TEST(MessageTracker, ConnectionLifeIsNotARequest) {
  MessageTracker t;
  // Worker A: accept, serve one request, the client closes (EOF), close.
  t.OnAccept(10, 0);
  t.OnRead(10, 1, 5, 90);
  t.OnWrite(10, 6, 5120);
  t.OnRead(10, 7, 9, 0);
  t.OnClose(10, 10);
  // Worker B: a health check that connects and closes.
  t.OnAccept(11, 20);
  t.OnRead(11, 21, 22, 0);
  t.OnClose(11, 23);
  // Worker C: a request, then the client's goodbye ("quit"), unanswered.
  t.OnAccept(12, 30);
  t.OnRead(12, 31, 32, 40);
  t.OnWrite(12, 33, 100);
  t.OnRead(12, 40, 41, 6);
  t.OnClose(12, 42);
  auto done = t.TakeFinished();
  EXPECT_EQ(OfKind(done, Kind::kRequest).size(), 2u);
  auto goodbye = OfKind(done, Kind::kOneWay);
  ASSERT_EQ(goodbye.size(), 1u);
  EXPECT_EQ(goodbye[0].conn, 12u);
  EXPECT_EQ(goodbye[0].in_bytes, 6u);
  EXPECT_EQ(t.stats().requests, 2u);
  EXPECT_EQ(t.stats().one_way, 1u);
  EXPECT_EQ(t.stats().eof_reads, 2u);
}

// A server-first protocol (greeting before the client speaks): the
// greeting is set-up, the client's first message starts request 0.
TEST(MessageTracker, GreetingBelongsToTheConnection) {
  MessageTracker t;
  t.OnAccept(2, 0);
  EXPECT_EQ(t.OnWrite(2, 1, 78).exchange, kConnectionOwned);
  auto r = t.OnRead(2, 2, 10, 30);  // the client's answer to it: set-up
  EXPECT_EQ(r.exchange, 0u);
  EXPECT_EQ(t.OnWrite(2, 11, 11).exchange, 0u);
  EXPECT_EQ(t.OnRead(2, 12, 15, 20).exchange, 1u);  // then a request
  EXPECT_EQ(t.OnWrite(2, 16, 50).exchange, 1u);
  t.OnClose(2, 20);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(OfKind(done, Kind::kServerFirst).size(), 1u);
  EXPECT_EQ(OfKind(done, Kind::kSetup).size(), 1u);
  EXPECT_EQ(OfKind(done, Kind::kRequest).size(), 1u);
  EXPECT_EQ(t.stats().server_first, 1u);
}

// Connection set-up: the client's answer to a greeting opens the
// connection (a login), whatever the schema declares; a declared count of
// client-first exchanges (`setup N`) covers protocols without a greeting.
// A one-way message stays one-way; the exchanges after them are requests.
TEST(MessageTracker, SetUpExchangesBelongToTheConnection) {
  {
    MessageTracker t;  // server-first: greeting, login, then queries
    t.OnAccept(3, 0);
    t.OnWrite(3, 1, 78);
    EXPECT_EQ(t.OnRead(3, 2, 10, 60).exchange, 0u);
    t.OnWrite(3, 11, 11);
    EXPECT_EQ(t.OnRead(3, 12, 20, 30).exchange, 1u);
    t.OnWrite(3, 21, 400);
    t.OnClose(3, 30);
    auto done = t.TakeFinished();
    ASSERT_EQ(OfKind(done, Kind::kSetup).size(), 1u);
    EXPECT_EQ(OfKind(done, Kind::kSetup)[0].index, 0u);
    ASSERT_EQ(OfKind(done, Kind::kRequest).size(), 1u);
    EXPECT_EQ(OfKind(done, Kind::kRequest)[0].index, 1u);
    EXPECT_EQ(t.stats().setup, 1u);
  }
  {
    MessageTracker t;  // client-first, nothing declared: every exchange is a request
    t.OnAccept(4, 0);
    t.OnRead(4, 1, 2, 41);
    t.OnWrite(4, 3, 410);
    t.OnRead(4, 4, 5, 30);
    t.OnWrite(4, 6, 20);
    t.OnClose(4, 7);
    EXPECT_EQ(OfKind(t.TakeFinished(), Kind::kRequest).size(), 2u);
    EXPECT_EQ(t.stats().setup, 0u);
  }
  {
    MessageTracker t(2);  // declared: two client-first exchanges open it
    t.OnAccept(5, 0);
    for (uint64_t i = 0; i < 4; i++) {
      EXPECT_EQ(t.OnRead(5, 10 * i, 10 * i + 1, 40).exchange, i);
      t.OnWrite(5, 10 * i + 2, 100);
    }
    t.OnRead(5, 50, 51, 5);  // a goodbye, never answered
    t.OnClose(5, 60);
    auto done = t.TakeFinished();
    EXPECT_EQ(OfKind(done, Kind::kSetup).size(), 2u);
    EXPECT_EQ(OfKind(done, Kind::kRequest).size(), 2u);
    EXPECT_EQ(OfKind(done, Kind::kOneWay).size(), 1u);
    for (const Exchange& e : OfKind(done, Kind::kRequest)) EXPECT_GE(e.index, 2u);
  }
}

// The capture's TLS record summary of a read (abi.h, "peek").
uint8_t Peek(uint32_t first_type, uint32_t app_records = 0, bool last_ccs = false) {
  return static_cast<uint8_t>(JDW_PEEK_TLS | (first_type - 20) | app_records << JDW_PEEK_APP_SHIFT |
                              (last_ccs ? JDW_PEEK_LAST_CCS : 0));
}
constexpr uint32_t kHandshake = 22, kCcs = 20, kAlert = 21, kAppData = 23;

// TLS 1.3 as a read-ahead server reads it (whole flights in one read):
// ClientHello, then change_cipher_spec + Finished, then requests.
TEST(MessageTracker, TlsHandshakeFlightsBelongToTheConnection) {
  MessageTracker t;
  t.OnAccept(3, 0);
  t.OnRead(3, 1, 2, 517, nullptr, Peek(kHandshake));
  t.OnWrite(3, 3, 1200);  // ServerHello ... server Finished
  t.OnRead(3, 4, 5, 80, nullptr, Peek(kCcs, 0 /* Finished after the CCS */, false));
  t.OnWrite(3, 6, 574);   // two session tickets
  for (uint64_t i = 0; i < 3; i++) {
    t.OnRead(3, 10 + 10 * i, 11 + 10 * i, 100, nullptr, Peek(kAppData, 1));
    t.OnWrite(3, 12 + 10 * i, 5000);
  }
  t.OnRead(3, 50, 51, 24, nullptr, Peek(kAppData, 1));  // close_notify, encrypted
  t.OnClose(3, 60);
  auto done = t.TakeFinished();
  ASSERT_EQ(OfKind(done, Kind::kSetup).size(), 2u);
  ASSERT_EQ(OfKind(done, Kind::kRequest).size(), 3u);
  EXPECT_EQ(OfKind(done, Kind::kRequest)[0].index, 2u);
  EXPECT_EQ(OfKind(done, Kind::kOneWay).size(), 1u);
  EXPECT_EQ(t.stats().tls_handshakes, 2u);
}

// OpenSSL without read-ahead reads a record's 5-byte header, then its body:
// the Finished's header comes in a read of its own after the CCS's.
TEST(MessageTracker, TlsRecordsReadOneAtATimeKeepTheFinishedWithTheHandshake) {
  MessageTracker t;
  t.OnAccept(3, 0);
  t.OnRead(3, 1, 2, 5, nullptr, Peek(kHandshake));
  t.OnRead(3, 2, 3, 512);  // the ClientHello's body: no header at its start
  t.OnWrite(3, 4, 1200);
  t.OnRead(3, 5, 6, 5, nullptr, Peek(kCcs, 0, true));
  t.OnRead(3, 6, 7, 1);
  t.OnRead(3, 7, 8, 5, nullptr, Peek(kAppData, 1));  // the Finished's header
  t.OnRead(3, 8, 9, 69);
  t.OnWrite(3, 10, 574);
  t.OnRead(3, 11, 12, 5, nullptr, Peek(kAppData, 1));  // a request
  t.OnRead(3, 12, 13, 95);
  t.OnWrite(3, 14, 5000);
  t.OnClose(3, 20);
  auto done = t.TakeFinished();
  EXPECT_EQ(OfKind(done, Kind::kSetup).size(), 2u);
  ASSERT_EQ(OfKind(done, Kind::kRequest).size(), 1u);
  EXPECT_EQ(OfKind(done, Kind::kRequest)[0].index, 2u);
}

// TLS 1.2: client key exchange + CCS + Finished (all handshake types) is
// set-up; a client that sends its first request with its Finished (false
// start) begins a request there; renegotiation mid-connection is set-up.
TEST(MessageTracker, Tls12FlightsAndFalseStartAndRenegotiation) {
  MessageTracker t;
  t.OnAccept(3, 0);
  t.OnRead(3, 1, 2, 300, nullptr, Peek(kHandshake));
  t.OnWrite(3, 3, 2000);
  t.OnRead(3, 4, 5, 126, nullptr, Peek(kHandshake, 1 /* request after Finished */));
  t.OnWrite(3, 6, 5000);
  t.OnRead(3, 7, 8, 200, nullptr, Peek(kHandshake));  // renegotiation
  t.OnWrite(3, 9, 1500);
  t.OnRead(3, 10, 11, 100, nullptr, Peek(kAlert));  // an alert, answered
  t.OnWrite(3, 12, 31);
  t.OnClose(3, 20);
  auto done = t.TakeFinished();
  EXPECT_EQ(OfKind(done, Kind::kSetup).size(), 3u);
  ASSERT_EQ(OfKind(done, Kind::kRequest).size(), 1u);
  EXPECT_EQ(OfKind(done, Kind::kRequest)[0].index, 1u);
}

// nginx peeks at a new connection's first byte (MSG_PEEK) to tell TLS from
// plain HTTP: the peek consumes nothing, so the ClientHello's read is still
// the connection's first bytes and begins the first message.
TEST(MessageTracker, APeekConsumesNothing) {
  MessageTracker t;
  t.OnAccept(3, 0);
  EXPECT_EQ(t.OnRead(3, 1, 2, 1, nullptr, JDW_PEEK_MSG_PEEK).key, 0u);
  const MessageAssignment hello = t.OnRead(3, 3, 4, 517, nullptr, Peek(kHandshake));
  EXPECT_TRUE(hello.starts_exchange);
  EXPECT_EQ(hello.exchange, 0u);
  t.OnWrite(3, 5, 1200);
  t.OnRead(3, 6, 7, 126, nullptr, Peek(kHandshake));
  t.OnWrite(3, 8, 51);
  t.OnRead(3, 9, 10, 100, nullptr, Peek(kAppData, 1));
  t.OnWrite(3, 11, 5000);
  t.OnClose(3, 12);
  auto done = t.TakeFinished();
  EXPECT_EQ(OfKind(done, Kind::kSetup).size(), 2u);
  ASSERT_EQ(OfKind(done, Kind::kRequest).size(), 1u);
  EXPECT_EQ(OfKind(done, Kind::kRequest)[0].in_bytes, 100u);
}

// Only a connection whose first bytes are a TLS handshake is TLS: a plain
// protocol whose message happens to begin like a record header, a
// connection first seen mid-way (its first bytes seen are application
// data), and a read whose bytes were not looked at keep the byte rule.
TEST(MessageTracker, TheTlsRuleHoldsOnlyOnTlsConnections) {
  MessageTracker t;
  t.OnAccept(3, 0);
  t.OnRead(3, 1, 2, 40);  // plain first message
  t.OnWrite(3, 3, 400);
  t.OnRead(3, 4, 5, 40, nullptr, Peek(kHandshake));  // binary payload that looks like a header
  t.OnWrite(3, 6, 400);
  t.OnClose(3, 7);
  t.OnRead(4, 1, 2, 100, nullptr, Peek(kAppData, 1));  // a TLS connection older than the trace
  t.OnWrite(4, 3, 400);
  t.OnRead(4, 4, 5, 100, nullptr, Peek(kHandshake));   // renegotiation: not known to be TLS
  t.OnWrite(4, 6, 400);
  t.OnClose(4, 7);
  t.OnRead(5, 1, 2, 517, nullptr, Peek(kHandshake));
  t.OnWrite(5, 3, 1200);
  t.OnRead(5, 4, 5, 80);  // not looked at (the module's capture): a request
  t.OnWrite(5, 6, 574);
  t.OnClose(5, 7);
  auto done = t.TakeFinished();
  EXPECT_EQ(OfKind(done, Kind::kRequest).size(), 5u);
  EXPECT_EQ(OfKind(done, Kind::kSetup).size(), 1u);
  EXPECT_EQ(t.stats().tls_handshakes, 1u);
}

// A TLS 1.3 connection per request: the client sends its change_cipher_spec
// and Finished (80 B, one push) and at once its request (88 B, the next
// push). Whether the server reads them apart or in one read is timing; the
// request must come out the same either way: its own bytes and arrival, the
// session ticket written in answer to the Finished the connection's (as
// many writes as answered the Finished read alone on an earlier connection).
struct TlsOrder {
  std::vector<Exchange> done;
  MessageAssignment ticket, response;
  std::vector<uint64_t> request_packets, setup_packets;
};
TlsOrder TlsFinishedThenRequest(bool one_read) {
  MessageTracker t;
  TlsOrder o;
  // An earlier connection, whose Finished came alone.
  t.OnAccept(2, 0);
  t.OnRead(2, 0, 0, 517, nullptr, Peek(kHandshake));
  t.OnWrite(2, 0, 245);
  t.OnRead(2, 0, 0, 80, nullptr, Peek(kCcs, 0));
  t.OnWrite(2, 0, 287);
  t.OnRead(2, 0, 0, 88, nullptr, Peek(kAppData, 1));
  t.OnWrite(2, 0, 5000);
  t.OnClose(2, 0);
  t.TakeFinished();
  t.OnAccept(3, 0);
  t.OnInboundPacket(3, 1, 517, true, 1, 1000);
  t.OnRead(3, 1, 2, 517, nullptr, Peek(kHandshake));
  t.OnWrite(3, 3, 245);  // ServerHello ... Finished (a resumption)
  t.OnInboundPacket(3, 10, 80, true, 2, 1517);  // change_cipher_spec + Finished
  t.OnInboundPacket(3, 12, 88, true, 3, 1597);  // the request
  std::vector<uint64_t> consumed, setup;
  if (one_read) {
    // The Finished right after the CCS is the handshake's (abi.h): one
    // application data record, the request's.
    t.OnRead(3, 14, 15, 168, &consumed, Peek(kCcs, 1), &setup);
    o.ticket = t.OnWrite(3, 16, 287);
    t.OnRead(3, 17, 18, -11);  // EAGAIN: the server has the request
  } else {
    t.OnRead(3, 14, 15, 80, &setup, Peek(kCcs, 0));
    o.ticket = t.OnWrite(3, 16, 287);
    t.OnRead(3, 17, 18, 88, &consumed, Peek(kAppData, 1));
  }
  o.response = t.OnWrite(3, 20, 5000);
  t.OnClose(3, 30);
  o.done = t.TakeFinished();
  o.request_packets = consumed;
  o.setup_packets = setup;
  return o;
}

TEST(MessageTracker, TlsFinishedAndRequestInOneReadOrTwoGiveTheSameRequest) {
  for (bool one_read : {false, true}) {
    SCOPED_TRACE(one_read ? "one read" : "two reads");
    const TlsOrder o = TlsFinishedThenRequest(one_read);
    const auto requests = OfKind(o.done, Kind::kRequest);
    ASSERT_EQ(requests.size(), 1u);
    const Exchange& r = requests[0];
    EXPECT_EQ(r.in_bytes, 88u);
    EXPECT_EQ(r.out_bytes, 5000u);
    EXPECT_EQ(r.start_ns, 12u);  // the request's own push, not the Finished's
    EXPECT_EQ(r.writes, 1u);
    EXPECT_FALSE(r.pipelined);
    EXPECT_NE(o.response.key, 0u);
    if (one_read) {
      EXPECT_EQ(o.ticket.key, 0u);  // the connection's
    }
    EXPECT_EQ(o.request_packets, std::vector<uint64_t>{3});
    EXPECT_EQ(o.setup_packets, std::vector<uint64_t>{2});
  }
}

// A resumed TLS 1.2 handshake ends with the client's change_cipher_spec and
// Finished (both handshake-typed), which the server does not answer: the
// request's read follows with no write between, or comes in the same read.
TEST(MessageTracker, AnUnansweredTls12FinishedIsNotTheRequestsWhicheverWayItIsRead) {
  for (bool one_read : {false, true}) {
    SCOPED_TRACE(one_read ? "one read" : "two reads");
    MessageTracker t;
    t.OnAccept(3, 0);
    t.OnInboundPacket(3, 1, 300, true, 1, 5000);
    t.OnRead(3, 1, 2, 300, nullptr, Peek(kHandshake));
    t.OnWrite(3, 3, 200);  // ServerHello, CCS, Finished
    t.OnInboundPacket(3, 10, 51, true, 2, 5300);
    t.OnInboundPacket(3, 12, 95, true, 3, 5351);
    if (one_read) {
      t.OnRead(3, 14, 15, 146, nullptr, Peek(kCcs, 1));
    } else {
      t.OnRead(3, 14, 15, 51, nullptr, Peek(kCcs));
      t.OnRead(3, 16, 17, -11);
      t.OnRead(3, 18, 19, 95, nullptr, Peek(kAppData, 1));
    }
    t.OnWrite(3, 20, 363);
    t.OnClose(3, 30);
    const auto done = t.TakeFinished();
    const auto requests = OfKind(done, Kind::kRequest);
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].in_bytes, 95u);
    EXPECT_EQ(requests[0].start_ns, 12u);
    EXPECT_EQ(requests[0].out_bytes, 363u);
    EXPECT_EQ(OfKind(done, Kind::kOneWay).size(), 0u);
  }
}

// A client segment acknowledged late is sent again and seen twice; counted
// twice, the server's next read would seem to await a message that already
// arrived, and the exchange would end before the response.
TEST(MessageTracker, ARetransmittedSegmentIsCountedOnce) {
  MessageTracker t;
  t.OnAccept(3, 0);
  EXPECT_FALSE(t.Resent(3, 100, 7000));
  EXPECT_TRUE(t.OnInboundPacket(3, 1, 100, true, 1, 7000));
  EXPECT_TRUE(t.Resent(3, 100, 7000));  // the same bytes again
  EXPECT_FALSE(t.Resent(3, 150, 7000));  // with 50 new ones
  const MessageAssignment req = t.OnRead(3, 5, 6, 100);
  t.OnWrite(3, 7, 300);
  EXPECT_FALSE(t.EndBeforeNextRead(3));
  t.OnRead(3, 8, 9, -11);
  EXPECT_EQ(t.OnWrite(3, 10, 300).key, req.key);
  t.OnClose(3, 20);
  const auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].out_bytes, 600u);
  EXPECT_EQ(t.stats().retransmits, 1u);
}

// Reads without packets captured for the same bytes (net group off part of
// the time) fall back to the read; an open exchange at the end is
// reported by Finish().
TEST(MessageTracker, MissingPacketsFallBackAndFinishFlushes) {
  MessageTracker t;
  t.OnInboundPacket(9, 50, 10, true);
  t.OnRead(9, 40, 60, 10);
  t.OnWrite(9, 70, 10);
  t.OnRead(9, 80, 90, 20);  // no packet for these bytes
  t.OnWrite(9, 95, 10);
  t.OnRead(9, 100, 400, 30);  // answered never: still in service at the end
  t.Finish();
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].start_ns, 50u);
  EXPECT_TRUE(done[0].from_packet);
  EXPECT_EQ(done[1].start_ns, 90u);
  EXPECT_FALSE(done[1].from_packet);
  EXPECT_EQ(done[2].kind, Kind::kOneWay);
}

// A packet seen only after the read returned (per-CPU streams interleave)
// cannot be the arrival: the read's return is used.
TEST(MessageTracker, APacketAfterTheReadIsNotItsArrival) {
  MessageTracker t;
  t.OnInboundPacket(4, 500, 10, true);
  auto r = t.OnRead(4, 100, 200, 10);
  EXPECT_EQ(r.idle_ns, 100u);
  t.OnWrite(4, 210, 10);
  t.OnClose(4, 220);
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].start_ns, 200u);
}

// Exchange keys: the key a write, an ACK and the read agree on. An ACK of
// the next request's first bytes, sent before the server reads them, is
// the next request's; one of the response is the current one's.
// A server preempted after its response that enters its next read only
// after the client's next message arrived: the exchange ended when that
// message began, so it ends before the read (whose entry would otherwise be
// its tail and stretch it over the next request). Reading the rest of one
// message, or the next message before it arrived, ends nothing; without
// packets nothing is known to have arrived.
TEST(MessageTracker, ANextReadAfterTheNextMessageArrivedEndsTheExchangeFirst) {
  MessageTracker t;
  t.OnAccept(1, 100);
  t.OnInboundPacket(1, 200, 70, true);
  t.OnRead(1, 150, 210, 70);
  EXPECT_FALSE(t.EndBeforeNextRead(1)) << "no answer yet";
  t.OnWrite(1, 250, 444);
  EXPECT_FALSE(t.EndBeforeNextRead(1)) << "the next message has not arrived: the read may wait";
  t.OnInboundPacket(1, 900, 71, true);  // sent while the server was preempted
  EXPECT_TRUE(t.EndBeforeNextRead(1));
  auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].kind, Kind::kRequest);
  EXPECT_EQ(done[0].out_bytes, 444u);
  EXPECT_FALSE(t.EndBeforeNextRead(1)) << "once";
  auto next = t.OnRead(1, 1000, 1010, 71);
  EXPECT_TRUE(next.starts_exchange);
  EXPECT_EQ(next.exchange, 1u);
  t.OnWrite(1, 1100, 444);
  t.OnClose(1, 1200);
  EXPECT_EQ(t.TakeFinished().size(), 1u);
  EXPECT_EQ(t.stats().requests, 2u);

  // A large upload read in pieces: more of the same message, nothing ends.
  MessageTracker u;
  u.OnAccept(2, 100);
  u.OnInboundPacket(2, 200, 1000, false);
  u.OnInboundPacket(2, 201, 1000, true);
  u.OnRead(2, 150, 210, 1000);
  EXPECT_FALSE(u.EndBeforeNextRead(2));
  // Keep-alive without packets: nothing is known to have arrived.
  MessageTracker v;
  v.OnAccept(3, 100);
  v.OnRead(3, 110, 200, 80);
  v.OnWrite(3, 250, 5120);
  EXPECT_FALSE(v.EndBeforeNextRead(3));
}

TEST(MessageTracker, AcksOfTheNextMessageBelongToIt) {
  MessageTracker t;
  t.OnAccept(9, 0);
  t.OnInboundPacket(9, 10, 100, true, 1);
  std::vector<uint64_t> consumed;
  auto r0 = t.OnRead(9, 5, 20, 100, &consumed);
  EXPECT_EQ(consumed, (std::vector<uint64_t>{1}));
  EXPECT_NE(r0.key, 0u);
  EXPECT_EQ(t.Current(9).key, r0.key);
  EXPECT_EQ(t.OnWrite(9, 30, 500).key, r0.key);
  EXPECT_EQ(t.ForAck(9).key, r0.key) << "an ACK of the response";
  t.OnInboundPacket(9, 40, 50000, false, 2);  // the next upload begins
  const MessageAssignment ack = t.ForAck(9);
  EXPECT_NE(ack.key, r0.key);
  EXPECT_EQ(t.Current(9).key, r0.key) << "a write still answers request 0";
  consumed.clear();
  auto r1 = t.OnRead(9, 45, 50, 50000, &consumed);
  EXPECT_TRUE(r1.starts_exchange);
  EXPECT_EQ(r1.key, ack.key);
  EXPECT_EQ(consumed, (std::vector<uint64_t>{2}));
  std::vector<uint64_t> unread;
  t.OnInboundPacket(9, 60, 10, true, 3);
  t.OnClose(9, 70, &unread);
  EXPECT_EQ(unread, (std::vector<uint64_t>{3}));
  EXPECT_EQ(t.Current(9).key, 0u) << "closed: the connection's";
}

// A lingering close: the server answers, shuts down its sending side, and
// reads until the client's end-of-file. The bytes it drains (the tail of
// the request it did not need) begin no exchange, and its reads are idle.
TEST(MessageTracker, ReadsAfterShutdownDrainTheConnection) {
  MessageTracker t;
  t.OnAccept(1, 100);
  EXPECT_TRUE(t.OnRead(1, 110, 120, 100).starts_exchange);
  t.OnWrite(1, 200, 120);
  EXPECT_FALSE(t.ShutDown(1));
  t.OnShutdown(1);
  EXPECT_TRUE(t.ShutDown(1));
  const MessageAssignment tail = t.OnRead(1, 210, 220, 8);
  EXPECT_FALSE(tail.starts_exchange);
  EXPECT_EQ(tail.exchange, kConnectionOwned);
  EXPECT_EQ(tail.key, 0u);
  const MessageAssignment eof = t.OnRead(1, 230, 900, 0);
  EXPECT_EQ(eof.key, 0u);
  EXPECT_EQ(eof.idle_ns, 670u);
  t.OnClose(1, 910);
  const auto done = t.TakeFinished();
  ASSERT_EQ(done.size(), 1u) << "one request, no one-way exchange of the drained bytes";
  EXPECT_EQ(done[0].kind, Kind::kRequest);
  EXPECT_EQ(done[0].in_bytes, 100u);
  EXPECT_EQ(t.stats().drain_reads, 1u);
  EXPECT_EQ(t.stats().eof_reads, 1u);
  EXPECT_EQ(t.stats().one_way, 0u);
}

}  // namespace
}  // namespace jackdaw::join
