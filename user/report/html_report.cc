// --html: one self-contained page (inline CSS and SVG, no scripts, no
// external assets) so it can be mailed, archived or attached to a bug.
// Tooltips are SVG <title> elements, which browsers show without scripts.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "model/scoring.h"
#include "common/safe_file.h"
#include "report/report.h"
#include "report/report_util.h"

namespace jackdaw::report {
namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                    "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                    "#9c755f", "#17becf", "#bcbd22", "#8c564b"};
constexpr const char* kAnomalyColour = "#222222";
constexpr size_t kMaxClustersPlotted = 24;
constexpr size_t kMaxRepresentatives = 12;
constexpr int kWidth = 1060;

const char* Colour(uint32_t cluster) { return kPalette[cluster % std::size(kPalette)]; }

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Round axis maximum and a tick step for [0, max].
std::pair<double, double> NiceAxis(double max, int ticks = 5) {
  if (!(max > 0)) return {1, 0.2};
  double raw = max / ticks;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = f * mag;
    if (step >= raw) break;
  }
  return {std::ceil(max / step) * step, step};
}

std::string Num(double v) {
  if (v == 0) return "0";
  if (std::abs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::abs(v) >= 10) return fmt::format("{:.1f}", v);
  if (std::abs(v) >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

// An x axis with grid lines at y from `top` to `bottom`.
std::string XAxis(double x0, double x1, double top, double bottom, double max, double step,
                  const std::string& unit) {
  std::string s;
  for (double v = 0; v <= max + step / 2; v += step) {
    double x = x0 + (x1 - x0) * v / max;
    s += fmt::format(
        "<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' class='grid'/>"
        "<text x='{0:.1f}' y='{3:.1f}' class='tick' text-anchor='middle'>{4}</text>",
        x, top, bottom, bottom + 14, Num(v));
  }
  s += fmt::format("<text x='{:.1f}' y='{:.1f}' class='tick' text-anchor='end'>{}</text>", x1,
                   bottom + 28, Esc(unit));
  return s;
}

std::string ClusterName(const model::WorkloadModel& m, uint32_t c, const TruthLabels* truth) {
  std::string s = m.clusters[c].label;
  if (truth) s += " (" + model::Composition(m.clusters[c], *truth) + ")";
  return s;
}

std::string SizesChart(const model::WorkloadModel& m, const TruthLabels* truth) {
  const size_t shown = std::min(m.clusters.size(), kMaxClustersPlotted);
  if (shown == 0) return "<p>No clusters.</p>";
  const double row = 22, left = 190, right = kWidth - 60, top = 10;
  const double height = top + row * static_cast<double>(shown) + 40;
  auto [max, step] = NiceAxis(m.clusters.front().size);
  std::string s = fmt::format(
      "<svg width='{}' height='{:.0f}' role='img' aria-label='cluster sizes'>", kWidth, height);
  s += XAxis(left, right, top, top + row * static_cast<double>(shown), max, step, "requests");
  for (size_t k = 0; k < shown; ++k) {
    const model::ClusterSummary& c = m.clusters[k];
    double y = top + row * static_cast<double>(k);
    double w = (right - left) * c.size / max;
    s += fmt::format("<text x='{:.0f}' y='{:.1f}' class='label' text-anchor='end'>{}</text>",
                     left - 6, y + 15, Esc(ClusterName(m, c.id, truth)));
    s += fmt::format(
        "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}'><title>{}: {} "
        "requests{}</title></rect>",
        left, y + 3, std::max(w, 1.0), row - 6, c.anomalous ? kAnomalyColour : Colour(c.id),
        Esc(c.label), c.size, c.anomalous ? " (anomalous)" : "");
    s += fmt::format("<text x='{:.1f}' y='{:.1f}' class='value'>{}</text>", left + w + 4, y + 15,
                     c.size);
  }
  if (m.clusters.size() > shown)
    s += fmt::format(
        "<text x='{:.0f}' y='{:.0f}' class='tick'>... {} smaller clusters not shown</text>", left,
        height - 4, m.clusters.size() - shown);
  return s + "</svg>";
}

// Box plot (min, quartiles, max, mean) per cluster for one metric.
std::string DistributionChart(const model::WorkloadModel& m, const TruthLabels* truth,
                              const std::string& title, const std::string& unit,
                              model::Distribution model::ClusterSummary::*field) {
  const size_t shown = std::min(m.clusters.size(), kMaxClustersPlotted);
  double max = 0;
  for (size_t k = 0; k < shown; ++k) max = std::max(max, (m.clusters[k].*field).max);
  if (shown == 0 || max <= 0)
    return fmt::format("<h3>{}</h3><p class='note'>No demand in this dimension.</p>", Esc(title));
  auto [axis_max, step] = NiceAxis(max);
  const double row = 20, left = 190, right = kWidth - 60, top = 10;
  const double height = top + row * static_cast<double>(shown) + 40;
  std::string s =
      fmt::format("<h3>{}</h3><svg width='{}' height='{:.0f}' role='img' aria-label='{}'>",
                  Esc(title), kWidth, height, Esc(title));
  s += XAxis(left, right, top, top + row * static_cast<double>(shown), axis_max, step, unit);
  auto X = [&](double v) { return left + (right - left) * v / axis_max; };
  for (size_t k = 0; k < shown; ++k) {
    const model::ClusterSummary& c = m.clusters[k];
    const model::Distribution& d = c.*field;
    const double y = top + row * static_cast<double>(k), mid = y + row / 2;
    const char* colour = c.anomalous ? kAnomalyColour : Colour(c.id);
    s += fmt::format("<text x='{:.0f}' y='{:.1f}' class='label' text-anchor='end'>{}</text>",
                     left - 6, y + 14, Esc(ClusterName(m, c.id, truth)));
    s += fmt::format(
        "<g><title>{}: min {} / p25 {} / median {} / p75 {} / max {} / mean {} {}</title>",
        Esc(c.label), Num(d.min), Num(d.p25), Num(d.median), Num(d.p75), Num(d.max), Num(d.mean),
        Esc(unit));
    s += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' stroke='{}'/>",
                     X(d.min), mid, X(d.max), mid, colour);
    s += fmt::format(
        "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}' fill-opacity='0.45' "
        "stroke='{}'/>",
        X(d.p25), y + 4, std::max(X(d.p75) - X(d.p25), 1.5), row - 8, colour, colour);
    s += fmt::format("<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' stroke='#000'/>",
                     X(d.median), y + 3, y + row - 3);
    s += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='2.5' fill='#000'/></g>", X(d.mean), mid);
  }
  return s + "</svg>";
}

// Requests over time, on lanes, coloured by cluster.
std::string TimelineChart(const model::WorkloadModel& m, std::span<const model::Request> requests,
                          size_t max_requests) {
  const size_t n = requests.size();
  if (n == 0) return "<p>No requests.</p>";
  std::vector<size_t> pick;
  if (n <= max_requests) {
    for (size_t i = 0; i < n; ++i) pick.push_back(i);
  } else {
    for (size_t k = 0; k < max_requests; ++k) pick.push_back(k * n / max_requests);
  }
  std::stable_sort(pick.begin(), pick.end(),
                   [&](size_t a, size_t b) { return requests[a].start_ns < requests[b].start_ns; });
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (size_t i : pick) {
    t0 = std::min(t0, requests[i].start_ns);
    t1 = std::max(t1, std::max(requests[i].end_ns, requests[i].start_ns));
  }
  // Lowest free lane first.
  std::vector<uint64_t> lane_end;
  std::vector<size_t> lane(pick.size());
  for (size_t k = 0; k < pick.size(); ++k) {
    const model::Request& r = requests[pick[k]];
    size_t l = 0;
    while (l < lane_end.size() && lane_end[l] > r.start_ns) ++l;
    if (l == lane_end.size()) lane_end.push_back(0);
    lane_end[l] = std::max(r.end_ns, r.start_ns);
    lane[k] = l;
  }
  const double left = 60, right = kWidth - 20, top = 10;
  const double row = std::clamp(480.0 / static_cast<double>(lane_end.size()), 3.0, 14.0);
  const double bottom = top + row * static_cast<double>(lane_end.size());
  const double span_ms = std::max(static_cast<double>(t1 - t0) / 1e6, 1e-3);
  auto [axis_max, step] = NiceAxis(span_ms, 10);
  std::string s =
      fmt::format("<svg width='{}' height='{:.0f}' role='img' aria-label='request timeline'>",
                  kWidth, bottom + 40);
  s += XAxis(left, right, top, bottom, axis_max, step, "ms since the first request shown");
  auto X = [&](uint64_t ns) {
    return left + (right - left) * (static_cast<double>(ns - t0) / 1e6) / axis_max;
  };
  for (size_t k = 0; k < pick.size(); ++k) {
    const size_t i = pick[k];
    const model::Request& r = requests[i];
    const model::RequestSummary& rs = m.requests[i];
    double x = X(r.start_ns), w = std::max(X(std::max(r.end_ns, r.start_ns)) - x, 1.0);
    s += fmt::format(
        "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}'{}><title>request {} "
        "({}{}): latency {:.3f} ms, canonical {:.3f} ms</title></rect>",
        x, top + row * static_cast<double>(lane[k]) + 0.5, w, std::max(row - 1, 1.0),
        rs.anomaly ? kAnomalyColour : Colour(rs.cluster),
        rs.anomaly ? " stroke='#d00' stroke-width='1.5'" : "", rs.id, m.clusters[rs.cluster].label,
        rs.anomaly ? ", anomaly" : "", static_cast<double>(rs.latency_ns) / 1e6,
        static_cast<double>(rs.canonical_latency_ns) / 1e6);
  }
  std::string note;
  if (pick.size() < n) note = fmt::format(" ({} of {} requests, evenly sampled)", pick.size(), n);
  return s +
         "</svg><p class='note'>Each bar is a request from its first to its last event; colour = "
         "cluster, dark with a red outline = anomaly" +
         note + ".</p>";
}

// A representative's actual schedule (rows = real threads) above its
// canonical form (rows = canonical threads), on one time scale. In the
// actual rows, each event's CPU is drawn as a bar ending at the event (the
// join charges an event with the CPU its thread used since its previous
// event); in the canonical rows, bars are the scheduled work.
std::string RepresentativeChart(const model::Request& r, const canonical::CanonicalRequest& c,
                                uint32_t cluster) {
  std::vector<uint32_t> tids;
  for (const model::RequestEvent& e : r.events)
    if (std::find(tids.begin(), tids.end(), e.tid) == tids.end()) tids.push_back(e.tid);
  const uint64_t actual = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
  const double span_ms = std::max(static_cast<double>(std::max(actual, c.latency_ns)) / 1e6, 1e-3);
  auto [axis_max, step] = NiceAxis(span_ms, 8);
  const double left = 130, right = kWidth - 30, top = 8, row = 16;
  const size_t rows = tids.size() + c.num_threads + 1;
  const double bottom = top + row * static_cast<double>(rows);
  std::string s = fmt::format("<svg width='{}' height='{:.0f}' role='img'>", kWidth, bottom + 34);
  s += XAxis(left, right, top, bottom, axis_max, step, "ms");
  auto X = [&](double ns) { return left + (right - left) * (ns / 1e6) / axis_max; };
  const char* colour = Colour(cluster);
  for (size_t t = 0; t < tids.size(); ++t) {
    double y = top + row * static_cast<double>(t);
    s += fmt::format(
        "<text x='{:.0f}' y='{:.1f}' class='label' text-anchor='end'>actual tid {}</text>",
        left - 6, y + 12, tids[t]);
    uint64_t first = UINT64_MAX, last = 0;
    for (const model::RequestEvent& e : r.events) {
      if (e.tid != tids[t]) continue;
      first = std::min(first, e.ts_ns);
      last = std::max(last, e.ts_ns);
      double xe = X(static_cast<double>(e.ts_ns - r.start_ns));
      if (e.cpu_ns > 0) {
        double xs = X(static_cast<double>(e.ts_ns - r.start_ns) - static_cast<double>(e.cpu_ns));
        s += fmt::format(
            "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}'><title>{}: CPU "
            "{}</title></rect>",
            std::max(xs, left), y + 3, std::max(xe - std::max(xs, left), 0.8), row - 6, colour,
            Esc(e.symbol), Esc(model::FormatResource(0, static_cast<double>(e.cpu_ns))));
      }
      s += fmt::format(
          "<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' stroke='#000'><title>{3} at "
          "{4:.3f} ms</title></line>",
          xe, y + 1, y + row - 1, Esc(e.symbol), static_cast<double>(e.ts_ns - r.start_ns) / 1e6);
    }
    if (first != UINT64_MAX)
      s += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' class='life'/>",
                       X(static_cast<double>(first - r.start_ns)), y + row / 2,
                       X(static_cast<double>(last - r.start_ns)), y + row / 2);
  }
  const double sep = top + row * static_cast<double>(tids.size()) + row / 2;
  s += fmt::format(
      "<line x1='0' y1='{0:.1f}' x2='{1}' y2='{0:.1f}' stroke='#999' stroke-dasharray='4 3'/>", sep,
      kWidth);
  for (uint32_t t = 0; t < c.num_threads; ++t) {
    double y = top + row * static_cast<double>(tids.size() + 1 + t);
    s += fmt::format(
        "<text x='{:.0f}' y='{:.1f}' class='label' text-anchor='end'>canonical thread {}</text>",
        left - 6, y + 12, t);
    for (const canonical::CanonicalEvent& e : c.events) {
      if (e.thread != t) continue;
      double xs = X(static_cast<double>(e.ready_ns)), xe = X(static_cast<double>(e.done_ns));
      if (e.done_ns > e.ready_ns)
        s += fmt::format(
            "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='{}'{}><title>{}: CPU "
            "{}{}</title></rect>",
            xs, y + 3, std::max(xe - xs, 0.8), row - 6, colour,
            e.critical ? " stroke='#000' stroke-width='0.8'" : "", Esc(e.symbol),
            Esc(model::FormatResource(0, static_cast<double>(e.demand.cpu_ns))),
            e.critical ? " (critical path)" : "");
      s += fmt::format(
          "<line x1='{0:.1f}' y1='{1:.1f}' x2='{0:.1f}' y2='{2:.1f}' "
          "stroke='#000'><title>{3}</title></line>",
          xe, y + 1, y + row - 1, Esc(e.symbol));
    }
  }
  return s + "</svg>";
}

