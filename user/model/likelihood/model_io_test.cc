#include "model/likelihood/model_io.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "model/likelihood/online_likelihood.h"
#include "model/likelihood/reber_grammar.h"
#include "model/likelihood/request_likelihood.h"
#include "request/synthetic.h"

namespace jackdaw::model::likelihood {
namespace {

// A model learned from Reber strings (rare branches, states of every kind)
// with each letter as a symbol name.
RequestLikelihood LearnedReber(size_t n, std::vector<std::vector<std::string>>* strings) {
  RequestLikelihood rl({}, LikelihoodOptions{});
  std::mt19937_64 rng(33);
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::string> s;
    for (char c : reber::Generate(rng)) s.push_back(std::string("ev:") + c);
    rl.AddSymbols(i + 1, s);
    strings->push_back(std::move(s));
  }
  rl.Learn();
  return rl;
}

SavedModel RoundTrip(const SavedModel& m) {
  const std::string text = SavedModelToJson(m).dump(1);
  auto back = ModelFromJson(nlohmann::json::parse(text), "model.json");
  EXPECT_TRUE(back.ok()) << back.status().message();
  return back.ok() ? std::move(*back) : SavedModel{};
}

TEST(ModelIo, RoundTripScoresEveryRequestIdentically) {
  std::vector<std::vector<std::string>> strings;
  RequestLikelihood rl = LearnedReber(500, &strings);
  SavedModel saved = rl.Summary().model;
  saved.schema = "testserver";
  const SavedModel loaded = RoundTrip(saved);
  EXPECT_EQ(loaded.schema, "testserver");
  EXPECT_EQ(loaded.alpha, saved.alpha);
  EXPECT_EQ(loaded.symbols, saved.symbols);
  EXPECT_EQ(loaded.automaton.num_states(), saved.automaton.num_states());
  EXPECT_EQ(loaded.automaton.num_transitions(), saved.automaton.num_transitions());
  // Every learned string, plus strings the model never saw (an unknown
  // symbol, a known one out of place), to the bit.
  strings.push_back({"ev:B", "ev:Z", "ev:E"});
  strings.push_back({"ev:B", "ev:E", "ev:E", "ev:T"});
  strings.push_back({});
  OnlineLikelihood in_memory(saved, OnlineOptions{});
  OnlineLikelihood from_file(loaded, OnlineOptions{});
  for (const auto& s : strings) {
    const auto a = in_memory.ObserveSymbols(s), b = from_file.ObserveSymbols(s);
    ASSERT_TRUE(a.scored);
    EXPECT_EQ(a.log_likelihood, b.log_likelihood);
  }
  // And as analyze scored them: the saved model is the learned one.
  for (uint32_t s = 0; s < rl.tree().states().size(); ++s)
    if (rl.tree().states()[s].ends) {
      std::vector<std::string> names;
      for (uint32_t id : rl.tree().Path(s)) names.push_back(saved.symbols[id]);
      EXPECT_EQ(from_file.ObserveSymbols(names).log_likelihood, *rl.ScoreOfState(s));
    }
}

TEST(ModelIo, ReadsTheModelOutOfAnAnalyzeJson) {
  std::vector<std::vector<std::string>> strings;
  SavedModel saved = LearnedReber(100, &strings).Summary().model;
  saved.schema = "tcp-threadpool";
  nlohmann::json doc = {{"format", "jackdaw.model"}, {"version", 1}};
  doc["likelihood"] = {{"states", 3}, {"model", nlohmann::json::parse(SavedModelToJson(saved).dump())}};
  auto m = ModelFromJson(doc, "m.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->schema, "tcp-threadpool");
  doc.erase("likelihood");
  m = ModelFromJson(doc, "m.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("has no likelihood model"), std::string::npos);
}

// Every way of breaking the file is one error naming it, never a crash.
TEST(ModelIo, MalformedModelsAreOneClearError) {
  std::vector<std::vector<std::string>> strings;
  SavedModel saved = LearnedReber(100, &strings).Summary().model;
  saved.schema = "testserver";
  const nlohmann::json good = nlohmann::json::parse(SavedModelToJson(saved).dump());
  ASSERT_TRUE(ModelFromJson(good, "m.json").ok());
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"version", [](nlohmann::json& j) { j["version"] = 2; }, "version 2, this jackdaw reads version 1"},
      {"format", [](nlohmann::json& j) { j["format"] = "other"; }, "\"format\""},
      {"format type", [](nlohmann::json& j) { j["format"] = 3; }, "\"format\""},
      {"version type", [](nlohmann::json& j) { j["version"] = "1"; }, "\"version\""},
      {"schema type", [](nlohmann::json& j) { j["schema"] = nullptr; }, "\"schema\""},
      {"no states", [](nlohmann::json& j) { j["states"] = nlohmann::json::array(); }, "\"states\""},
      {"negative", [](nlohmann::json& j) { j["states"][0]["visits"] = -1; }, "\"visits\""},
      {"fraction", [](nlohmann::json& j) { j["states"][0]["ends"] = 0.5; }, "\"ends\""},
      {"sum", [](nlohmann::json& j) { j["states"][0]["visits"] = 1u << 30; }, "are not its ends plus"},
      {"target", [](nlohmann::json& j) { j["states"][0]["transitions"][0]["target"] = 1u << 20; }, "past the"},
      {"symbol", [](nlohmann::json& j) { j["states"][0]["transitions"][0]["symbol"] = 99; }, "past the"},
      {"alpha", [](nlohmann::json& j) { j["alpha"] = 0; }, "\"alpha\""},
      {"symbols", [](nlohmann::json& j) { j["symbols"][0] = 3; }, "not a string"},
      {"duplicate", [](nlohmann::json& j) { j["symbols"][1] = j["symbols"][0]; }, "listed twice"},
      {"state type", [](nlohmann::json& j) { j["states"][0] = "x"; }, "not an object"},
      {"transitions", [](nlohmann::json& j) { j["states"][0].erase("transitions"); }, "\"transitions\""},
      {"cpu", [](nlohmann::json& j) { j["states"][0]["cpu_ns"] = 3; }, "\"cpu_ns\""},
      {"not an object", [](nlohmann::json& j) { j = nlohmann::json::array(); }, "not a JSON object"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = good;
    c.edit(j);
    auto m = ModelFromJson(j, "m.json");
    ASSERT_FALSE(m.ok()) << c.what;
    const std::string& msg = m.status().message();
    EXPECT_EQ(msg.rfind("m.json: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find("jackdaw analyze"), std::string::npos) << msg;  // the fix
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// Every member of a good model replaced by a value of every other type:
// the loader answers each with a model or one error line, never an
// exception or a crash.
TEST(ModelIo, EveryMemberOfEveryTypeIsHandled) {
  std::vector<std::vector<std::string>> strings;
  SavedModel saved = LearnedReber(50, &strings).Summary().model;
  saved.schema = "testserver";
  const nlohmann::json good = nlohmann::json::parse(SavedModelToJson(saved).dump());
  const std::vector<nlohmann::json> values = {nullptr, -1, "x", 1.5, 1e300, nlohmann::json::array(),
                                              nlohmann::json::object(), true, 18446744073709551615ull};
  size_t tried = 0, refused = 0;
  const nlohmann::json flat = good.flatten();  // held: items() does not keep it alive
  for (const auto& [path, leaf] : flat.items()) {
    for (const nlohmann::json& v : values) {
      nlohmann::json j = good;
      j[nlohmann::json::json_pointer(path)] = v;
      StatusOr<SavedModel> m = Status::Error("unset");
      ASSERT_NO_THROW(m = ModelFromJson(j, "m.json")) << path << " = " << v.dump();
      ++tried;
      if (!m.ok()) {
        ++refused;
        EXPECT_EQ(m.status().message().find('\n'), std::string::npos);
      }
    }
  }
  EXPECT_GT(tried, 500u);
  EXPECT_GT(refused, tried / 2);
}

TEST(ModelIo, FilesThatAreNotModels) {
  EXPECT_FALSE(LoadModelFile("/nonexistent/model.json").ok());
  const std::string path = testing::TempDir() + "/not-json.json";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("{\"format\": \"jackdaw.model\", \"vers", f);  // truncated
  fclose(f);
  auto m = LoadModelFile(path);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not JSON"), std::string::npos);
  remove(path.c_str());
}

}  // namespace
}  // namespace jackdaw::model::likelihood
