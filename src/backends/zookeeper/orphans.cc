// The orphan sweep of the ZooKeeper service: an attempt that ended before its outcome was known
// (its create failed once sent, or a read after it did: the node may exist) leaves a suspect;
// once the session is connected again (or the next attempt of the same secret ends), the
// container is listed and every node of the suspect that this session owns, and that neither a
// held lease nor a waiter uses, is deleted.
// An ephemeral node would otherwise block its lock for as long as the session lives.
#include "zookeeper_service.h"

namespace dblock::zookeeper {

void ZooKeeperService::sweep(Session& s, const std::string& key) noexcept {
  try {
    const std::size_t cut = key.rfind('/');
    Session* session = &s;  // valid in the callbacks: they run on the session's own threads
    auto judge = [this, key, session](const std::string& path) {
      return attempts_.judge(
          key, path, [this](const std::string& p) { return held_of(p).has_value(); },
          [session](const std::string& p) { session->remove_eventually(p); });
    };
    auto done = [this, key, session](SweepOutcome outcome) {
      if (attempts_.swept(key, outcome)) sweep(*session, key);
    };
    s.sweep(key.substr(0, cut), key.substr(cut + 1), std::move(judge), std::move(done));
  } catch (const std::exception&) {
    attempts_.swept(key, SweepOutcome::kFailed);  // out of memory: at the next reconnect
  }
}

}  // namespace dblock::zookeeper