std::string ClusterTable(const model::WorkloadModel& m, const TruthLabels* truth) {
  std::string s =
      "<table><tr><th>Cluster</th><th>Size</th>" + std::string(truth ? "<th>Contents</th>" : "") +
      "<th>Dia.</th><th>Min. Sep.</th><th>Nearest</th><th>CPU</th><th>Disk</th><th>Net</th>"
      "<th>Latency (mean)</th><th>Canonical latency (mean)</th><th>Representative</th></tr>";
  for (const model::ClusterSummary& c : m.clusters) {
    s += fmt::format(
        "<tr><td><span class='sw' "
        "style='background:{}'></span>{}{}</td><td>{}</td>{}<td>{:.3f}</td>"
        "<td>{:.3f}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f} ms</td><td>{:.3f} "
        "ms</td><td>request {}</td></tr>",
        c.anomalous ? kAnomalyColour : Colour(c.id), Esc(c.label), c.anomalous ? " &#8224;" : "",
        c.size, truth ? "<td>" + Esc(model::Composition(c, *truth)) + "</td>" : "", c.diameter,
        c.min_separation, c.nearest_cluster >= 0 ? Esc(m.clusters[c.nearest_cluster].label) : "-",
        Esc(model::FormatResource(0, c.mean.cpu_ns)),
        Esc(model::FormatResource(1, c.mean.disk_bytes)),
        Esc(model::FormatResource(2, c.mean.net_bytes)), c.latency_ms.mean,
        c.canonical_latency_ms.mean, c.representative_id);
  }
  return s + "</table>";
}

