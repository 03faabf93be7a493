// The PostgreSQL frontend/backend protocol, version 3, as far as the
// real-server suite's client needs it: a StartupMessage (trust
// authentication, no password), simple Query ('Q') and Terminate ('X'),
// and the backend's replies up to ReadyForQuery ('Z').
//
// Framing: every message after the startup packet is a type byte and a
// big-endian int32 length that counts itself but not the type byte; the
// startup packet has no type byte. PgTakeMessage() cuts one message off the
// front of a receive buffer, so a caller reading a TCP stream appends what
// recv() returns and takes messages until it sees 'Z'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace jackdaw::validate {

struct PgMessage {
  char type = 0;
  std::string body;  // without type and length
};

std::string PgStartupMessage(const std::string& user, const std::string& database);
std::string PgQueryMessage(const std::string& sql);
std::string PgTerminateMessage();

// Takes one complete message off the front of *buf into *out; false when
// *buf holds only part of one. A length below 4 or above 1 GiB is an error
// (not PostgreSQL speaking).
StatusOr<bool> PgTakeMessage(std::string* buf, PgMessage* out);

// What a query's reply (the messages before and including 'Z') said.
struct PgResult {
  std::vector<std::string> tags;  // CommandComplete tags, in order: "SELECT 1", "INSERT 0 500"
  uint64_t rows = 0;              // DataRow messages
  uint64_t row_bytes = 0;         // their bodies' bytes
  std::string error;              // an ErrorResponse's message (field 'M'), if any
};

// Adds one backend message to *r; returns true at ReadyForQuery.
bool PgAccumulate(const PgMessage& m, PgResult* r);

// The startup reply: AuthenticationOk and ReadyForQuery are required; a
// request for a password or an ErrorResponse fails, naming it.
Status PgCheckStartup(const std::vector<PgMessage>& reply);

}  // namespace jackdaw::validate
