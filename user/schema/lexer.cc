#include "schema/lexer.h"

#include <cctype>
#include <cstdio>
#include <cstring>

namespace jackdaw::schema {

std::string Printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[5];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd:
      return "end of file";
    case Tok::kNumber:
      return "number " + t.text;
    case Tok::kIdent:
    case Tok::kPunct:
      return "'" + Printable(t.text) + "'";
  }
  return "?";
}

void Lexer::NextName(Token* t) {
  SkipSpace();
  t->kind = Tok::kIdent;
  t->line = line_;
  t->col = col_;
  t->text.clear();
  while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                 std::strchr("_.-", text_[pos_]) != nullptr))
    t->text += Advance();
}

bool Lexer::Next(Token* t, Token* bad) {
  SkipSpace();
  t->line = line_;
  t->col = col_;
  t->text.clear();
  if (pos_ >= text_.size()) {
    t->kind = Tok::kEnd;
    return true;
  }
  const char c = text_[pos_];
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    t->kind = Tok::kIdent;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
      t->text += Advance();
    return true;
  }
  if (std::isdigit(static_cast<unsigned char>(c))) {
    t->kind = Tok::kNumber;
    if (c == '0' && pos_ + 1 < text_.size() && (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
      t->text += Advance();
      t->text += Advance();
      while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_])))
        t->text += Advance();
    } else {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        t->text += Advance();
    }
    return true;
  }
  static const char* kTwo[] = {"==", "!=", "<=", ">="};
  for (const char* two : kTwo) {
    if (text_.substr(pos_, 2) == two) {
      t->kind = Tok::kPunct;
      t->text += Advance();
      t->text += Advance();
      return true;
    }
  }
  if (std::strchr("={}(),|:&<>-*", c)) {
    t->kind = Tok::kPunct;
    t->text += Advance();
    return true;
  }
  bad->kind = Tok::kPunct;
  bad->text = std::string(1, c);
  bad->line = line_;
  bad->col = col_;
  return false;
}

char Lexer::Advance() {
  const char c = text_[pos_++];
  if (c == '\n') {
    line_++;
    col_ = 1;
  } else {
    col_++;
  }
  return c;
}

void Lexer::SkipSpace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      Advance();
    } else {
      break;
    }
  }
}

}  // namespace jackdaw::schema