constexpr const char* kCss = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
.sw{display:inline-block;width:10px;height:10px;margin-right:6px;vertical-align:middle}
.grid{stroke:#e4e4e4}.tick{font-size:10px;fill:#666}.label{font-size:11px}.value{font-size:10px;fill:#333}
.life{stroke:#bbb;stroke-width:1}.note{color:#666;font-size:12px}
code{font-size:12px;word-break:break-all}.diff{background:#fdd;font-weight:bold}
.kv td{text-align:left}
)";

}  // namespace

StatusOr<std::string> RenderHtmlReport(const model::WorkloadModel& m,
                                       std::span<const model::Request> requests,
                                       const HtmlReportOptions& options) {
  if (requests.size() != m.requests.size() || m.canonical.size() != m.requests.size())
    return ErrStatus("html: %zu requests given for a model of %zu", requests.size(),
                     m.requests.size());
  const TruthLabels* truth = options.truth;
  std::string h = "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>" +
                  Esc(options.title) + "</title><style>" + kCss + "</style></head><body>";
  h += "<h1>" + Esc(options.title) + "</h1>";

  h += "<h2>Summary</h2><table class='kv'>";
  auto kv = [&](const std::string& k, const std::string& v) {
    h += "<tr><th>" + Esc(k) + "</th><td>" + Esc(v) + "</td></tr>";
  };
  kv("requests", std::to_string(m.requests.size()));
  kv("clusters found", std::to_string(m.clusters.size()));
  kv("anomalies", std::to_string(m.anomalies.size()));
  kv("accounted CPU", m.accounted_cpu_fraction ? Percent(*m.accounted_cpu_fraction) : "n/a");
  kv("model error", fmt::format("{} (CPU {}, disk {}, net {})", Percent(m.error.combined),
                                Percent(m.error.per_resource[0]), Percent(m.error.per_resource[1]),
                                Percent(m.error.per_resource[2])));
  kv("threshold", ThresholdText(m.threshold));
  kv("normalisation (one unit of distance)",
     fmt::format("CPU {}, disk {}, net {}", model::FormatResource(0, m.normalization.cpu_ns),
                 model::FormatResource(1, m.normalization.disk_bytes),
                 model::FormatResource(2, m.normalization.net_bytes)));
  kv("average diameter / inter-cluster distance",
     fmt::format("{:.3f} / {:.3f}", m.avg_diameter, m.avg_inter_cluster_distance));
  if (truth) {
    model::AgreementScore s = model::ScoreAgainstTruth(m, *truth);
    kv("ground truth", fmt::format("purity {:.3f}, adjusted Rand index {:.3f} ({} labelled)",
                                   s.purity, s.adjusted_rand_index, s.scored));
  }
  h += "</table>";

  h += "<h2>Clusters</h2>" + ClusterTable(m, truth);
  h += "<p class='note'>Dia.: mean distance of members to the representative. Min. Sep.: distance "
       "from the representative to the nearest other representative. &#8224;: anomalous "
       "cluster.</p>";
  h += "<h2>Cluster sizes</h2>" + SizesChart(m, truth);

  h += "<h2>Resource distributions per cluster</h2>"
       "<p class='note'>Box: quartiles; whiskers: min and max; line: median; dot: mean.</p>";
  h += DistributionChart(m, truth, "CPU per request", "ms", &model::ClusterSummary::cpu_ms);
  h += DistributionChart(m, truth, "Disk per request", "KiB", &model::ClusterSummary::disk_kb);
  h += DistributionChart(m, truth, "Network per request", "KiB", &model::ClusterSummary::net_kb);
  h += DistributionChart(m, truth, "Latency (as observed)", "ms",
                         &model::ClusterSummary::latency_ms);
  h += DistributionChart(m, truth, "Canonical latency (unlimited CPUs)", "ms",
                         &model::ClusterSummary::canonical_latency_ms);

  h += "<h2>Request timeline</h2>" + TimelineChart(m, requests, options.max_timeline_requests);

  h += "<h2>Representatives: actual schedule vs canonical form</h2>"
       "<p class='note'>Upper rows: the representative as it ran (bars: CPU charged to each event, "
       "ending at the event). Lower rows: its canonical form, scheduled as on unlimited CPUs "
       "(outlined bars: critical path).</p>";
  for (size_t k = 0; k < std::min(m.clusters.size(), kMaxRepresentatives); ++k) {
    const model::ClusterSummary& c = m.clusters[k];
    h += fmt::format("<h3>{}: request {} &mdash; latency {:.3f} ms, canonical {:.3f} ms</h3>",
                     Esc(ClusterName(m, c.id, truth)), c.representative_id,
                     static_cast<double>(m.requests[c.representative].latency_ns) / 1e6,
                     static_cast<double>(m.requests[c.representative].canonical_latency_ns) / 1e6);
    if (!c.processes.empty()) h += "<p>By process, per request: " + Esc(model::FormatProcessMix(c.processes)) + "</p>";
    h += RepresentativeChart(requests[c.representative], m.canonical[c.representative], c.id);
    h += "<p><code>" + Esc(c.representative_text) + "</code></p>";
  }

  h += fmt::format("<h2>Anomalies ({})</h2>", m.anomalies.size());
  if (m.anomalies.empty())
    h += "<p>None: every request is close to its cluster's representative.</p>";
  for (size_t k = 0; k < std::min(m.anomalies.size(), options.max_anomalies); ++k) {
    const model::Anomaly& a = m.anomalies[k];
    h += fmt::format("<h3>request {} ({}, {}) &mdash; distance {:.3f}", a.request_id,
                     Esc(m.clusters[a.cluster].label), AnomalyKindName(a.kind), a.distance);
    if (a.compared_cluster >= 0)
      h += fmt::format(" from the representative of {} (request {})",
                       Esc(m.clusters[a.compared_cluster].label), a.compared_request_id);
    h += "</h3><ul>";
    for (const std::string& r : a.reasons) h += "<li>" + Esc(r) + "</li>";
    h += "</ul><p><code>";
    for (const model::AnomalyEvent& e : a.events)
      h += (e.differs ? "<span class='diff'>" : "<span>") + Esc(EventText(e)) + "</span> ";
    h += "</code></p>";
  }
  if (m.anomalies.size() > options.max_anomalies)
    h += fmt::format("<p class='note'>{} more in the JSON and CSV reports.</p>",
                     m.anomalies.size() - options.max_anomalies);

  h += "<h2>Latency breakdown</h2><p class='note'>Per cluster, the slowest vs the fastest requests "
       "(AppModel delta analysis): work = growth of the canonical latency (own demand on the "
       "critical path); run queue, I/O and locks = growth of waiting (contention).</p>";
  h += "<table><tr><th>Cluster</th><th>Requests compared</th><th>&Delta; latency</th><th>&Delta; "
       "work</th><th>&Delta; run queue</th><th>&Delta; I/O</th><th>&Delta; locks</th><th>&Delta; "
       "other</th><th>Verdict</th></tr>";
  for (const model::LatencyBreakdown& b : m.breakdowns) {
    h += fmt::format(
        "<tr><td>{}</td><td>{} vs {}</td><td>{:+.3f} ms</td><td>{:+.3f} ms</td><td>{:+.3f} ms</td>"
        "<td>{:+.3f} ms</td><td>{:+.3f} ms</td><td>{:+.3f} ms</td><td>{}</td></tr>",
        Esc(m.clusters[b.cluster].label), b.group_size, b.group_size, b.delta_latency_ns / 1e6,
        b.delta_work_ns / 1e6, b.delta_runq_ns / 1e6, b.delta_io_ns / 1e6, b.delta_lock_ns / 1e6,
        b.delta_other_ns / 1e6, Esc(model::VerdictName(b.verdict)));
  }
  h += "</table><p class='note'>Generated by jackdaw analyze.</p></body></html>\n";
  return h;
}

Status WriteHtmlReport(const model::WorkloadModel& m, std::span<const model::Request> requests,
                       const std::string& path, const HtmlReportOptions& options) {
  ASSIGN_OR_RETURN(std::string html, RenderHtmlReport(m, requests, options));
  return WriteOwnedFile(path, html, kOutputFileMode);
}

}  // namespace jackdaw::report
