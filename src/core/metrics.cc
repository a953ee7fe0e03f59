// Prometheus text exposition format 0.0.4 (PrometheusText) and the dblock_* families of a
// LockManager's MetricsSnapshot.
#include <charconv>
#include <cmath>

#include "dblock/metrics.h"

namespace dblock {

namespace {

// HELP text escapes backslash and newline; label values also the double quote.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buffer[400];  // fixed notation of the largest double
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
    out.append(buffer, ec == std::errc() ? end : buffer);
  }
}

void append_labels(std::string& out, const PrometheusText::Labels& labels) {
  if (labels.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i != 0) out += ',';
    out += labels[i].first;
    out += "=\"";
    append_escaped(out, labels[i].second, true);
    out += '"';
  }
  out += '}';
}

double as_double(std::uint64_t v) { return static_cast<double>(v); }

}  // namespace

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  append_escaped(text_, help, false);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  text_ += name;
  append_labels(text_, labels);
  text_ += ' ';
  append_number(text_, value);
  text_ += '\n';
}

void PrometheusText::histogram(std::string_view name, const Labels& labels, const HistogramSnapshot& histogram) {
  const std::string base(name);
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < histogram.counts.size(); ++i) {
    cumulative += histogram.counts[i];
    std::string le;
    append_number(le, i < kMetricsBucketBounds.size() ? kMetricsBucketBounds[i] : INFINITY);
    with_le.back().second = le;
    sample(base + "_bucket", with_le, static_cast<double>(cumulative));
  }
  sample(base + "_sum", labels, histogram.sum_seconds);
  sample(base + "_count", labels, static_cast<double>(histogram.count));
}

void PrometheusText::comment(std::string_view text) {
  text_ += "# ";
  for (const char c : text) text_ += c == '\n' ? ' ' : c;
  text_ += '\n';
}

void append_prometheus(const MetricsSnapshot& m, PrometheusText& out) {
  const std::string& s = m.service;
  const std::pair<std::string_view, const AcquireCounts*> modes[] = {
      {"exclusive", &m.exclusive}, {"shared", &m.shared}, {"permit", &m.permits}};
  out.family("dblock_acquire_attempts_total", "counter", "Attempts at the lock service; a waiting acquire makes several.");
  for (const auto& [mode, c] : modes) {
    out.sample("dblock_acquire_attempts_total", {{"service", s}, {"mode", mode}}, as_double(c->attempts));
  }
  out.family("dblock_acquires_total", "counter", "Acquire calls by how they ended.");
  for (const auto& [mode, c] : modes) {
    const std::pair<std::string_view, std::uint64_t> results[] = {
        {"acquired", c->acquired}, {"refused", c->refused}, {"timed_out", c->timed_out}, {"error", c->errors}};
    for (const auto& [result, value] : results) {
      out.sample("dblock_acquires_total", {{"service", s}, {"mode", mode}, {"result", result}}, as_double(value));
    }
  }
  out.family("dblock_acquire_wait_seconds", "histogram", "Time from an acquire call to its grant (acquired calls).");
  out.histogram("dblock_acquire_wait_seconds", {{"service", s}}, m.wait);
  out.family("dblock_lease_hold_seconds", "histogram", "Time from a lease's grant to its release (released leases).");
  out.histogram("dblock_lease_hold_seconds", {{"service", s}}, m.hold);
  out.family("dblock_releases_total", "counter", "Releases of a lease's last hold by result.");
  out.sample("dblock_releases_total", {{"service", s}, {"result", "released"}}, as_double(m.released));
  out.sample("dblock_releases_total", {{"service", s}, {"result", "already_lost"}}, as_double(m.released_already_lost));
  out.sample("dblock_releases_total", {{"service", s}, {"result", "in_doubt"}}, as_double(m.releases_in_doubt));
  out.family("dblock_renewals_total", "counter", "Lease renewals by result.");
  out.sample("dblock_renewals_total", {{"service", s}, {"result", "ok"}}, as_double(m.renewals_ok));
  out.sample("dblock_renewals_total", {{"service", s}, {"result", "failed"}}, as_double(m.renewals_failed));
  out.sample("dblock_renewals_total", {{"service", s}, {"result", "refused"}}, as_double(m.renewals_refused));
  out.family("dblock_leases_lost_total", "counter", "Leases lost before their release, by cause.");
  const std::pair<std::string_view, std::uint64_t> causes[] = {{"safe_until_passed", m.lost.safe_until_passed},
                                                               {"renewal_refused", m.lost.renewal_refused},
                                                               {"service_event", m.lost.service_event},
                                                               {"guard", m.lost.guard},
                                                               {"shutdown", m.lost.shutdown}};
  for (const auto& [cause, value] : causes) {
    out.sample("dblock_leases_lost_total", {{"service", s}, {"cause", cause}}, as_double(value));
  }
  out.family("dblock_session_locks_lost_total", "counter", "Session locks whose connection was gone.");
  out.sample("dblock_session_locks_lost_total", {{"service", s}}, as_double(m.session_locks_lost));
  out.family("dblock_reaped_total", "counter", "Expired entries deleted by the reaper.");
  out.sample("dblock_reaped_total", {{"service", s}}, as_double(m.reaped));
  out.family("dblock_leases_held", "gauge", "Leases this manager holds.");
  out.sample("dblock_leases_held", {{"service", s}}, static_cast<double>(m.leases_held));
  out.family("dblock_session_locks_held", "gauge", "Session locks this manager holds.");
  out.sample("dblock_session_locks_held", {{"service", s}}, static_cast<double>(m.session_locks_held));
}

std::string to_prometheus(const MetricsSnapshot& metrics) {
  PrometheusText out;
  append_prometheus(metrics, out);
  return out.text();
}

}  // namespace dblock
