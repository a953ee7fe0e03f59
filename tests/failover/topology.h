// A replicated pair of throwaway servers for the failover tests: a PostgreSQL primary and its
// streaming standby, or a MariaDB primary and its GTID replica, started, failed over, lagged and
// stopped through scripts/servers/postgresql.sh and mariadb.sh (docs/failover.md). Not
// thread-safe; the test's thread only.
#ifndef DBLOCK_TESTS_FAILOVER_TOPOLOGY_H_
#define DBLOCK_TESTS_FAILOVER_TOPOLOGY_H_

#include <string>
#include <vector>

namespace dblock::testing {

class Topology {
 public:
  enum class Kind { kPostgresAsync, kPostgresSync, kMariaDb };

  // Starts the pair (start-pair) on `ports` (primary first) in `state`; throws when it did not.
  Topology(Kind kind, const std::string& state, int port_a, int port_b);
  ~Topology();  // stops both servers by pid
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  // The URL listing both servers, primary first (PostgreSQL: target_session_attrs=read-write is
  // dblock's default for a list).
  std::string url() const;
  int primary_port() const;
  int standby_port() const;

  // The standby stops receiving what the primary commits (PostgreSQL: its walsender is
  // SIGSTOPped; MariaDB: the replica's IO thread stops).
  void lag();
  // The primary dies (PostgreSQL `-m immediate`, MariaDB SIGKILL), the standby is promoted and the
  // old primary rebuilt as its standby. Returns the script's lines (timings).
  std::vector<std::string> failover();
  // Runs `sql` on the server at `port` as the administrator; its output lines.
  std::vector<std::string> admin(int port, const std::string& sql) const;

 private:
  std::vector<std::string> script(const std::vector<std::string>& args) const;

  Kind kind_;
  std::string state_;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_FAILOVER_TOPOLOGY_H_
