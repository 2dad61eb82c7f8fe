#pragma once

// Clang's thread-safety analysis (-Wthread-safety): the compiler checks that
// a member marked GUARDED_BY(mu_) is touched only with mu_ held and that a
// function marked REQUIRES(mu_) is called with it held. Under GCC the macros
// are empty and the annotations are documentation. See docs/DESIGN.md
// ("Threads") and scripts/build-thread-safety, which builds src/ with clang
// and -Wthread-safety -Werror in CI.

#if defined(__clang__)
#define OUTBOX_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define OUTBOX_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) OUTBOX_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY OUTBOX_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) OUTBOX_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) OUTBOX_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) OUTBOX_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) OUTBOX_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) OUTBOX_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) OUTBOX_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) OUTBOX_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) OUTBOX_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) OUTBOX_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) OUTBOX_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) OUTBOX_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS OUTBOX_THREAD_ANNOTATION(no_thread_safety_analysis)
