# shellcheck shell=bash
# scripts/lib/deps.sh — install the Debian 12 packages outbox-relay needs.
#
#   outbox_missing_deps [extra...]   print (one per line) the packages not installed
#   outbox_install_deps [extra...]   install the missing ones (root), or print the
#                                    sudo command and return 1 (non-root)
#   outbox_install_quickstart_deps   the same for OUTBOX_QUICKSTART_DEPS alone: what
#                                    scripts/quickstart builds and runs
#   outbox_install_packages PKG...   the same for these packages alone
#
# Only apt-get/dpkg are used; `apt-get update` runs only when something is
# missing.

if [[ -n "${_OUTBOX_DEPS_SH:-}" ]]; then
    return 0
fi
_OUTBOX_DEPS_SH=1

# shellcheck source=scripts/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

# What scripts/quickstart needs: the compiler and the build tools, the
# libraries of the relay, the mock broker and the example consumer, Catch2
# (the tests' configure step needs it, a header-only package), and MariaDB,
# kcat and curl for the demo itself.
OUTBOX_QUICKSTART_DEPS=(
    build-essential cmake ninja-build pkg-config ccache git
    libboost-dev libmysqlcppconn-dev librdkafka-dev libyaml-cpp-dev
    prometheus-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
    catch2 mariadb-server mariadb-client kcat curl python3 procps
    openssl
    # src/binlog/ links libmariadb directly for its replication API
    # (mariadb_rpl.h, pkg-config libmariadb; tests/ops/check_image.sh links a
    # probe against its mysql.h); the runtime needs libmariadb3
    libmariadb-dev
    # sd_notify for Type=notify and the systemd watchdog (src/app/systemd_notify.cc)
    libsystemd-dev
    # avro-c: Avro schemas and their binary encoding (src/schema/); OpenSSL
    # for https to a Schema Registry (Boost.Asio's ssl, src/schema/)
    libavro-dev libssl-dev
)
# What the tests, the checks and the packaging add (scripts/test and the
# scripts CI runs).
OUTBOX_TEST_DEPS=(
    prometheus
    # tests/integration/fleet_faults_test.cc cuts one relay (by its uid) off
    # from the group's coordinator with a firewall rule
    iptables
    # scripts/fuzz: libFuzzer comes with clang's runtime (-fsanitize=fuzzer)
    clang libclang-rt-14-dev
    # tests/ops: PyYAML for the deploy-file checks, systemd-analyze for the
    # unit check (the package installs the tools; nothing is started), man
    # for the manual page's check.
    python3-yaml systemd man-db
    # scripts/lint: formatting, bug-finding checks, function size/complexity
    clang-format clang-tidy pmccabe
    # tests/cloudevents: the CloudEvents SDK for JavaScript decodes the
    # relay's messages (npm installs it into the build tree)
    nodejs
    # tests/schema: Debian's python3-avro decodes the Avro the relay writes
    # (tests/schema/decode_avro.py), an implementation that is not avro-c
    python3-avro
    # scripts/package: the Debian package (dpkg-buildpackage, debhelper),
    # checked by lintian; scripts/test-package installs it in a throwaway
    # Debian root that mmdebstrap makes from the archive
    debhelper lintian mmdebstrap
)
OUTBOX_DEPS=("${OUTBOX_QUICKSTART_DEPS[@]}" "${OUTBOX_TEST_DEPS[@]}")
# Debian's nodejs comes without npm (its own package); a nodejs built by
# NodeSource brings npm and conflicts with Debian's, so npm is asked for only
# when there is none.
command -v npm >/dev/null 2>&1 || OUTBOX_DEPS+=(npm)

# _outbox_pkg_installed PKG — true when dpkg reports "install ok installed".
_outbox_pkg_installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [[ "$status" == "install ok installed" ]]
}

outbox_missing_deps() {
    local p
    for p in "${OUTBOX_DEPS[@]}" "$@"; do
        if ! _outbox_pkg_installed "$p"; then
            printf '%s\n' "$p"
        fi
    done
}

outbox_install_deps() {
    outbox_install_packages "${OUTBOX_DEPS[@]}" "$@"
}

outbox_install_quickstart_deps() {
    outbox_install_packages "${OUTBOX_QUICKSTART_DEPS[@]}"
}

# outbox_install_packages PKG... — as outbox_install_deps, for these packages
# only (scripts/package in the image's build stage, which has no test tools).
outbox_install_packages() {
    local missing=() p aptlog rc
    for p in "$@"; do
        _outbox_pkg_installed "$p" || missing+=("$p")
    done

    if ((${#missing[@]} == 0)); then
        log "all build/test dependencies are installed"
        return 0
    fi

    if [[ "$(id -u)" != 0 ]]; then
        log "missing packages: ${missing[*]}"
        log "run as root:"
        printf 'sudo apt-get install -y --no-install-recommends %s\n' "${missing[*]}"
        return 1
    fi

    log "installing: ${missing[*]}"
    aptlog=$(mktemp "${TMPDIR:-/tmp}/outbox-apt.XXXXXX")
    rc=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                --no-install-recommends "${missing[@]}"
    } >"$aptlog" 2>&1 || rc=$?
    if ((rc != 0)); then
        log "apt-get failed (exit $rc); last lines of its output:"
        tail -n 30 "$aptlog" >&2
        rm -f "$aptlog"
        return 1
    fi
    rm -f "$aptlog"

    # dpkg may "succeed" and still leave something unconfigured; verify.
    local still=()
    for p in "${missing[@]}"; do
        _outbox_pkg_installed "$p" || still+=("$p")
    done
    if ((${#still[@]} != 0)); then
        log "still not installed after apt-get: ${still[*]}"
        return 1
    fi
    log "installed: ${missing[*]}"
}
