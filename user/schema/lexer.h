// Schema language tokens: identifiers, numbers (decimal or 0x hex), one- and
// two-character punctuation; '#' starts a comment to end of line. The
// parser (schema.cc) pulls tokens one at a time; positions are 1-based so
// errors can name line:column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jackdaw::schema {

enum class Tok : uint8_t { kEnd, kIdent, kNumber, kPunct };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // identifier, number text or punctuation
  int line = 0, col = 0;
};

// Token text as it may appear in a one-line error: printable ASCII as is,
// anything else (NUL, control characters, raw bytes) as \xNN.
std::string Printable(std::string_view text);

// "end of file", "number 12" or the quoted, printable token text.
std::string Describe(const Token& t);

// Hand-written lexer over text that outlives it.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  // A schema name as files have them ([A-Za-z0-9_.-]+: tcp-threadpool), as
  // an identifier token; empty if none follows.
  void NextName(Token* t);

  // Returns false with *bad set for an unexpected character.
  bool Next(Token* t, Token* bad);

 private:
  char Advance();
  void SkipSpace();

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace jackdaw::schema
