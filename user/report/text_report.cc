// The text report: Magpie's Table 2 columns, one row per cluster.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "model/explain.h"
#include "model/scoring.h"
#include "report/report.h"
#include "report/report_util.h"

namespace jackdaw::report {
namespace {

// Beside the anomalies by distance: the requests the likelihood model
// (docs/likelihood.md) found least likely, with the steps that cost them.
void WriteUnlikely(const model::likelihood::LikelihoodSummary& l, std::ostream& out) {
  if (!l.present || l.unlikely.empty()) return;
  out << fmt::format("\nLeast likely requests ({} of {}; automaton of {} states, {} transitions, alpha {}):\n",
                     l.unlikely.size(), l.requests_learned, l.states, l.transitions, l.alpha);
  for (const model::likelihood::UnlikelyRequest& u : l.unlikely) {
    out << fmt::format("  request {}: log-likelihood {:.3f} per event ({} events)\n", u.request_id,
                       u.log_likelihood, u.events);
    for (const model::likelihood::UnlikelyStep& s : u.steps)
      out << fmt::format("    - event {}: {} (p {:.4f}) where the model expected {} (p {:.4f})\n", s.position,
                         s.symbol, s.probability, s.expected, s.expected_probability);
    if (u.off_model_events)
      out << fmt::format("    - then {} events the model has no state for (scored by their overall frequency)\n",
                         u.off_model_events);
  }
}

}  // namespace

void WriteTextReport(const model::WorkloadModel& m, std::ostream& out,
                     const TextReportOptions& options) {
  const uint64_t n = std::max<uint64_t>(m.requests.size(), m.streamed_requests);
  out << fmt::format("jackdaw workload model: {} requests, {} clusters, {} anomalies\n", n,
                     m.clusters.size(), m.anomalies.size());
  if (m.sample_mode != "off")
    out << fmt::format("head sampling ({}): the requests above are {} of those served, measured from the work "
                       "left out ({} by the rates asked; each connection recorded whole or not at all); about {} in "
                       "all, each cluster's size divided alike\n",
                       m.sample_mode, Percent(m.sampled_share), Percent(m.sample_rate),
                       std::llround(double(n) / m.sampled_share));
  out << "threshold " << ThresholdText(m.threshold) << "\n";
  if (m.stats.outlier_requests)
    out << fmt::format("outliers: {} requests in {} clusters of fewer than {:.0f}% of the requests, attached to their "
                       "nearest cluster (anomalies below)\n",
                       m.stats.outlier_requests, m.stats.outlier_clusters, 100 * cluster::kOutlierShare);
  out << fmt::format("normalisation: CPU {}, disk {}, net {} per unit of distance\n",
                     model::FormatResource(0, m.normalization.cpu_ns),
                     model::FormatResource(1, m.normalization.disk_bytes),
                     model::FormatResource(2, m.normalization.net_bytes));
  out << fmt::format("accounted CPU: {}   model error: {} (CPU {}, disk {}, net {})\n",
                     m.accounted_cpu_fraction ? Percent(*m.accounted_cpu_fraction) : "n/a",
                     Percent(m.error.combined), Percent(m.error.per_resource[0]),
                     Percent(m.error.per_resource[1]), Percent(m.error.per_resource[2]));
  if (options.truth) {
    model::AgreementScore s = model::ScoreAgainstTruth(m, *options.truth);
    out << fmt::format(
        "ground truth: purity {:.3f}, adjusted Rand index {:.3f} ({} labelled, {} not)\n", s.purity,
        s.adjusted_rand_index, s.scored, s.unlabeled);
  }
  out << "\n";

  const bool truth = options.truth != nullptr;
  out << fmt::format("{:<7} {:>7} {}{:>8} {:>9} {:>7} {:>11} {:>10} {:>10} {:>11} {:>11}\n",
                     "Cluster", "Size", truth ? fmt::format("{:<16} ", "Contents") : "", "Dia.",
                     "Min.Sep.", "Nearest", "CPU", "Disk", "Net", "Latency", "Canonical");
  for (const model::ClusterSummary& c : m.clusters) {
    std::string contents;
    if (truth) contents = fmt::format("{:<16} ", model::Composition(c, *options.truth));
    out << fmt::format(
        "{:<7} {:>6}{} {}{:>8.3f} {:>9.3f} {:>7} {:>11} {:>10} {:>10} {:>8.3f} ms {:>8.3f} ms\n",
        c.label, c.size, c.anomalous ? "\u2020" : " ", contents, c.diameter, c.min_separation,
        c.nearest_cluster >= 0 ? m.clusters[c.nearest_cluster].label : "-",
        model::FormatResource(0, c.mean.cpu_ns), model::FormatResource(1, c.mean.disk_bytes),
        model::FormatResource(2, c.mean.net_bytes), c.latency_ms.mean, c.canonical_latency_ms.mean);
    if (!c.processes.empty()) out << fmt::format("{:<7} by process: {}\n", "", model::FormatProcessMix(c.processes));
  }
  out << fmt::format(
      "(\u2020 anomalous cluster; Dia. = mean distance to the representative; Min.Sep. = distance "
      "to the nearest other representative; CPU/Disk/Net = mean demand per request)\n");
  out << fmt::format("average diameter {:.3f}, average inter-cluster distance {:.3f}\n",
                     m.avg_diameter, m.avg_inter_cluster_distance);

  if (!m.anomalies.empty()) {
    out << fmt::format("\nAnomalies ({}):\n", m.anomalies.size());
    size_t shown = 0;
    for (const model::Anomaly& a : m.anomalies) {
      if (shown++ >= options.max_anomalies) {
        out << fmt::format("  ... {} more (see --json / --csv)\n",
                           m.anomalies.size() - options.max_anomalies);
        break;
      }
      out << fmt::format("  request {} (cluster {}, {}), distance {:.3f}", a.request_id,
                         m.clusters[a.cluster].label, AnomalyKindName(a.kind), a.distance);
      if (a.compared_cluster >= 0)
        out << fmt::format(" from the representative of {} (request {})",
                           m.clusters[a.compared_cluster].label, a.compared_request_id);
      out << "\n";
      for (const std::string& r : a.reasons) out << "    - " << r << "\n";
      out << "    events:";
      size_t k = 0;
      for (const model::AnomalyEvent& e : a.events) {
        if (k++ >= options.max_anomaly_events) {
          out << " ...";
          break;
        }
        out << " " << (e.differs ? "*" : "") << EventText(e);
      }
      out << "\n";
    }
    out << "  (* marks events that differ from the representative)\n";
  }

  WriteUnlikely(m.likelihood, out);

  if (options.show_breakdown && !m.breakdowns.empty()) {
    out << "\nLatency breakdown (slowest vs fastest requests of each cluster):\n";
    for (const model::LatencyBreakdown& b : m.breakdowns)
      out << fmt::format("  {}: {}\n", m.clusters[b.cluster].label, b.explanation);
  }

  const model::ModelStats& s = m.stats;
  if (s.ignored_backward_edges || s.duplicate_edges)
    out << fmt::format("\nnote: {} backward and {} duplicate causal edges ignored\n",
                       s.ignored_backward_edges, s.duplicate_edges);
}

}  // namespace jackdaw::report
