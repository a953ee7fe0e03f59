#include "report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fault_common.h"
#include "oracle.h"

namespace dblock::fault {

namespace {

std::string fmt(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::map<std::string, std::string> parse_result(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string tok;
  in >> tok;  // RESULT
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return kv;
}

std::string seed_list(std::vector<long long> seeds) {
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  std::string out;
  for (std::size_t i = 0; i < seeds.size();) {
    std::size_t j = i;
    while (j + 1 < seeds.size() && seeds[j + 1] == seeds[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(seeds[i]) + (j > i ? "–" + std::to_string(seeds[j]) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

int report(const std::vector<std::string>& files) {
  std::vector<std::map<std::string, std::string>> rows;
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "fault_driver report: cannot read %s\n", file.c_str());
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("RESULT ", 0) == 0) rows.push_back(parse_result(line));
    }
  }
  const std::vector<std::string> backends = {"sqlite", "postgresql", "mariadb", "redis", "redlock", "zookeeper", "etcd"};
  std::map<std::string, std::string> servers;
  std::set<std::string> ttls, clients, dblock_versions;
  for (auto& r : rows) {
    servers[r["backend"]] = r["server"];
    ttls.insert(r["ttl_ms"]);
    clients.insert(r["clients"]);
    dblock_versions.insert(r["dblock"]);
  }
  auto joined = [](const std::set<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : "/") + x;
    return out;
  };
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  std::printf("Fault-injection figures, %s (UTC), dblock %s, TTL %s ms, %s client processes per run.  \n", date,
              joined(dblock_versions).c_str(), joined(ttls).c_str(), joined(clients).c_str());
  std::string versions;
  for (const auto& b : backends) {
    if (servers.count(b)) versions += (versions.empty() ? "" : ", ") + b + " " + servers[b];
  }
  std::printf("Servers: %s.\n\n", versions.c_str());
  std::printf("| backend | fault | runs (seeds) | acquisitions | acked writes | faults | stale writes accepted | "
              "acked lost / doubled | fence regressions | wrong-owner effects | other safety checks | "
              "calls over deadline / waits given up early | latest call vs its bound (ms) | "
              "believed-hold overlaps (n, ms) | recovery p50 / p99 / max (ms) | in-doubt releases | "
              "guard rejections | leases lost | verdict |\n");
  std::printf("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
  int bad = 0;
  // The rows, in the order of fault_kinds(); a failover row is named by its pair's replication.
  std::vector<std::string> row_names;
  for (const auto& f : fault_kinds()) {
    if (f == "failover") {
      row_names.insert(row_names.end(), {"failover-async", "failover-sync"});
    } else {
      row_names.push_back(f);
    }
  }
  for (const auto& b : backends) {
    for (const auto& f : row_names) {
      std::vector<std::map<std::string, std::string>*> group;
      for (auto& r : rows) {
        if (r["backend"] == b && r["fault"] == f) group.push_back(&r);
      }
      if (group.empty()) continue;
      auto sum = [&](const char* key) {
        long long v = 0;
        for (auto* r : group) v += std::atoll((*r)[key].c_str());
        return v;
      };
      double overlap_ms = 0, worst_call_ms = -1e18;
      std::vector<long long> seeds;
      std::vector<double> recovery;
      std::map<std::string, int> verdicts;
      for (auto* r : group) {
        overlap_ms += std::atof((*r)["overlap_ms"].c_str());
        if (r->count("worst_call_ms")) worst_call_ms = std::max(worst_call_ms, std::atof((*r)["worst_call_ms"].c_str()));
        seeds.push_back(std::atoll((*r)["seed"].c_str()));
        ++verdicts[(*r)["verdict"]];
        std::istringstream rec((*r)["recovery_ms"]);
        for (std::string x; std::getline(rec, x, ',');) {
          if (x != "-" && !x.empty()) recovery.push_back(std::atof(x.c_str()));
        }
      }
      const long long other = sum("phantom_ops") + sum("rejected_committed") + sum("guard_bypass") +
                              sum("resource_mismatch") + sum("duplicate_fences") + sum("safe_overlaps") +
                              sum("session_not_refused") + sum("client_crashes") + sum("lost_early") +
                              sum("nodes_left");
      std::string verdict;
      for (const auto& [v, n] : verdicts) verdict += (verdict.empty() ? "" : ", ") + std::to_string(n) + " " + v;
      if (verdicts.size() != 1 || !verdicts.count("ok")) ++bad;
      std::string rec = recovery.empty() ? "—"
                                         : fmt(percentile(recovery, 50), 0) + " / " + fmt(percentile(recovery, 99), 0) +
                                               " / " + fmt(percentile(recovery, 100), 0);
      const std::string worst = worst_call_ms < -1e17 ? "—" : fmt(worst_call_ms, 0);
      std::printf("| %s | %s | %zu (%s) | %lld | %lld | %lld | %lld | %lld / %lld | %lld | %lld | %lld | %lld / %lld | %s | %lld, %.0f | %s | %lld | %lld | %lld | %s |\n",
                  b.c_str(), f.c_str(), group.size(), seed_list(seeds).c_str(), sum("acquisitions"), sum("acked"),
                  sum("faults"), sum("stale_writes"), sum("lost_acks"), sum("doubled"),
                  sum("fence_regressions") + sum("restart_regressions"), sum("wrong_owner_effects"), other,
                  sum("overdue_calls"), sum("early_giveups"), worst.c_str(), sum("overlaps"), overlap_ms, rec.c_str(), sum("in_doubt_releases"),
                  sum("rejected_guard") + sum("rejected_resource"),
                  sum("lost_callbacks"), verdict.c_str());
    }
  }
  return bad == 0 ? 0 : 1;
}

}  // namespace dblock::fault
