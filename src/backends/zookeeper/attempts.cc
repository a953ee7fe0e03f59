#include "attempts.h"

namespace dblock::zookeeper {

bool Attempts::begin(const std::string& key) {
  service::MutexLock lock(mutex_);
  ++running_[key];
  return !uncertain_.insert(key).second;
}

void Attempts::settle(const std::string& key) {
  service::MutexLock lock(mutex_);
  uncertain_.erase(key);
}

bool Attempts::end(const std::string& key, std::int64_t session) {
  service::MutexLock lock(mutex_);
  if (uncertain_.count(key) != 0) suspects_[key] = session;  // ended unsettled
  const auto it = running_.find(key);
  if (it != running_.end() && --it->second <= 0) running_.erase(it);
  if (running_.count(key) != 0 || suspects_.count(key) == 0) return false;
  return sweeping_.insert(key).second;
}

std::optional<OwnNode> Attempts::waiting(const std::string& key) {
  service::MutexLock lock(mutex_);
  const auto it = waiting_.find(key);
  if (it == waiting_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, OwnNode>> Attempts::waiting_under(const std::string& prefix) {
  service::MutexLock lock(mutex_);
  std::vector<std::pair<std::string, OwnNode>> out;
  for (auto it = waiting_.lower_bound(prefix); it != waiting_.end() && it->first.starts_with(prefix); ++it) {
    out.emplace_back(it->first, it->second);
  }
  return out;
}

void Attempts::set_waiting(const std::string& key, std::optional<OwnNode> node) {
  service::MutexLock lock(mutex_);
  if (node) {
    waiting_[key] = std::move(*node);
  } else {
    waiting_.erase(key);
  }
}

std::vector<std::string> Attempts::to_sweep(std::int64_t session) {
  service::MutexLock lock(mutex_);
  std::vector<std::string> out;
  for (auto it = suspects_.begin(); it != suspects_.end();) {
    if (it->second != session) {
      it = suspects_.erase(it);
      continue;
    }
    if (sweeping_.insert(it->first).second) out.push_back(it->first);
    ++it;
  }
  return out;
}

bool Attempts::swept(const std::string& key, SweepOutcome outcome) {
  service::MutexLock lock(mutex_);
  if (outcome == SweepOutcome::kDeferred && running_.count(key) == 0 && suspects_.count(key) != 0) return true;
  sweeping_.erase(key);
  if (outcome == SweepOutcome::kComplete) suspects_.erase(key);
  return false;
}

std::optional<bool> Attempts::judge(const std::string& key, const std::string& path,
                                    const std::function<bool(const std::string&)>& held,
                                    const std::function<void(const std::string&)>& doom) {
  service::MutexLock lock(mutex_);
  if (running_.count(key) != 0) return std::nullopt;
  const auto waiter = waiting_.find(key);
  if (waiter != waiting_.end() && key.substr(0, key.rfind('/') + 1) + waiter->second.first == path) return false;
  if (held(path)) return false;
  doom(path);
  return true;
}

bool Attempts::any() {
  service::MutexLock lock(mutex_);
  return !waiting_.empty() || !suspects_.empty() || !uncertain_.empty();
}

void Attempts::clear() {
  service::MutexLock lock(mutex_);
  uncertain_.clear();
  waiting_.clear();
  suspects_.clear();
  sweeping_.clear();
}

}  // namespace dblock::zookeeper
