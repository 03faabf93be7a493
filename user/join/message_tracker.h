// SysProf's messages on a connection (SysProf, "Messages and Interactions"),
// as one tracker the join consults for every socket event.
//
// The rule. On a connection, a message is a run of bytes in one direction.
// A request (an "exchange") begins when the first bytes of an inbound
// message arrive after the connection's last outbound bytes: at the packet
// that carried them when packets are captured, otherwise at the read that
// returns them. Everything from there — the rest of the inbound message,
// the server's work, the outbound message — belongs to that exchange, until
// the next inbound message begins or the connection ends. An exchange with
// bytes in both directions is a request; one without (a client's last
// one-way message, e.g. a protocol's goodbye) belongs to the connection.
// The connection also owns its set-up (accept, and anything the server
// sends before the first inbound message: a greeting), reads that return
// end-of-file or no data (EAGAIN in an event loop), and the close. A read
// that waits for data is the connection's idle time up to the moment the
// data arrived (the packet, or the read's return without packets).
//
// Pipelining. Inbound bytes are counted per connection (stream offsets), so
// a read that returns bytes of a message that arrived earlier — while the
// previous request was still being served — starts its exchange at that
// message's arrival: requests that follow each other on the wire are split
// whenever the server reads them with a write in between. A read that
// returns bytes of several client pushes at once (TCP PSH boundaries inside
// the range it returned) may hold several requests the bytes cannot
// separate: that exchange is flagged `pipelined` and counted, never split
// by guess.
//
// Set-up. Some protocols open a connection with an exchange of their own
// (a login, a handshake) before the application's requests. Bytes alone
// cannot tell a client-first handshake from a request (PostgreSQL's
// startup and an HTTP GET both are the client's first message and the
// server's answer), so the only rule that holds for every server is about
// greetings: a server that speaks first (MySQL, SMTP, FTP, POP3, IMAP, SSH
// banners) sets the terms of the connection, and the client's first message
// after the greeting answers it — the exchange it begins is the
// connection's set-up. Beyond that a schema declares how many client-first
// exchanges open each connection (`setup N`, counting that answer): such an
// exchange is the connection's too (Exchange::Kind::kSetup).
//
// TLS. A TLS connection's handshake is set-up whatever the server: the
// capture reports the TLS record headers each socket read's bytes begin
// with (include/jackdaw/abi.h, "peek"). A connection whose first inbound
// bytes are a handshake record (a ClientHello) is a TLS connection, and on
// it an exchange whose inbound message holds no application data record —
// a ClientHello, a client's key exchange and Finished, a resumption, a
// renegotiation — is the connection's set-up (Exchange::Kind::kSetup).
// TLS 1.3 encrypts the client's Finished as an application data record
// right after a change_cipher_spec: that one is counted as the handshake's,
// also when the server reads the two records in separate reads (OpenSSL
// without read-ahead reads a record's header, then its body). A message
// none of whose reads began at a record header (a read-ahead buffer that
// split a record) keeps the byte rule: it is a request.
// Whether the client's last handshake flight and its first request come
// in one read or two is timing (a TLS 1.3 client, and a TLS 1.2 one that
// resumes or starts early, sends its request right after its Finished). A
// TLS library processes records in order and answers handshake records in
// the call that processes them — TLS 1.3's session tickets after the
// client's Finished, TLS 1.2's change_cipher_spec and Finished — before it
// hands any application data to the server. So when one read returns the
// handshake's last records and application data, the exchange is the
// request's (its application data is in it), but its first writes answer
// the handshake: the connection's, as they are when the two come in
// separate reads. How many: the bytes do not say (TLS 1.3's tickets are
// encrypted like a response), but a server answers the flight alike on
// every connection (its ticket policy), so as many as it wrote when it
// read the flight alone (the fewest seen: OpenSSL sends two tickets after
// a full handshake, one after a resumption; none before it has read one
// alone, and the answer ends when the server reads the connection again).
// The request
// begins at its own application data: at the client's push that follows
// the handshake's, when packets are captured (its arrival, its bytes). And
// when the server answers nothing to the client's last flight (a resumed
// TLS 1.2 handshake ends with the client's Finished), the read that
// returns the first application data begins the request, though no write
// came between.
//
// Retransmissions. A segment the client sent again (its acknowledgement
// was late) is seen twice; its bytes are counted once, by TCP sequence
// number, or the message rule would await bytes that never come as a read.
//
// Shut down. Once the server has called shutdown() on the connection it
// can answer nothing more on it, so nothing it reads afterwards begins an
// exchange: a lingering close (shutdown(SHUT_WR), then reads until the
// peer's end-of-file, then close — php-fpm after each FastCGI response,
// nginx's and apache's lingering close) drains the connection, whatever
// the reads return. Those reads are the connection's, like the close.
// Before, bytes the server had left unread (the tail of the request it
// answered) began a new one-way exchange, which a traced caller still
// waiting for the answer then took as its callee's work: the drain read
// joined the caller's request when the server got to it before the caller
// read the answer, and not when it got there after.
//
// Invariants: exchanges of a connection are numbered from 0 in arrival
// order; an event is assigned to at most one exchange, or to the
// connection; an exchange is final (TakeFinished) once the next inbound
// message starts or the connection closes, or at Finish(). The tracker
// keeps per-connection state only while the connection is open, plus the
// inbound packets not yet read (bounded by the socket's receive queue).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace jackdaw::join {

