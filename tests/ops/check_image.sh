#!/usr/bin/env bash
# The Dockerfile, checked without a container runtime:
#   1. the build stage builds with scripts/build-release (the command CI runs,
#      scripts/check-image) and the runtime stage copies that binary;
#   2. the runtime stage: no curl, the HEALTHCHECK is `outbox-relay health`,
#      OCI labels title/description/version/revision/created/source/licenses,
#      the label version equals project(VERSION) in CMakeLists.txt, REVISION
#      reaches CMake, revision and created are the build arguments;
#   3. scripts/check-runtime-libs passes for BINARY against the Dockerfile's
#      runtime package list, and fails, naming the library, for a copy of the
#      Dockerfile without libyaml-cpp0.7; fails for an unused package
#      (librdkafka++1); fails for a binary that links libmariadb directly
#      while libmariadb3 is only a dependency of libmysqlcppconn7v5;
#   4. CMake's revision: git's in a checkout, "unknown" without .git, the
#      -DOUTBOX_REVISION value when given, a refusal for a quote.
# Usage: tests/ops/check_image.sh BINARY     e.g. build/outbox-relay
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:?usage: $0 BINARY}"
df="$root/Dockerfile"
check="$root/scripts/check-runtime-libs"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fail=1; }

# ------------------------------------------------------------------ 1 + 2
python3 - "$df" "$root/CMakeLists.txt" <<'PY' || fail=1
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
cmake = open(sys.argv[2], encoding="utf-8").read()
body = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("#"))
joined = re.sub(r"\\\n", " ", body)
stages = re.split(r"(?m)^FROM\s", joined)
errors = []
if len(stages) != 3:
    errors.append(f"want two stages (build, runtime), found {len(stages) - 1}")
build, runtime = stages[1], stages[-1]
if not re.search(r"(?m)^RUN .*scripts/build-release\b", build):
    errors.append("the build stage does not RUN scripts/build-release (the command CI runs)")
if not re.search(r'OUTBOX_REVISION="\$\{REVISION\}"\s+scripts/build-release', build):
    errors.append("the build stage does not pass REVISION to scripts/build-release")
if not re.search(r"(?m)^ARG REVISION\s*$", build):
    errors.append("the build stage does not declare ARG REVISION")
if not re.search(r"(?m)^COPY --from=build /src/build-release/outbox-relay ", runtime):
    errors.append("the runtime stage does not copy build-release/outbox-relay")
if re.search(r"\bcurl\b", body):
    errors.append("curl is mentioned outside comments (the HEALTHCHECK uses `outbox-relay health`)")
if not re.search(r'HEALTHCHECK .*CMD \["/usr/local/bin/outbox-relay", "health"', runtime):
    errors.append("HEALTHCHECK is not `outbox-relay health`")
if re.search(r"librdkafka\+\+1|catch2", joined):
    errors.append("an unused package (librdkafka++1 or catch2) is installed")
labels = dict(re.findall(r'(org\.opencontainers\.image\.[a-z]+)="([^"]*)"', runtime))
for k in ("title", "description", "version", "revision", "created", "source", "licenses"):
    if not labels.get(f"org.opencontainers.image.{k}"):
        errors.append(f"no OCI label org.opencontainers.image.{k}")
if labels.get("org.opencontainers.image.licenses") != "Apache-2.0":
    errors.append("the licenses label is not Apache-2.0")
if labels.get("org.opencontainers.image.revision") != "${REVISION}":
    errors.append("the revision label is not ${REVISION}")
if labels.get("org.opencontainers.image.created") != "${CREATED}":
    errors.append("the created label is not ${CREATED} (the build argument)")
if not re.search(r"(?m)^ARG CREATED\s*$", runtime):
    errors.append("the runtime stage does not declare ARG CREATED")
m = re.search(r"(?m)^ARG VERSION=(\S+)", joined)
p = re.search(r"project\(outbox_relay VERSION ([0-9.]+)", cmake)
if not m or not p or m.group(1) != p.group(1):
    errors.append(f"ARG VERSION ({m and m.group(1)}) differs from CMake's project VERSION ({p and p.group(1)})")
if "USER 10001" not in runtime:
    errors.append("the runtime stage does not run as uid 10001")
for e in errors:
    print(f"FAIL  Dockerfile: {e}")
if not errors:
    print("ok    Dockerfile: build command, HEALTHCHECK, OCI labels, version, no curl")
sys.exit(1 if errors else 0)
PY

# ---------------------------------------------------------------------- 3
if "$check" "$bin" "$df" >"$tmp/ok.out" 2>&1; then
  ok "check-runtime-libs: the runtime packages provide every library of $bin"
else
  bad "check-runtime-libs on the Dockerfile as it is:"; sed 's/^/      /' "$tmp/ok.out"
fi

