// Session::sweep: a chain of asynchronous requests (the listing, then an exists per matching
// child) whose completions run on the client's thread and never wait.
#include <zookeeper/zookeeper.h>

#include <memory>
#include <mutex>

#include "session.h"

namespace dblock::zookeeper {

namespace {

// One sweep (Session::sweep): the listing, then an exists per matching child. Shared by their
// completions; `pending` counts the requests not answered yet, the listing's own included.
struct SweepJob {
  zhandle_t* handle = nullptr;
  std::string container;
  std::string prefix;
  std::int64_t owner = 0;
  Session::Judge judge;
  std::function<void(SweepOutcome)> done;
  std::mutex m;
  int pending = 1;
  SweepOutcome outcome = SweepOutcome::kComplete;

  // One request answered; the last one runs `done`.
  void answered(SweepOutcome result) noexcept {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(m);
      if (result == SweepOutcome::kFailed || (result == SweepOutcome::kDeferred && outcome == SweepOutcome::kComplete)) {
        outcome = result;
      }
      last = --pending == 0;
    }
    if (last && done) done(outcome);
  }
};

struct SweepProbe {
  std::shared_ptr<SweepJob> job;
  std::string path;
};

void on_sweep_exists(int rc, const Stat* stat, const void* data) {
  std::unique_ptr<SweepProbe> probe(static_cast<SweepProbe*>(const_cast<void*>(data)));
  SweepOutcome result = SweepOutcome::kComplete;
  if (rc == ZOK && stat != nullptr && stat->ephemeralOwner == probe->job->owner) {
    try {
      if (!probe->job->judge(probe->path).has_value()) result = SweepOutcome::kDeferred;
    } catch (...) {
      result = SweepOutcome::kFailed;
    }
  } else if (rc != ZOK && rc != ZNONODE) {
    result = SweepOutcome::kFailed;
  }
  probe->job->answered(result);
}

void on_sweep_children(int rc, const String_vector* strings, const Stat*, const void* data) {
  std::unique_ptr<std::shared_ptr<SweepJob>> held(static_cast<std::shared_ptr<SweepJob>*>(const_cast<void*>(data)));
  const std::shared_ptr<SweepJob> job = *held;
  if (rc == ZNONODE) return job->answered(SweepOutcome::kComplete);  // no container: no node
  if (rc != ZOK || strings == nullptr) return job->answered(SweepOutcome::kFailed);
  for (int i = 0; i < strings->count; ++i) {
    const std::string name = strings->data[i];
    if (name.rfind(job->prefix, 0) != 0) continue;
    {
      std::lock_guard<std::mutex> lock(job->m);
      ++job->pending;
    }
    auto* probe = new SweepProbe{job, job->container + "/" + name};
    const int sent = zoo_aexists(job->handle, probe->path.c_str(), 0, on_sweep_exists, probe);
    if (sent != ZOK) {
      if (sent == ZBADARGUMENTS || sent == ZINVALIDSTATE) delete probe;  // not recorded by the client
      job->answered(SweepOutcome::kFailed);
    }
  }
  job->answered(SweepOutcome::kComplete);  // the listing's own count
}

}  // namespace

void Session::sweep(const std::string& container, const std::string& prefix, Judge judge,
                    std::function<void(SweepOutcome)> done) noexcept {
  try {
    auto job = std::make_shared<SweepJob>();
    job->handle = handle_;
    job->container = container;
    job->prefix = prefix;
    job->owner = id();
    job->judge = std::move(judge);
    job->done = std::move(done);
    auto* held = new std::shared_ptr<SweepJob>(job);
    const int sent = zoo_aget_children2(handle_, container.c_str(), 0, on_sweep_children, held);
    if (sent != ZOK) {
      if (sent == ZBADARGUMENTS || sent == ZINVALIDSTATE) delete held;  // not recorded by the client
      job->answered(SweepOutcome::kFailed);
    }
  } catch (const std::exception&) {
    // Out of memory: the suspect stays claimed; its node goes with the session.
  }
}

}  // namespace dblock::zookeeper
