#pragma once

// OUTBOX_INBOX_EXPORT marks what liboutbox-inbox.so exports: the functions
// and classes of these headers. The library is built with
// -fvisibility=hidden and a version script that exports outbox::inbox
// only, so everything else in it (its use of librdkafka, yaml-cpp, spdlog,
// prometheus-cpp, Boost) stays inside and a service links only this API.
// A polymorphic class a service derives from (Handler, Transaction,
// ConsumerObserver) is exported whole, so that its type_info and vtable
// are one across the library and the service.
#if defined(__GNUC__)
#define OUTBOX_INBOX_EXPORT __attribute__((visibility("default")))
#else
#define OUTBOX_INBOX_EXPORT
#endif