# check-runtime-libs on BINARY with the changed DOCKERFILE must fail with a
# line matching PATTERN; CHANGE says what was changed (for the failures).
expect_libs_fail() {  # BINARY DOCKERFILE PATTERN CHANGE OK-MESSAGE
  if "$check" "$1" "$2" >"$tmp/libs.out" 2>&1; then
    bad "check-runtime-libs passes for $(basename "$1") $4"
  elif grep -q "$3" "$tmp/libs.out"; then
    ok "$5"
  else
    bad "$(basename "$1") $4: it fails for another reason:"; sed 's/^/      /' "$tmp/libs.out"
  fi
}

sed 's/ libyaml-cpp0\.7 / /' "$df" >"$tmp/Dockerfile.noyaml"
if cmp -s "$df" "$tmp/Dockerfile.noyaml"; then
  bad "could not remove libyaml-cpp0.7 from a copy of the Dockerfile"
else
  expect_libs_fail "$bin" "$tmp/Dockerfile.noyaml" '^FAIL  libyaml-cpp\.so\.0\.7 .*add libyaml-cpp0\.7' \
    "without libyaml-cpp0.7 in the runtime stage" \
    "without libyaml-cpp0.7 it fails naming libyaml-cpp.so.0.7 and the package to add"
fi

sed 's/ libfmt9 / libfmt9 librdkafka++1 /' "$df" >"$tmp/Dockerfile.unused"
expect_libs_fail "$bin" "$tmp/Dockerfile.unused" '^FAIL  librdkafka++1 .*provides no library' \
  "with the unused librdkafka++1 in the runtime stage" \
  "an unused runtime package (librdkafka++1) fails the check"

# A binary that calls libmariadb itself (as the binlog reader does) needs
# libmariadb3 listed, even though libmysqlcppconn7v5 already pulls it in: the
# relay with libmariadb3 taken out of the runtime stage fails.
sed 's/ libmariadb3 / /' "$df" >"$tmp/Dockerfile.nomariadb"
nomariadb="^FAIL  libmariadb\.so\.3 .*linked directly.*add libmariadb3"
if grep -q ' libmariadb3 ' "$tmp/Dockerfile.nomariadb"; then
  bad "could not take libmariadb3 out of the runtime stage for the check"
else
  expect_libs_fail "$bin" "$tmp/Dockerfile.nomariadb" "$nomariadb" \
    "without libmariadb3 in the runtime stage (it links libmariadb directly)" \
    "the relay links libmariadb directly: without libmariadb3 listed the check fails"
fi
if printf '#include <mysql.h>\nint main(void) { return mysql_get_client_version() == 0; }\n' |
   cc -x c - -o "$tmp/uses-mariadb" $(pkg-config --cflags --libs libmariadb 2>/dev/null || echo -lmariadb) >"$tmp/cc.out" 2>&1; then
  expect_libs_fail "$tmp/uses-mariadb" "$tmp/Dockerfile.nomariadb" "$nomariadb" \
    "without libmariadb3 in the runtime stage (a binary linking libmariadb directly)" \
    "a binary linking libmariadb directly fails until libmariadb3 is listed"
else
  bad "cannot build the libmariadb probe (libmariadb-dev installed?):"; sed 's/^/      /' "$tmp/cc.out"
fi

# ---------------------------------------------------------------------- 4
# The revision CMake bakes in (configure only, daemon only): from git in a
# checkout, "unknown" in a tree without .git (the image's build context), the
# value of -DOUTBOX_REVISION (the image's --build-arg REVISION) when given,
# and a refusal for a value that could break the C string or a label.
revision_of() {  # SOURCE_DIR BUILD_DIR [cmake args] -> the configured revision
  local src=$1 b=$2
  shift 2
  cmake -S "$src" -B "$b" -G Ninja -DOUTBOX_BUILD_TESTS=OFF -DOUTBOX_BUILD_TOOLS=OFF "$@" 2>&1 |
    sed -n 's/^-- outbox-relay [0-9.]*, revision //p'
}
mkdir -p "$tmp/nogit"
cp -r "$root/CMakeLists.txt" "$root/src" "$tmp/nogit/"
want_git=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
got=$(revision_of "$root" "$tmp/b1")
[[ $got == "$want_git" ]] && ok "a git checkout bakes in git's revision ($got)" ||
  bad "a git checkout bakes in '$got', not git's $want_git"
got=$(revision_of "$tmp/nogit" "$tmp/b2")
[[ $got == unknown ]] && ok "a tree without .git bakes in 'unknown'" ||
  bad "a tree without .git bakes in '$got', not unknown"
got=$(revision_of "$tmp/nogit" "$tmp/b3" -DOUTBOX_REVISION=abc1234)
[[ $got == abc1234 ]] && ok "-DOUTBOX_REVISION=abc1234 is baked in" ||
  bad "-DOUTBOX_REVISION=abc1234 bakes in '$got'"
if cmake -S "$tmp/nogit" -B "$tmp/b4" -G Ninja -DOUTBOX_BUILD_TESTS=OFF -DOUTBOX_BUILD_TOOLS=OFF \
     '-DOUTBOX_REVISION=a"b' >/dev/null 2>&1; then
  bad "a revision with a quote is accepted"
else
  ok "a revision with a quote is refused"
fi

if ((fail)); then echo "check_image: FAILED"; exit 1; fi
echo "check_image: OK"