// An exchange index for events that belong to the connection itself.
inline constexpr uint32_t kConnectionOwned = UINT32_MAX;

struct MessageAssignment {
  uint32_t exchange = kConnectionOwned;  // per-connection index, or the connection
  bool starts_exchange = false;          // this event begins a new inbound message
  uint64_t idle_ns = 0;                  // part of a read that waited: connection time
  uint64_t key = 0;                      // ExchangeKey() of `exchange`; 0 for the connection
};

struct Exchange {
  enum class Kind : uint8_t {
    kRequest,     // bytes in both directions
    kOneWay,      // inbound only, then the connection ended: the connection's
    kServerFirst,  // outbound before any inbound (a greeting): the connection's
    kSetup         // bytes both ways, but opening the connection (above): the connection's
  };
  uint64_t conn = 0;
  uint64_t serial = 0;          // the connection's number in this tracker (from 1)
  uint32_t index = 0;
  Kind kind = Kind::kRequest;
  uint64_t start_ns = 0;        // first inbound bytes (packet, else read)
  uint64_t first_out_ns = 0, last_out_ns = 0;
  uint64_t in_bytes = 0, out_bytes = 0;
  uint32_t reads = 0, writes = 0;
  bool from_packet = false;     // start_ns is a packet's arrival
  bool pipelined = false;       // a read held several client pushes
  // TLS (above): record headers were seen in its inbound message, and how
  // many application data records they named.
  bool tls_records = false;
  uint32_t tls_app_records = 0;
};

struct MessageStats {
  uint64_t requests = 0;
  uint64_t one_way = 0;           // a connection's last message, no answer
  uint64_t server_first = 0;      // greetings before any inbound message
  uint64_t setup = 0;             // set-up exchanges (answers to greetings, declared ones, TLS handshakes)
  uint64_t tls_handshakes = 0;    // of those, TLS exchanges without application data
  uint64_t tls_tails = 0;         // reads of a handshake's last records and a request
  uint64_t tls_answer_writes = 0; // writes answering those records: the connection's
  uint64_t retransmits = 0;       // inbound segments with no new byte
  uint64_t pipelined = 0;         // exchanges flagged pipelined
  uint64_t eof_reads = 0;
  uint64_t empty_reads = 0;       // EAGAIN and other reads with no data
  uint64_t drain_reads = 0;       // reads with data after the server's shutdown()
  uint64_t idle_ns = 0;           // read time spent waiting for data
  uint64_t connections_closed = 0;
  uint64_t packets_unread = 0;    // inbound packets dropped at close, never read
};

class MessageTracker {
 public:
  // `setup_exchanges`: how many exchanges open each connection (a schema's
  // `setup N`); the answer to a greeting is one whatever this says.
  explicit MessageTracker(uint32_t setup_exchanges = 0) : setup_exchanges_(setup_exchanges) {}

