// The reaper thread: deletes expired entries of a service that keeps them (Maintenance), in
// bounded, paced batches. Internal.
//
// Thread-safe; start() once, stop() joins (idempotent, also from the destructor).
#ifndef DBLOCK_SRC_CORE_REAPER_H_
#define DBLOCK_SRC_CORE_REAPER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>

#include "dblock/errors.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/thread_annotations.h"
#include "engine_metrics.h"

namespace dblock::detail {

class Reaper {
 public:
  // `interval`: pause between passes (jittered ±20 %); `batch`: entries per call of reap().
  // `report` receives the errors of failed passes; the entries deleted are counted in `metrics`.
  Reaper(Maintenance& maintenance, EngineMetrics& metrics, std::chrono::milliseconds interval, std::size_t batch,
         std::function<void(const Error&)> report);
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  void start();
  void stop() noexcept;

 private:
  void loop();
  // One pass: batches until a short one, each followed by a pause. False when stopped.
  bool pass();
  // Sleeps `pause` unless stopped meanwhile; false when stopped.
  bool pause_for(std::chrono::steady_clock::duration pause);

  // Constant after construction.
  Maintenance& maintenance_;
  EngineMetrics& metrics_;
  const std::chrono::milliseconds interval_;
  const std::size_t batch_;
  const std::function<void(const Error&)> report_;

  service::Mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ DBLOCK_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_REAPER_H_
