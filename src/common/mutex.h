#pragma once

#include <cassert>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "common/thread_annotations.h"

namespace outbox {

// A std::mutex that clang's thread-safety analysis understands, in the style
// of leveldb's port::Mutex. AssertHeld() checks the calling thread holds it
// (in debug builds; the analysis checks it at compile time everywhere).
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() {
    mu_.lock();
#ifndef NDEBUG
    owner_ = std::this_thread::get_id();
#endif
  }
  void Unlock() RELEASE() {
#ifndef NDEBUG
    owner_ = std::thread::id();
#endif
    mu_.unlock();
  }
  void AssertHeld() const ASSERT_CAPABILITY(this) {
#ifndef NDEBUG
    assert(owner_ == std::this_thread::get_id());
#endif
  }

 private:
  friend class CondVar;
  std::mutex mu_;
#ifndef NDEBUG
  std::thread::id owner_;
#endif
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A reader/writer lock with the same annotations (abseil's Mutex in reader
// mode): one writer, or any number of readers at once. For state that is
// read on a hot path from many threads and rarely replaced.
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex as its only writer for its scope.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex as one of its readers for its scope.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() RELEASE() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable bound to one Mutex (leveldb's port::CondVar). Every
// wait requires the mutex held and returns with it held. (Checked at run time
// by AssertHeld: clang's analysis cannot tell that mutex() is the caller's
// mutex, so callers that wait through a Clock name the mutex there.)
class CondVar {
 public:
  explicit CondVar(Mutex* mu) : mu_(mu) { assert(mu != nullptr); }
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  Mutex* mutex() const { return mu_; }

  // Waits until notified, spuriously woken, or `deadline` (steady clock).
  // Returns false on timeout.
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) {
    mu_->AssertHeld();
    Unowned();
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    Owned();
    return notified;
  }
  void Wait() {
    mu_->AssertHeld();
    Unowned();
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
    Owned();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  void Unowned() {
#ifndef NDEBUG
    mu_->owner_ = std::thread::id();
#endif
  }
  void Owned() {
#ifndef NDEBUG
    mu_->owner_ = std::this_thread::get_id();
#endif
  }

  Mutex* const mu_;
  std::condition_variable cv_;
};

}  // namespace outbox
