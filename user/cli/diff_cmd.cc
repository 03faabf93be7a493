// jackdaw diff: what changed between two recordings of one workload. Each
// trace is joined with the schema and modelled as `analyze` does, then the
// two models are compared (user/diff/).
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/safe_file.h"
#include "diff/change_detection.h"
#include "diff/diff_output.h"
#include "diff/kind_matching.h"
#include "join/extractor.h"
#include "model/workload_model.h"
#include "report/report.h"
#include "schema/schema.h"
#include "trace/trace_reader.h"
#include "cli/self_path.h"

namespace jackdaw::cli {
namespace {

struct DiffArgs {
  std::string before, after, schema, json_out;
  double min_effect = 0.10;
  double min_request_effect = 0.25;
  uint64_t min_structure_requests = 5;
  double window_s = 1.0;
};

struct LoadedSide {
  diff::Side side;
  std::string kernel;
};

// One trace to one diff side: the join, then the batch model of every
// complete request (the model `analyze` builds while a trace fits in its
// warm-up; kept whole here because the tests need every request's values).
StatusOr<LoadedSide> LoadSide(const char* which, const std::string& path, const schema::Schema& schema,
                              const DiffArgs& a) {
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0)
    return ErrStatus("%s %s looks like a saved model: diff reads traces only for now; pass the .jdw trace "
                     "it was analysed from", which, path.c_str());
  auto reader = trace::TraceReader::OpenForCli(path, false);
  if (!reader.ok())
    return ErrStatus("%s: %s (pass a trace written by jackdaw record)", which, reader.status().message().c_str());
  std::vector<model::Request> requests;
  uint64_t incomplete = 0;
  join::Options jo;
  jo.reorder_window = static_cast<uint64_t>(a.window_s * 1e9);
  join::Stats stats;
  Status joined = join::ExtractRequests(**reader, schema, jo, [&](model::Request&& r) {
    if (r.incomplete) ++incomplete;
    else requests.push_back(std::move(r));
  }, &stats);
  if (!joined.ok()) return ErrStatus("%s %s: %s", which, path.c_str(), joined.message().c_str());
  if (requests.empty())
    return ErrStatus("%s %s has no complete requests under schema %s (%llu incomplete): check the schema matches "
                     "this recording (jackdaw dump %s --summary lists what it holds)",
                     which, path.c_str(), a.schema.c_str(), static_cast<unsigned long long>(incomplete),
                     path.c_str());
  if (incomplete)
    fprintf(stderr, "jackdaw: %s: %llu incomplete requests left out (the capture lost records)\n", which,
            static_cast<unsigned long long>(incomplete));
  auto model = model::BuildModel(requests);
  if (!model.ok()) return ErrStatus("%s: %s", which, model.status().message().c_str());
  LoadedSide out;
  out.side = diff::SideFromModel(*model);
  out.kernel = (*reader)->meta().kernel;
  fprintf(stderr, "jackdaw: %s %s: %zu requests, %zu clusters\n", which, path.c_str(), requests.size(),
          model->clusters.size());
  return out;
}

int Run(const DiffArgs& a, const std::string& argv0) {
  if (!a.json_out.empty()) {
    if (Status st = CheckOutput(a.json_out); !st.ok()) return PrintError("--json: " + st.message()), 1;
  }
  auto schema = schema::LoadSchema(a.schema, schema::DefaultSchemaDirs(argv0));
  if (!schema.ok()) return PrintError(schema.status().message()), 1;
  auto before = LoadSide("BEFORE", a.before, *schema, a);
  if (!before.ok()) return PrintError(before.status().message()), 1;
  auto after = LoadSide("AFTER", a.after, *schema, a);
  if (!after.ok()) return PrintError(after.status().message()), 1;
  if (before->kernel != after->kernel)
    fprintf(stderr, "jackdaw: warning: BEFORE was recorded on kernel %s, AFTER on %s: the kernel's own cost is "
            "part of every change below\n", before->kernel.c_str(), after->kernel.c_str());
  diff::DiffOptions options;
  options.min_effect = a.min_effect;
  options.min_request_effect = a.min_request_effect;
  options.min_structure_requests = a.min_structure_requests;
  const diff::KindMatching matching =
      diff::MatchKinds(before->side, after->side, diff::BaselineMatchOptions(before->side));
  const diff::DiffResult result = diff::DetectChanges(before->side, after->side, matching, options);
  diff::WriteTextTable(result, std::cout);
  if (!a.json_out.empty()) {
    Status written = WriteOutput(a.json_out, diff::DiffToJson(result, options).dump(1) + "\n");
    if (!written.ok()) return PrintError(written.message()), 1;
    fprintf(stderr, "jackdaw: diff (JSON) written to %s\n", OutputName(a.json_out).c_str());
  }
  return 0;
}

}  // namespace

Runner RegisterDiff(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* sub = app.add_subcommand(
      "diff",
      "What changed between two recordings: kinds of request matched across the two models, each kind's\n"
      "frequency, latency, CPU, disk and network tested, ranked by share of the change in CPU demand.\n"
      "  jackdaw diff before.jdw after.jdw --schema testserver\n"
      "  jackdaw diff before.jdw after.jdw --schema tcp-threadpool --json diff.json --min-effect 0.2");
  sub->add_option("before", args->before, "trace of the baseline (.jdw)")->type_name("FILE")->required();
  sub->add_option("after", args->after, "trace to compare with it (.jdw)")->type_name("FILE")->required();
  sub->add_option("-s,--schema", args->schema, "schema both traces are analysed with (name or path)")
      ->type_name("SCHEMA")
      ->required();
  Output(sub->add_option("--json", args->json_out, "write the diff as JSON")->type_name("FILE"));
  sub->add_option("--min-effect", args->min_effect,
                  "smallest change of a kind's share of the mix called significant, as a fraction\n"
                  "(0.10: a 10 % change)")
      ->type_name("FRACTION")
      ->capture_default_str()
      ->check(FiniteRange(0, 100, false, ""));
  sub->add_option("--min-request-effect", args->min_request_effect,
                  "smallest change of a kind's median latency, CPU, disk or network bytes called\n"
                  "significant (the same load recorded twice moves a sub-millisecond kind's median\n"
                  "latency or CPU by 15-20 %)")
      ->type_name("FRACTION")
      ->capture_default_str()
      ->check(FiniteRange(0, 100, false, ""));
  sub->add_option("--min-kind-requests", args->min_structure_requests,
                  "requests a new or gone kind needs before it is called a change (smaller ones are listed)")
      ->type_name("N")
      ->capture_default_str();
  AddReorderWindow(sub, &args->window_s);
  auto argv0 = SelfPathAtParse(sub);
  return [args, argv0] { return Run(*args, *argv0); };
}

}  // namespace jackdaw::cli
