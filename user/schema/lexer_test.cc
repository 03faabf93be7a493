#include "schema/lexer.h"

#include <vector>

#include <gtest/gtest.h>

namespace jackdaw::schema {
namespace {

// Lexes all of text; fails the test on a character the lexer refuses.
std::vector<Token> LexAll(std::string_view text) {
  Lexer lex(text);
  std::vector<Token> out;
  for (;;) {
    Token t, bad;
    if (!lex.Next(&t, &bad)) {
      ADD_FAILURE() << "refused " << Describe(bad) << " at " << bad.line << ":" << bad.col;
      return out;
    }
    out.push_back(t);
    if (t.kind == Tok::kEnd) return out;
  }
}

TEST(Lexer, IdentifiersNumbersAndPunctuationWithPositions) {
  auto toks = LexAll("event recv_x = 0x1F # a comment\n  a>=12 & b!=c");
  ASSERT_EQ(toks.size(), 12u);
  EXPECT_EQ(toks[0].kind, Tok::kIdent);
  EXPECT_EQ(toks[0].text, "event");
  EXPECT_EQ(toks[1].text, "recv_x");
  EXPECT_EQ(toks[2].kind, Tok::kPunct);
  EXPECT_EQ(toks[3].kind, Tok::kNumber);
  EXPECT_EQ(toks[3].text, "0x1F");
  EXPECT_EQ(toks[4].text, "a");
  EXPECT_EQ(toks[4].line, 2);
  EXPECT_EQ(toks[4].col, 3);
  EXPECT_EQ(toks[5].text, ">=");
  EXPECT_EQ(toks[6].text, "12");
  EXPECT_EQ(toks[7].text, "&");
  EXPECT_EQ(toks[9].text, "!=");
  EXPECT_EQ(toks[11].kind, Tok::kEnd);
}

TEST(Lexer, RefusesAnUnexpectedCharacterWithItsPosition) {
  Lexer lex("a\n $");
  Token t, bad;
  ASSERT_TRUE(lex.Next(&t, &bad));
  EXPECT_FALSE(lex.Next(&t, &bad));
  EXPECT_EQ(bad.text, "$");
  EXPECT_EQ(bad.line, 2);
  EXPECT_EQ(bad.col, 2);
}

TEST(Lexer, NextNameTakesFileNameCharacters) {
  Lexer lex("  tcp-threadpool.v2 rest");
  Token t;
  lex.NextName(&t);
  EXPECT_EQ(t.kind, Tok::kIdent);
  EXPECT_EQ(t.text, "tcp-threadpool.v2");
  lex.NextName(&t);
  EXPECT_EQ(t.text, "rest");
  lex.NextName(&t);
  EXPECT_EQ(t.text, "");
}

TEST(Lexer, DescribeMakesEveryTokenPrintable) {
  Token t;
  EXPECT_EQ(Describe(t), "end of file");
  t.kind = Tok::kNumber;
  t.text = "7";
  EXPECT_EQ(Describe(t), "number 7");
  t.kind = Tok::kPunct;
  t.text = std::string("\x01\xff", 2);
  EXPECT_EQ(Describe(t), "'\\x01\\xff'");
  EXPECT_EQ(Printable("ok\n"), "ok\\x0a");
}

}  // namespace
}  // namespace jackdaw::schema
