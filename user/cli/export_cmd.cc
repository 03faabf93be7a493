// jackdaw export: a trace's contents in other tools' formats.
#include <cstdio>

#include "cli/commands.h"
#include "common/safe_file.h"
#include "pcap/export.h"
#include "trace/trace_reader.h"

namespace jackdaw::cli {
namespace {

struct ExportArgs {
  std::string file;
  std::string pcap_out;
  bool salvage = false;
};

int Run(const ExportArgs& a) {
  if (a.pcap_out.empty()) {
    PrintError("export: nothing to write: pass --pcap OUT.pcapng (or -o OUT.pcapng)");
    return 1;
  }
  if (Status out = CheckOutput(a.pcap_out); !out.ok()) return PrintError("--pcap: " + out.message()), 1;
  auto reader = trace::TraceReader::Open(a.file, {.allow_truncated = a.salvage});
  if (!reader.ok()) {
    PrintError(reader.status().message() + (a.salvage ? "" : " (--salvage exports what is intact)"));
    return 1;
  }
  if (!(*reader)->damage().ok()) fprintf(stderr, "jackdaw: warning: %s\n", (*reader)->damage().message().c_str());
  auto st = pcap::ExportPcapng(**reader, a.pcap_out);
  if (!st.ok()) return PrintError(st.status().message()), 1;
  if (st->packets == 0) {
    PrintError(a.file + " holds no packet records: record with the net group (jackdaw record --probes ...,net) "
               "to export packets");
    return 1;
  }
  fprintf(stderr, "jackdaw: %llu packets on %llu interfaces written to %s\n",
          static_cast<unsigned long long>(st->packets), static_cast<unsigned long long>(st->interfaces),
          OutputName(a.pcap_out).c_str());
  return 0;
}

}  // namespace

Runner RegisterExport(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* sub = app.add_subcommand(
      "export",
      "Write a trace's records in another tool's format.\n"
      "  jackdaw export web.jdw --pcap web.pcapng     # packets, for Wireshark / tshark / tcpdump -r\n"
      "The net probes keep each packet's addresses, ports, TCP sequence numbers, flags and\n"
      "lengths, not its bytes: the pcapng holds the IP and TCP/UDP headers rebuilt from them\n"
      "(TCP options and payload are not captured; each packet's original length counts the\n"
      "payload), timestamped with the recording machine's wall clock.");
  sub->add_option("file", args->file, "trace file (.jdw)")->type_name("FILE")->required();
  Output(sub->add_option("--pcap,-o,--output", args->pcap_out, "write the packet records as pcapng to this file")
             ->type_name("FILE"));
  sub->add_flag("--salvage", args->salvage, "export the intact part of a damaged trace");
  return [args] { return Run(*args); };
}

}  // namespace jackdaw::cli
