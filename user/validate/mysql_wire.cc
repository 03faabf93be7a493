#include "validate/mysql_wire.h"

namespace jackdaw::validate {
namespace {

constexpr uint32_t kClientLongPassword = 0x1;
constexpr uint32_t kClientProtocol41 = 0x200;
constexpr uint32_t kClientSecureConnection = 0x8000;
constexpr uint8_t kUtf8GeneralCi = 33;
constexpr size_t kMaxPacket = 1 << 24;

void PutLe32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(char(v >> (8 * i)));
}

// A length-encoded integer at body[*pos]; false when the body is too short.
bool LenEnc(const std::string& body, size_t* pos, uint64_t* v) {
  if (*pos >= body.size()) return false;
  const uint8_t first = uint8_t(body[*pos]);
  size_t n = 0;
  if (first < 0xfb) {
    *v = first;
    *pos += 1;
    return true;
  }
  if (first == 0xfc) n = 2;
  else if (first == 0xfd) n = 3;
  else if (first == 0xfe) n = 8;
  else return false;  // 0xfb is NULL, 0xff an error: not an integer
  if (*pos + 1 + n > body.size()) return false;
  *v = 0;
  for (size_t i = 0; i < n; ++i) *v |= uint64_t(uint8_t(body[*pos + 1 + i])) << (8 * i);
  *pos += 1 + n;
  return true;
}

bool IsEof(const MyPacket& p) { return !p.body.empty() && uint8_t(p.body[0]) == 0xfe && p.body.size() < 9; }

// ERR: 0xff, a 2-byte code, then '#' and a 5-byte SQL state, then the text.
std::string ErrMessage(const MyPacket& p) {
  std::string msg = p.body.size() > 3 ? p.body.substr(3) : std::string();
  if (!msg.empty() && msg[0] == '#') msg = msg.substr(std::min<size_t>(6, msg.size()));
  return msg.empty() ? "an error without a message" : msg;
}

}  // namespace

std::string MyFrame(uint8_t seq, const std::string& payload) {
  std::string out;
  out.push_back(char(payload.size() & 0xff));
  out.push_back(char((payload.size() >> 8) & 0xff));
  out.push_back(char((payload.size() >> 16) & 0xff));
  out.push_back(char(seq));
  return out + payload;
}

std::string MyLoginPacket(const std::string& user) {
  std::string p;
  PutLe32(&p, kClientLongPassword | kClientProtocol41 | kClientSecureConnection);
  PutLe32(&p, kMaxPacket);
  p.push_back(char(kUtf8GeneralCi));
  p.append(23, '\0');
  p += user;
  p.push_back('\0');
  p.push_back('\0');  // auth response length: no password
  return MyFrame(1, p);
}

std::string MyQueryPacket(const std::string& sql) { return MyFrame(0, "\x03" + sql); }

std::string MyQuitPacket() { return MyFrame(0, "\x01"); }

StatusOr<bool> MyTakePacket(std::string* buf, MyPacket* out) {
  if (buf->size() < 4) return false;
  const size_t len = size_t(uint8_t((*buf)[0])) | size_t(uint8_t((*buf)[1])) << 8 | size_t(uint8_t((*buf)[2])) << 16;
  if (len == 0xffffff) return ErrStatus("a MySQL packet of 16 MiB or more (split packets are not supported)");
  if (buf->size() < 4 + len) return false;
  out->seq = uint8_t((*buf)[3]);
  out->body = buf->substr(4, len);
  buf->erase(0, 4 + len);
  return true;
}

Status MyCheckGreeting(const MyPacket& p) {
  if (p.body.empty()) return ErrStatus("empty greeting: not a MySQL server");
  if (uint8_t(p.body[0]) == 0xff) return ErrStatus("the server refused the connection: %s", ErrMessage(p).c_str());
  if (p.body[0] != 10) return ErrStatus("greeting of protocol %d, expected 10", int(uint8_t(p.body[0])));
  return Status::Ok();
}

Status MyCheckLoginReply(const MyPacket& p) {
  if (p.body.empty()) return ErrStatus("empty reply to the login");
  switch (uint8_t(p.body[0])) {
    case 0x00: return Status::Ok();
    case 0xff: return ErrStatus("login refused: %s", ErrMessage(p).c_str());
    case 0xfe: return ErrStatus("the server asks for a password (start it with --skip-grant-tables)");
  }
  return ErrStatus("unexpected reply to the login (0x%02x)", unsigned(uint8_t(p.body[0])));
}

bool MyReplyReader::Add(const MyPacket& p) {
  switch (phase_) {
    case Phase::kDone: return true;
    case Phase::kFirst: {
      if (p.body.empty()) {
        error_ = "empty reply";
        phase_ = Phase::kDone;
        return true;
      }
      const uint8_t first = uint8_t(p.body[0]);
      size_t pos = first == 0x00 ? 1 : 0;
      uint64_t n = 0;
      if (first == 0xff || !LenEnc(p.body, &pos, &n)) {
        error_ = first == 0xff ? ErrMessage(p) : "malformed reply";
        phase_ = Phase::kDone;
        return true;
      }
      if (first == 0x00) {
        summary_ = "affected " + std::to_string(n);
        phase_ = Phase::kDone;
        return true;
      }
      columns_left_ = n;
      phase_ = Phase::kColumns;
      return false;
    }
    case Phase::kColumns:
      if (columns_left_ > 0) {
        --columns_left_;
        return false;
      }
      if (!IsEof(p)) {
        error_ = "no EOF after the column definitions";
        phase_ = Phase::kDone;
        return true;
      }
      phase_ = Phase::kRows;
      return false;
    case Phase::kRows:
      if (!p.body.empty() && uint8_t(p.body[0]) == 0xff) {
        error_ = ErrMessage(p);
        phase_ = Phase::kDone;
        return true;
      }
      if (IsEof(p)) {
        summary_ = "rows " + std::to_string(rows_);
        phase_ = Phase::kDone;
        return true;
      }
      ++rows_;
      row_bytes_ += p.body.size();
      return false;
  }
  return true;
}

}  // namespace jackdaw::validate
