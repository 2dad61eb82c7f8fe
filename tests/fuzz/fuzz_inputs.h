#pragma once

#include <cstddef>
#include <cstdint>

namespace outbox::fuzz {

// One fuzz input each. Shared by the libFuzzer targets (tests/fuzz/*_fuzzer.cc,
// built with clang by scripts/fuzz) and by the unit test that replays the
// checked-in corpus and regression inputs on every build, sanitized or not.
// Each returns normally for any input; a crash, a sanitizer report, an
// exception other than the expected ConfigError, or a broken invariant
// (abort) is a finding.

// The bytes as a config file (LoadConfigText), with a fixed environment and
// fake secret files.
void ConfigLoaderInput(const uint8_t* data, size_t size);

// "template\0aggregate_type\0event_type\0service": parse, render, and check
// that a template that parses renders a valid topic whenever the row's
// values are themselves valid topic characters.
void TopicTemplateInput(const uint8_t* data, size_t size);

// A row as the database might hand it over: topic, headers, traceparent and
// tracestate columns, event and aggregate types, ids and created_at from the
// bytes, in either envelope; Route() must answer a message or an error, never
// crash, and send trace context only when it is valid (the CloudEvents
// extension with it).
void RouterInput(const uint8_t* data, size_t size);

// The bytes as a traceparent value: CheckTraceparent's answer must agree
// with the W3C rules restated independently (length, lowercase hex, the
// version's rules, non-zero ids), and never read past the value.
void TraceparentInput(const uint8_t* data, size_t size);

// "msg\0key\0value\0error": one log line in each format, with and without
// the journald prefix: always exactly one line; JSON parses back as one
// object whose outbox_id is a string; text holds no control character.
void LogLineInput(const uint8_t* data, size_t size);

}  // namespace outbox::fuzz
