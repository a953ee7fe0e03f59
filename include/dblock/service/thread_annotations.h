// dblock/service/thread_annotations.h — which mutex guards what, written so that a compiler checks
// it: clang's -Wthread-safety analysis (CI builds the library with it and allows no warning; other
// compilers ignore the annotations). std::mutex carries no annotation in libstdc++, so annotated
// state is guarded by Mutex below, a std::mutex with the annotations, locked through MutexLock (a
// std::lock_guard) or UniqueLock (a std::unique_lock, for condition variables).
//
//   class Board {
//     dblock::service::Mutex mutex_;
//     std::map<std::string, int> counts_ DBLOCK_GUARDED_BY(mutex_);
//     void bump_locked(const std::string& name) DBLOCK_REQUIRES(mutex_);
//   };
//
// A condition variable's predicate is a lambda, which the analysis sees as a function of its own:
// give it DBLOCK_REQUIRES too (`[&]() DBLOCK_REQUIRES(mutex_) { return stopping_; }`).
#ifndef DBLOCK_SERVICE_THREAD_ANNOTATIONS_H_
#define DBLOCK_SERVICE_THREAD_ANNOTATIONS_H_

#include <mutex>

#if defined(__clang__)
#define DBLOCK_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DBLOCK_THREAD_ANNOTATION(x)
#endif

// On a member: read and written only with the mutex held.
#define DBLOCK_GUARDED_BY(mutex) DBLOCK_THREAD_ANNOTATION(guarded_by(mutex))
// On a pointer member: what it points to is read and written only with the mutex held.
#define DBLOCK_PT_GUARDED_BY(mutex) DBLOCK_THREAD_ANNOTATION(pt_guarded_by(mutex))
// On a function: called only with the mutexes held.
#define DBLOCK_REQUIRES(...) DBLOCK_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// On a function: called only without the mutexes held (it takes them).
#define DBLOCK_EXCLUDES(...) DBLOCK_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a member mutex: taken before the ones named.
#define DBLOCK_ACQUIRED_BEFORE(...) DBLOCK_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define DBLOCK_CAPABILITY(name) DBLOCK_THREAD_ANNOTATION(capability(name))
#define DBLOCK_SCOPED_CAPABILITY DBLOCK_THREAD_ANNOTATION(scoped_lockable)
#define DBLOCK_ACQUIRE(...) DBLOCK_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define DBLOCK_RELEASE(...) DBLOCK_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define DBLOCK_TRY_ACQUIRE(...) DBLOCK_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function the analysis cannot follow (say why beside it).
#define DBLOCK_NO_THREAD_SAFETY_ANALYSIS DBLOCK_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace dblock::service {

// A std::mutex the analysis knows. Not recursive; thread-safe.
class DBLOCK_CAPABILITY("mutex") Mutex {
 public:
  void lock() DBLOCK_ACQUIRE() { mutex_.lock(); }
  void unlock() DBLOCK_RELEASE() { mutex_.unlock(); }
  // Takes the mutex if it is free; true when taken.
  bool try_lock() DBLOCK_TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  // The mutex itself, for UniqueLock (condition variables wait on a std::unique_lock<std::mutex>).
  std::mutex& native() { return mutex_; }

 private:
  std::mutex mutex_;
};

// std::lock_guard for Mutex.
class DBLOCK_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) DBLOCK_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() DBLOCK_RELEASE() { mutex_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

// std::unique_lock for Mutex, held from construction to destruction as far as the analysis is
// concerned; native() is what a std::condition_variable waits on (the wait gives the mutex up and
// takes it back before it returns, so the state is guarded again whenever the caller runs).
class DBLOCK_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mutex) DBLOCK_ACQUIRE(mutex) : lock_(mutex.native()) {}
  ~UniqueLock() DBLOCK_RELEASE() {}
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;
  std::unique_lock<std::mutex>& native() { return lock_; }
  // Gives the mutex up before the scope ends, and takes it back.
  void unlock() DBLOCK_RELEASE() { lock_.unlock(); }
  void lock() DBLOCK_ACQUIRE() { lock_.lock(); }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_THREAD_ANNOTATIONS_H_
