// The MySQL/MariaDB client/server protocol as far as the real-server
// suite's client needs it: the server's greeting (HandshakeV10), the
// client's HandshakeResponse41 with no password (the suite's server runs
// with --skip-grant-tables), COM_QUERY and COM_QUIT, and the replies: OK,
// ERR and a text result set (column count, column definitions, EOF, rows,
// EOF; the client does not ask for CLIENT_DEPRECATE_EOF).
//
// Framing: every packet is a 3-byte little-endian payload length, a
// sequence number (0 for a command, counting up through its reply) and the
// payload. MyTakePacket() cuts one packet off the front of a receive buffer.
// The server speaks first: the greeting is the connection's, and the
// client's answer to it (the login) is the connection's set-up exchange.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace jackdaw::validate {

struct MyPacket {
  uint8_t seq = 0;
  std::string body;
};

std::string MyFrame(uint8_t seq, const std::string& payload);
// HandshakeResponse41 (sequence 1): protocol 4.1, utf8, `user`, no password.
std::string MyLoginPacket(const std::string& user);
std::string MyQueryPacket(const std::string& sql);
std::string MyQuitPacket();

// Takes one complete packet off the front of *buf; false when *buf holds
// only part of one.
StatusOr<bool> MyTakePacket(std::string* buf, MyPacket* out);

// The greeting must be protocol 10; an ERR packet (too many connections,
// host blocked) fails with the server's message.
Status MyCheckGreeting(const MyPacket& p);
// The login's reply: OK, else the server's message (an authentication
// switch request means the server wants a password).
Status MyCheckLoginReply(const MyPacket& p);

// One command's reply, packet by packet.
class MyReplyReader {
 public:
  // Adds the next packet; true once the reply is complete.
  bool Add(const MyPacket& p);
  // "affected N" for an OK reply, "rows N" for a result set; the error
  // message for ERR.
  const std::string& summary() const { return summary_; }
  const std::string& error() const { return error_; }
  uint64_t row_bytes() const { return row_bytes_; }

 private:
  enum class Phase { kFirst, kColumns, kRows, kDone };
  Phase phase_ = Phase::kFirst;
  uint64_t columns_left_ = 0;
  uint64_t rows_ = 0;
  uint64_t row_bytes_ = 0;
  std::string summary_;
  std::string error_;
};

}  // namespace jackdaw::validate
