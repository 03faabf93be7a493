#include "validate/pg_wire.h"

#include <cstring>

namespace jackdaw::validate {
namespace {

void PutU32(std::string* s, uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  s->append(b, 4);
}

uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) << 24 | uint32_t(u[1]) << 16 | uint32_t(u[2]) << 8 | uint32_t(u[3]);
}

std::string Typed(char type, const std::string& body) {
  std::string m(1, type);
  PutU32(&m, uint32_t(body.size() + 4));
  return m + body;
}

// An ErrorResponse body: fields (code byte, C string) up to a 0 byte.
std::string ErrorMessageField(const std::string& body) {
  size_t i = 0;
  while (i < body.size() && body[i] != 0) {
    const char code = body[i++];
    const size_t end = body.find('\0', i);
    if (end == std::string::npos) break;
    if (code == 'M') return body.substr(i, end - i);
    i = end + 1;
  }
  return "unreadable error response";
}

}  // namespace

std::string PgStartupMessage(const std::string& user, const std::string& database) {
  std::string body;
  PutU32(&body, 3u << 16);  // protocol 3.0
  body += "user";
  body += '\0';
  body += user;
  body += '\0';
  body += "database";
  body += '\0';
  body += database;
  body += '\0';
  body += '\0';
  std::string m;
  PutU32(&m, uint32_t(body.size() + 4));
  return m + body;
}

std::string PgQueryMessage(const std::string& sql) { return Typed('Q', sql + '\0'); }

std::string PgTerminateMessage() { return Typed('X', ""); }

StatusOr<bool> PgTakeMessage(std::string* buf, PgMessage* out) {
  if (buf->size() < 5) return false;
  const uint32_t len = GetU32(buf->data() + 1);
  if (len < 4 || len > (1u << 30))
    return ErrStatus("not a PostgreSQL v3 message (type 0x%02x, length %u)", unsigned((*buf)[0]) & 0xff, len);
  if (buf->size() < size_t(len) + 1) return false;
  out->type = (*buf)[0];
  out->body.assign(*buf, 5, len - 4);
  buf->erase(0, size_t(len) + 1);
  return true;
}

bool PgAccumulate(const PgMessage& m, PgResult* r) {
  switch (m.type) {
    case 'D':
      ++r->rows;
      r->row_bytes += m.body.size();
      break;
    case 'C':
      r->tags.push_back(m.body.substr(0, m.body.find('\0')));
      break;
    case 'E':
      if (r->error.empty()) r->error = ErrorMessageField(m.body);
      break;
    case 'Z':
      return true;
    default:
      break;  // RowDescription, notices, parameter changes
  }
  return false;
}

Status PgCheckStartup(const std::vector<PgMessage>& reply) {
  bool auth_ok = false, ready = false;
  for (const PgMessage& m : reply) {
    if (m.type == 'E') return ErrStatus("postgres refused the connection: %s", ErrorMessageField(m.body).c_str());
    if (m.type == 'R') {
      const uint32_t code = m.body.size() >= 4 ? GetU32(m.body.data()) : 0xffffffffu;
      if (code != 0)
        return ErrStatus("postgres asks for authentication (request %u): the suite's cluster must trust 127.0.0.1",
                         code);
      auth_ok = true;
    }
    ready |= m.type == 'Z';
  }
  if (!auth_ok || !ready) return ErrStatus("postgres startup reply without %s", auth_ok ? "ReadyForQuery" : "AuthenticationOk");
  return Status::Ok();
}

}  // namespace jackdaw::validate
