#pragma once

namespace outbox {

// The version and the source revision this binary was built from: CMake's
// project version and OUTBOX_REVISION (git's short hash, or what the image
// build passes with --build-arg REVISION; "unknown" without either). They
// live in one generated file, so a new commit recompiles that file alone.
const char* BuildVersion();
const char* BuildRevision();

}  // namespace outbox
