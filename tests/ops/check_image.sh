#!/usr/bin/env bash
# The Dockerfile, checked without a container runtime, and with a package
# given, the package's dependencies:
#   1. the build stage makes the Debian package with scripts/package (the
#      release build, the command CI runs: scripts/check-image), passing
#      REVISION, and installs the Build-Depends of packaging/debian/control
#      (and build-essential), no more; the runtime stage installs that .deb with
#      apt and nothing else, so that the image's libraries are the package's
#      Depends;
#   2. the runtime stage: no curl, the HEALTHCHECK is `outbox-relay health`,
#      OCI labels title/description/version/revision/created/source/licenses,
#      the label version equals project(VERSION) in CMakeLists.txt, revision
#      and created are the build arguments, uid 10001;
#   3. with DEB: scripts/check-runtime-libs passes for it, and fails, naming
#      the library, for a copy without libyaml-cpp0.7 in Depends; fails for
#      an unused dependency (librdkafka++1); fails for a copy whose Depends
#      has libmariadb3 only through libmysqlcppconn7v5 (the relay links
#      libmariadb directly);
#   4. CMake's revision: git's in a checkout, "unknown" without .git, the
#      -DOUTBOX_REVISION value when given, a refusal for a quote.
# Usage: tests/ops/check_image.sh [DEB]   e.g. build-release/outbox-relay_*.deb
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
deb="${1:-}"
df="$root/Dockerfile"
check="$root/scripts/check-runtime-libs"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fail=1; }

# ------------------------------------------------------------------ 1 + 2
python3 - "$df" "$root/CMakeLists.txt" "$root/packaging/debian/control" <<'PY' || fail=1
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
cmake = open(sys.argv[2], encoding="utf-8").read()
control = open(sys.argv[3], encoding="utf-8").read()
body = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("#"))
joined = re.sub(r"\\\n", " ", body)
stages = re.split(r"(?m)^FROM\s", joined)
errors = []
if len(stages) != 3:
    errors.append(f"want two stages (build, runtime), found {len(stages) - 1}")
build, runtime = stages[1], stages[-1]
if not re.search(r'(?m)^RUN deb=\$\(OUTBOX_REVISION="\$\{REVISION\}" OUTBOX_NO_LINTIAN=1 scripts/package\)', build):
    errors.append("the build stage does not RUN scripts/package with REVISION (the package CI builds)")
if not re.search(r"(?m)^ARG REVISION\s*$", build):
    errors.append("the build stage does not declare ARG REVISION")
m = re.search(r"apt-get\s+install\s+(.*?)(?:&&|;|\n|$)", build)
stage_pkgs = set(t for t in m.group(1).split() if not t.startswith("-")) if m else set()
bd = re.search(r"(?ms)^Build-Depends:(.*?)^\S", control)
want = {re.split(r"[\s(]", d.strip(), 1)[0] for d in bd.group(1).split(",") if d.strip()} if bd else set()
want = {"debhelper" if d == "debhelper-compat" else d for d in want} | {"build-essential"}
# The same list twice, so that scripts/check-build-deps, which checks the
# build stage's list against what the build used, checks Build-Depends too.
if not want - {"build-essential", "debhelper"}:
    errors.append("no Build-Depends in packaging/debian/control")
elif want != stage_pkgs:
    errors.append(f"the build stage's apt-get install and the Build-Depends of "
                  f"packaging/debian/control (with build-essential) differ: only in the stage "
                  f"{' '.join(sorted(stage_pkgs - want)) or '-'}, only in Build-Depends "
                  f"{' '.join(sorted(want - stage_pkgs)) or '-'}")
if not re.search(r"(?m)^COPY --from=build /outbox-relay\.deb /tmp/outbox-relay\.deb$", runtime):
    errors.append("the runtime stage does not copy the build stage's package")
installs = re.findall(r"apt-get\s+install\s+(.*?)(?:&&|;|\n|$)", runtime)
if [[t for t in i.split() if not t.startswith("-")] for i in installs] != [["/tmp/outbox-relay.deb"]]:
    errors.append(f"the runtime stage must apt-get install the package and nothing else (the "
                  f"package's Depends are the image's libraries), found: {installs}")
if re.search(r"\bcurl\b", body):
    errors.append("curl is mentioned outside comments (the HEALTHCHECK uses `outbox-relay health`)")
if not re.search(r'HEALTHCHECK .*CMD \["/usr/bin/outbox-relay", "health"', runtime):
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
    print("ok    Dockerfile: the package built and installed, HEALTHCHECK, OCI labels, version, no curl")
sys.exit(1 if errors else 0)
PY

# ---------------------------------------------------------------------- 3
# deb_with CHANGE NAME: a copy of the package whose control file sed CHANGE
# edited, as $tmp/NAME.deb (uncompressed: it is only read back).
deb_with() {
  rm -rf "$tmp/pkg" && dpkg-deb -R "$deb" "$tmp/pkg" &&
    sed -i "$1" "$tmp/pkg/DEBIAN/control" &&
    dpkg-deb -Znone -b "$tmp/pkg" "$tmp/$2.deb" >/dev/null
}
# check-runtime-libs on a changed copy must fail with a line matching
# PATTERN; CHANGE says what was changed (for the failures).
expect_libs_fail() {  # DEB PATTERN CHANGE OK-MESSAGE
  if "$check" "$1" >"$tmp/libs.out" 2>&1; then
    bad "check-runtime-libs passes for a package $3"
  elif grep -q "$2" "$tmp/libs.out"; then
    ok "$4"
  else
    bad "a package $3: it fails for another reason:"; sed 's/^/      /' "$tmp/libs.out"
  fi
}
if [[ -n $deb ]]; then
  if "$check" "$deb" >"$tmp/ok.out" 2>&1; then
    ok "check-runtime-libs: the package's Depends provide every library of its binaries"
  else
    bad "check-runtime-libs on $deb:"; sed 's/^/      /' "$tmp/ok.out"
  fi
  deb_with '/^Depends:/s/ libyaml-cpp0\.7[^,]*,//' noyaml
  expect_libs_fail "$tmp/noyaml.deb" '^FAIL  outbox-relay: libyaml-cpp\.so\.0\.7 .*add libyaml-cpp0\.7' \
    "without libyaml-cpp0.7 in Depends" \
    "without libyaml-cpp0.7 in Depends it fails naming libyaml-cpp.so.0.7 and the package to add"
  deb_with '/^Depends:/s/$/, librdkafka++1/' unused
  expect_libs_fail "$tmp/unused.deb" '^FAIL  Depends names librdkafka++1, which provides no library' \
    "with the unused librdkafka++1 in Depends" \
    "an unused dependency (librdkafka++1) fails the check"
  # The relay calls libmariadb itself (the binlog reader): libmariadb3 must be
  # in Depends even though libmysqlcppconn7v5 pulls it in.
  deb_with '/^Depends:/s/ libmariadb3[^,]*,//' nomariadb
  expect_libs_fail "$tmp/nomariadb.deb" '^FAIL  outbox-relay: libmariadb\.so\.3 .*linked directly.*add libmariadb3' \
    "without libmariadb3 in Depends (the relay links libmariadb directly)" \
    "the relay links libmariadb directly: without libmariadb3 in Depends the check fails"
  for f in noyaml unused nomariadb; do
    [[ -f $tmp/$f.deb ]] || bad "could not make the changed package $f"
  done
else
  echo "skip  the package's dependencies (no DEB given; scripts/check-image gives one)"
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
