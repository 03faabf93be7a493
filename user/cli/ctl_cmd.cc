// jackdaw ctl: talk to a running session's control socket.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <functional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "control/control_socket.h"

namespace jackdaw::cli {
namespace {

struct CtlArgs {
  std::string session;
  std::string run_dir = control::kDefaultRunDir;
  std::vector<std::string> request;
  std::string json_out;  // --json: "-", --json=FILE: FILE
  bool raw = false;      // the old spelling of --json
  double window = 0;
};

void PrintStatus(const nlohmann::json& j) {
  printf("session %s (pid %s)\n", j.value("session", "?").c_str(), j.contains("pid") ? j["pid"].dump().c_str() : "?");
  printf("%-10s %-8s %-11s %12s %12s %10s\n", "group", "state", "mode", "events", "events/s", "lost");
  for (const auto& g : j["groups"]) {
    if (!g.value("available", false)) continue;
    printf("%-10s %-8s %-11s %12llu %12.0f %10llu\n", g.value("group", "").c_str(),
           g.value("enabled", false) ? "enabled" : "disabled", g.value("mode", "").c_str(),
           static_cast<unsigned long long>(g.value("events", 0ull)), g.value("events_per_s", 0.0),
           static_cast<unsigned long long>(g.value("lost", 0ull)));
  }
  if (j.contains("filters")) printf("filters: %s\n", j["filters"].dump().c_str());
  if (j.contains("memory"))
    printf("memory: rss %.1f MB (peak %.1f MB)\n", j["memory"].value("rss_bytes", 0.0) / 1e6,
           j["memory"].value("peak_rss_bytes", 0.0) / 1e6);
  if (j.contains("interact")) {
    const auto& ia = j["interact"];
    printf("interact: granularity %s, class window %.1f s, %s connections followed\n",
           ia.value("granularity", "?").c_str(), ia.value("window_s", 0.0), ia["connections"].dump().c_str());
    if (ia.contains("last_window") && ia["last_window"].contains("classes"))
      printf("last class window: %.1f s, %s classes, %s interactions\n", ia["last_window"].value("window_s", 0.0),
             ia["last_window"]["classes"].dump().c_str(), ia["last_window"]["interactions"].dump().c_str());
  }
  if (j.contains("flight")) {
    const auto& f = j["flight"];
    printf("flight recorder: %.1f s held of %.1f s, %.0f MB of %.0f MB\n", f.value("held_s", 0.0),
           f.value("asked_s", 0.0), f.value("bytes", 0.0) / 1048576, f.value("cap_bytes", 0.0) / 1048576);
    if (f.contains("note")) printf("  %s\n", f.value("note", "").c_str());
  }
  if (j.contains("pipeline_delay_ms"))
    printf("pipeline delay: %.1f ms (max %.1f ms); requests %s, clusters %s\n", j.value("pipeline_delay_ms", 0.0),
           j.value("pipeline_delay_max_ms", 0.0), j["requests"].dump().c_str(), j["clusters"].dump().c_str());
}

// What a session answers (control::Controller); a word outside these is
// most likely a file meant for --json, given apart from it.
const char* const kRequests[] = {"list", "status", "enable", "disable", "filter", "granularity", "snapshot"};

// The reply (or the session list) as JSON, where --json said. On stdout
// it comes alone, for a pipe: the text says nothing the JSON does not.
int Reply(const CtlArgs& a, const nlohmann::json& reply, const std::function<void()>& print_text) {
  if (!IsStdout(a.json_out)) print_text();
  if (a.json_out.empty()) return 0;
  Status written = WriteOutput(a.json_out, reply.dump() + "\n");
  if (!written.ok()) return PrintError("--json: " + written.message()), 1;
  return 0;
}

int Run(CtlArgs a) {
  if (a.raw && a.json_out.empty()) a.json_out = "-";
  if (a.request.empty())
    return PrintError("no request: jackdaw ctl list|status|enable GROUP|disable GROUP|filter ...|granularity "
                      "interaction|class|snapshot FILE"),
           1;
  if (std::find(std::begin(kRequests), std::end(kRequests), a.request[0]) == std::end(kRequests))
    return PrintError("unknown request '" + a.request[0] + "': give one of list, status, enable, disable, filter, " +
                      "granularity, snapshot" +
                      (a.json_out.empty() ? std::string()
                                          : " (a file for --json is written --json=" + a.request[0] + ")")),
           kExitUsage;
  if (!a.json_out.empty())
    if (Status st = CheckOutput(a.json_out); !st.ok()) return PrintError("--json: " + st.message()), 1;
  if (a.window > 0 && a.request[0] != "granularity")
    return PrintError("--class-window goes with granularity class: jackdaw ctl granularity class --class-window 5"),
           kExitUsage;
  if (geteuid() != 0) return PrintError("jackdaw ctl needs root (the control sockets are root-only): run it with sudo"), 2;
  auto sessions = control::ListSessions(a.run_dir);
  if (a.request[0] == "list" && a.session.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : sessions) list.push_back({{"session", s.id}, {"socket", s.socket}, {"alive", s.alive}});
    return Reply(a, {{"ok", true}, {"sessions", list}}, [&] {
      if (sessions.empty()) printf("no jackdaw session is running\n");
      for (const auto& s : sessions)
        printf("%s  %s%s\n", s.id.c_str(), s.socket.c_str(), s.alive ? "" : "  (stale: its process is gone)");
    });
  }
  std::string socket;
  if (!a.session.empty()) {
    socket = a.run_dir + "/" + a.session + ".sock";
  } else {
    std::vector<control::SessionInfo> alive;
    for (const auto& s : sessions)
      if (s.alive) alive.push_back(s);
    if (alive.empty()) return PrintError("no jackdaw session is running (start one with jackdaw live or jackdaw record)"), 1;
    if (alive.size() > 1) return PrintError("several sessions are running: pick one with --session ID (jackdaw ctl list)"), 1;
    socket = alive[0].socket;
  }
  std::vector<std::string> words = a.request;
  // The session runs in a directory of its own: a relative path means the
  // caller's.
  if (words[0] == "snapshot" && words.size() == 2 && !words[1].empty() && words[1][0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
      return PrintError(std::string("cannot read the current directory: ") + strerror(errno) +
                        " (give the snapshot an absolute path)"),
             1;
    words[1] = std::string(cwd) + "/" + words[1];
  }
  if (a.window > 0) words.insert(words.end(), {"--window", std::to_string(a.window)});
  const std::string line = control::JoinRequest(words);
  auto reply = control::SendRequest(socket, line);
  if (!reply.ok()) return PrintError(reply.status().message()), 1;
  auto j = nlohmann::json::parse(*reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return PrintError("malformed reply from the session: " + *reply), 1;
  if (!j.value("ok", false)) return PrintError(j.value("error", std::string("request failed"))), 1;
  return Reply(a, j, [&] {
    if (a.request[0] == "status") PrintStatus(j);
    else printf("%s\n", j.dump(2).c_str());
  });
}

}  // namespace

Runner RegisterCtl(CLI::App& app) {
  auto args = std::make_shared<CtlArgs>();
  CLI::App* sub = app.add_subcommand(
      "ctl",
      "Control a running jackdaw live / record session through its socket (/run/jackdaw/PID.sock).\n"
      "  sudo jackdaw ctl list                      running sessions\n"
      "  sudo jackdaw ctl status                    groups, event rates, losses, memory, delay\n"
      "  sudo jackdaw ctl --json status | jq .groups\n"
      "                                             the reply as JSON (--json=FILE: into FILE)\n"
      "  sudo jackdaw ctl disable net               detach a probe group's BPF links\n"
      "  sudo jackdaw ctl enable net                attach them again\n"
      "  sudo jackdaw ctl filter syscalls read,write|all\n"
      "  sudo jackdaw ctl filter pid 1234           add a process (sessions started with --pid)\n"
      "  sudo jackdaw ctl filter pid -1234          take it out again (not its descendants)\n"
      "  sudo jackdaw ctl granularity class --class-window 5\n"
      "                                             interact group: sums per client class,\n"
      "                                             a window every 5 s (shown in status)\n"
      "  sudo jackdaw ctl granularity interaction   interact group: one record per interaction\n"
      "  sudo jackdaw ctl snapshot /tmp/last.jdw    write the flight recorder (jackdaw live)");
  sub->add_option("--session", args->session, "session id (the pid in jackdaw ctl list)")->type_name("ID");
  sub->add_option("--run-dir", args->run_dir, "directory of control sockets")->type_name("DIR")->capture_default_str();
  // A flag, its file given only as --json=FILE: `ctl --json status` is the
  // status request, not a file named "status".
  Output(sub->add_flag("--json{-}", args->json_out, "print the reply as JSON instead of the text; --json=FILE writes it to FILE")
             ->option_text("[=FILE]"));
  sub->add_flag("--raw", args->raw, "old spelling of --json")->group("");
  AddClassWindow(sub, &args->window, "--window", 0.1, false);
  sub->add_option("request", args->request,
                  "list, status, enable GROUP, disable GROUP, filter ..., granularity interaction|class, snapshot FILE")
      ->type_name("REQUEST");
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