  // A value naming exchange `index` of connection `serial`, never 0 and
  // unique within one tracker: the join's message attribute value.
  static uint64_t ExchangeKey(uint64_t serial, uint32_t index) {
    return (serial << 24 | (index & 0xffffff)) + 1;
  }

  // Packets (net group): TCP payload bytes only; pure ACKs are ignored.
  // `push`: the segment ended a client write (TCP PSH). `tag` (non-zero):
  // the caller's name for the packet, handed back by the read that returns
  // its first byte (OnRead's `consumed`) or, never read, by the close.
  // `tcp_seq` (< 0: unknown): the segment's sequence number; bytes seen
  // before are not counted again (above). Returns false for a
  // retransmission without a new byte, which Resent() tells beforehand (and
  // counts): the caller treats it as a packet without payload.
  bool Resent(uint64_t conn, uint32_t payload, int64_t tcp_seq);
  bool OnInboundPacket(uint64_t conn, uint64_t ts, uint32_t payload, bool push, uint64_t tag = 0,
                       int64_t tcp_seq = -1);
  void OnOutboundPacket(uint64_t conn, uint64_t ts, uint32_t payload);

  MessageAssignment OnAccept(uint64_t conn, uint64_t ts);
  // A read on the connection: entered at enter_ts, returned ret at exit_ts
  // (> 0 bytes, 0 end-of-file, < 0 no data / error). Tags of the packets
  // whose first byte it returned are appended to `consumed`. `peek`: the
  // sys_exit's TLS record summary (0: none, or not looked at).
  // Tags of packets that held only the handshake's last records of a read
  // that also returned a request (above) go to `setup` instead.
  MessageAssignment OnRead(uint64_t conn, uint64_t enter_ts, uint64_t exit_ts, int64_t ret,
                           std::vector<uint64_t>* consumed = nullptr, uint8_t peek = 0,
                           std::vector<uint64_t>* setup = nullptr);
  // A write (send, sendfile...) that moved `ret` bytes (<= 0: nothing; it
  // still belongs to the exchange being answered, if any).
  MessageAssignment OnWrite(uint64_t conn, uint64_t ts, int64_t ret);
  // The server called shutdown() on the connection: from now on its reads
  // drain it (above).
  void OnShutdown(uint64_t conn) { Get(conn).shut = true; }
  bool ShutDown(uint64_t conn) const {
    const Conn* c = Find(conn);
    return c && c->shut;
  }
  // Tags of packets never read are appended to `unread`.
  MessageAssignment OnClose(uint64_t conn, uint64_t ts, std::vector<uint64_t>* unread = nullptr);
  // The exchange that bytes moved on the connection now belong to (a write
  // about to happen, a packet either way): the open one, or the connection
  // when none is open (before the first inbound message, after the close).
  MessageAssignment Current(uint64_t conn) const;
  // The exchange a packet without payload (an acknowledgement) belongs to:
  // once the first bytes of the next inbound message have arrived after
  // the response, the next exchange (which the read returning them will
  // begin), else Current(). An ACK of request N+1's bytes is not request N's.
  MessageAssignment ForAck(uint64_t conn) const;
  bool Knows(uint64_t conn) const { return Find(conn) != nullptr; }
  // A read entered on the connection after the response while the next
  // inbound message's first bytes have already arrived (a server preempted
  // after its answer, back after the client sent again): the exchange ended
  // when that message began, so it ends now, before the read, not at the
  // read's return. True if it ended one. Without packets nothing is known
  // to have arrived: false.
  bool EndBeforeNextRead(uint64_t conn);

  // Ends every open exchange (end of the trace).
  void Finish();
  std::vector<Exchange> TakeFinished();
  // The same into `out` (cleared first), whose buffer the tracker keeps for
  // the next ones: a caller that hands back the same vector each time
  // allocates nothing once both have grown.
  void TakeFinished(std::vector<Exchange>* out) {
    out->clear();
    out->swap(finished_);
  }
  bool HasFinished() const { return !finished_.empty(); }
  const MessageStats& stats() const { return stats_; }
  size_t open_connections() const { return conns_.size(); }

