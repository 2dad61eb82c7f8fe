// Built only with OUTBOX_SANITIZE=thread (CMakeLists.txt).
//
// Debian's librdkafka starts its threads with C11 thrd_create, which glibc
// implements without going through pthread_create. GCC 12's ThreadSanitizer
// intercepts only pthread_create, so those threads run without TSan state
// and crash in its allocator at their first malloc. Defining the C11 thread
// calls in the executable interposes them for librdkafka: its threads are
// then created (and joined) through the intercepted pthread calls. The same
// holds for its C11 mutexes and condition variables (glibc's mtx_t and cnd_t
// are pthread_mutex_t and pthread_cond_t inside): without these, TSan would
// not see librdkafka's locking and would report races on everything it
// protects.

#include <errno.h>
#include <pthread.h>
#include <threads.h>

#include <cstdint>

namespace {

struct Start {
  thrd_start_t func;
  void* arg;
};

void* Trampoline(void* p) {
  Start s = *static_cast<Start*>(p);
  delete static_cast<Start*>(p);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): C11's int result travels as pthread's void*
  return reinterpret_cast<void*>(static_cast<intptr_t>(s.func(s.arg)));
}

int Result(int rc) { return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : thrd_error; }

}  // namespace

extern "C" {

int thrd_create(thrd_t* thr, thrd_start_t func, void* arg) {
  auto* s = new Start{func, arg};
  int rc = pthread_create(thr, nullptr, Trampoline, s);
  if (rc != 0) delete s;
  return Result(rc);
}

int thrd_join(thrd_t thr, int* res) {
  void* ret = nullptr;
  int rc = pthread_join(thr, &ret);
  if (rc == 0 && res) *res = static_cast<int>(reinterpret_cast<intptr_t>(ret));
  return Result(rc);
}

int thrd_detach(thrd_t thr) { return Result(pthread_detach(thr)); }

int mtx_init(mtx_t* m, int type) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  if (type & mtx_recursive) pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  int rc = pthread_mutex_init(reinterpret_cast<pthread_mutex_t*>(m), &attr);
  pthread_mutexattr_destroy(&attr);
  return Result(rc);
}
int mtx_lock(mtx_t* m) { return Result(pthread_mutex_lock(reinterpret_cast<pthread_mutex_t*>(m))); }
int mtx_trylock(mtx_t* m) {
  int rc = pthread_mutex_trylock(reinterpret_cast<pthread_mutex_t*>(m));
  return rc == EBUSY ? thrd_busy : Result(rc);
}
int mtx_timedlock(mtx_t* m, const struct timespec* ts) {
  int rc = pthread_mutex_timedlock(reinterpret_cast<pthread_mutex_t*>(m), ts);
  return rc == ETIMEDOUT ? thrd_timedout : Result(rc);
}
int mtx_unlock(mtx_t* m) {
  return Result(pthread_mutex_unlock(reinterpret_cast<pthread_mutex_t*>(m)));
}
void mtx_destroy(mtx_t* m) { pthread_mutex_destroy(reinterpret_cast<pthread_mutex_t*>(m)); }

int cnd_init(cnd_t* c) {
  return Result(pthread_cond_init(reinterpret_cast<pthread_cond_t*>(c), nullptr));
}
int cnd_signal(cnd_t* c) {
  return Result(pthread_cond_signal(reinterpret_cast<pthread_cond_t*>(c)));
}
int cnd_broadcast(cnd_t* c) {
  return Result(pthread_cond_broadcast(reinterpret_cast<pthread_cond_t*>(c)));
}
int cnd_wait(cnd_t* c, mtx_t* m) {
  return Result(pthread_cond_wait(reinterpret_cast<pthread_cond_t*>(c),
                                  reinterpret_cast<pthread_mutex_t*>(m)));
}
int cnd_timedwait(cnd_t* c, mtx_t* m, const struct timespec* ts) {
  int rc = pthread_cond_timedwait(reinterpret_cast<pthread_cond_t*>(c),
                                  reinterpret_cast<pthread_mutex_t*>(m), ts);
  return rc == ETIMEDOUT ? thrd_timedout : Result(rc);
}
void cnd_destroy(cnd_t* c) { pthread_cond_destroy(reinterpret_cast<pthread_cond_t*>(c)); }

}  // extern "C"