 private:
  struct Packet {
    uint64_t end_offset;  // inbound stream offset just past its payload
    uint64_t ts;
    uint64_t tag;
    uint32_t payload;
    bool push;
    bool reported;        // its tag went to a read already
  };
  // A FIFO of packets that allocates nothing until the first push (a
  // std::deque allocates its map and a block when made, and connections
  // come and go once per request on servers that close after each): a
  // vector read from `head`, compacted once the read part dominates.
  class PacketQueue {
   public:
    bool empty() const { return head_ == v_.size(); }
    size_t size() const { return v_.size() - head_; }
    Packet& front() { return v_[head_]; }
    void push_back(const Packet& p) { v_.push_back(p); }
    void pop_front() {
      if (++head_ == v_.size()) {
        v_.clear();
        head_ = 0;
      } else if (head_ >= kCompactAt && head_ * 2 >= v_.size()) {
        v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
    }
    std::vector<Packet>::iterator begin() { return v_.begin() + static_cast<std::ptrdiff_t>(head_); }
    std::vector<Packet>::iterator end() { return v_.end(); }

   private:
    static constexpr size_t kCompactAt = 64;
    std::vector<Packet> v_;
    size_t head_ = 0;
  };
  struct Conn {
    PacketQueue unread;  // inbound packets not fully read yet
    uint64_t received = 0;      // inbound payload bytes seen as packets
    uint64_t consumed = 0;      // inbound bytes returned by reads
    bool last_out = true;       // last bytes moved were outbound (or none yet)
    bool has_exchange = false;
    Exchange cur;
    uint32_t next_index = 0;
    uint64_t serial = 0;
    bool greeting = false;      // outbound bytes before any inbound message
    bool greeted = false;       // the connection began with a greeting
    uint64_t greeting_ts = 0;
    bool tls = false;           // its first inbound bytes were a TLS handshake record
    bool tls_last_ccs = false;  // the last record header read was a change_cipher_spec
    uint32_t tls_answer_writes = 0;  // writes to come answering the handshake (above)
    bool has_seq = false;       // seq_end is known
    uint32_t seq_end = 0;       // TCP sequence number past the highest inbound byte seen
    bool seq_gap = false;       // a segment came before one ahead of it (loss): no dedup
    bool shut = false;          // the server called shutdown(): reads drain it
  };

  // The connection's state, through a one-entry cache of the last one
  // reached: a socket event asks about its connection several times (the
  // message rule, contention checks, packets of the same exchange), and an
  // unordered_map's element keeps its address until erased (OnClose clears
  // the cache). The map itself is unchanged, so is its iteration order
  // (Finish() ends exchanges in it).
  Conn* Find(uint64_t conn) const {
    if (last_ && last_conn_ == conn) return last_;
    auto it = conns_.find(conn);
    if (it == conns_.end()) return nullptr;
    last_conn_ = conn;
    return last_ = const_cast<Conn*>(&it->second);
  }
  Conn& Get(uint64_t conn) {
    if (last_ && last_conn_ == conn) return *last_;
    Conn& c = conns_[conn];
    if (!c.serial) c.serial = ++serials_;
    last_conn_ = conn;
    last_ = &c;
    return c;
  }
  static void NoteTls(Conn& c, bool first_bytes, uint8_t peek);
  static uint32_t TlsAppRecords(const Conn& c, uint8_t peek);
  // The read's bytes begin with handshake records and hold application data.
  static bool TlsTailWithData(const Conn& c, uint8_t peek);
  void Close(uint64_t conn, Conn& c);
  // `handshake`: a TLS handshake's exchange ended by the request's first
  // application data, set-up even if the server answered nothing.
  void FinishExchange(Conn& c, bool handshake = false);
  void EmitGreeting(uint64_t conn, Conn& c);

  const uint32_t setup_exchanges_;
  // Writes with which the server answered the client's last handshake
  // flight when it came alone (the fewest seen): its answer when the
  // flight comes with a request.
  uint32_t tls_answer_writes_ = 0;
  bool tls_answer_known_ = false;
  std::unordered_map<uint64_t, Conn> conns_;
  mutable uint64_t last_conn_ = 0;  // Find()'s and Get()'s cache: conns_[last_conn_]
  mutable Conn* last_ = nullptr;
  std::vector<Exchange> finished_;
  MessageStats stats_;
  uint64_t serials_ = 0;
};

}  // namespace jackdaw::join
