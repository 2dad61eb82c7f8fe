# shellcheck shell=bash
# scripts/lib/common.sh — small helpers shared by outbox-relay scripts.
#
# Source it:   . "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
#
# Functions:
#   log MSG...                 print "[outbox] MSG" on stderr
#   outbox_die MSG...          log MSG and exit 1
#   outbox_tmpdir              create ${TMPDIR:-/tmp}/outbox-relay.XXXXXX, print its path
#   outbox_on_exit "CMD"       register CMD to run on EXIT/INT/TERM (reverse order)
#   outbox_free_port           print a currently free TCP port on 127.0.0.1
#   outbox_wait_http URL SECS  wait until URL answers 2xx/3xx, return 1 after SECS
#
# The file only defines functions; it does not change shell options. Callers
# are expected to use `set -euo pipefail`.

if [[ -n "${_OUTBOX_COMMON_SH:-}" ]]; then
    return 0
fi
_OUTBOX_COMMON_SH=1

# log MSG... — diagnostic output goes to stderr so that functions whose stdout
# is captured with $(...) stay clean.
log() {
    printf '[outbox] %s\n' "$*" >&2
}

outbox_die() {
    log "ERROR: $*"
    exit 1
}

# outbox_tmpdir — print the path of a fresh private temporary directory.
# The caller owns it; typical use:
#   dir=$(outbox_tmpdir); outbox_on_exit "rm -rf '$dir'"
outbox_tmpdir() {
    mktemp -d "${TMPDIR:-/tmp}/outbox-relay.XXXXXX"
}

# ---------------------------------------------------------------------------
# Cleanup-trap registry. Commands registered with outbox_on_exit run once, in
# reverse order of registration, when the shell exits or gets INT/TERM. A
# failing command does not stop the others. After INT/TERM the shell exits with
# 128+signal. The registry belongs to the shell that registered; subshells
# ($(...), pipelines) do not inherit traps, so register from the main shell.
# ---------------------------------------------------------------------------
_OUTBOX_EXIT_CMDS=()
_OUTBOX_EXIT_DONE=0
_OUTBOX_TRAPS_SET=0

_outbox_run_exit_cmds() {
    local i
    if [[ "$_OUTBOX_EXIT_DONE" == 1 ]]; then
        return 0
    fi
    _OUTBOX_EXIT_DONE=1
    for ((i = ${#_OUTBOX_EXIT_CMDS[@]} - 1; i >= 0; i--)); do
        # Run each command in a subshell with errexit off so one failure (or an
        # `exit` inside the command) cannot prevent the rest from running.
        (set +e; eval "${_OUTBOX_EXIT_CMDS[i]}") || log "cleanup failed (ignored): ${_OUTBOX_EXIT_CMDS[i]}"
    done
}

_outbox_on_exit_trap() {
    local rc=$?
    _outbox_run_exit_cmds
    exit "$rc"
}

_outbox_on_signal() {
    local sig=$1 code=$2
    trap - "$sig"
    log "caught SIG$sig, cleaning up"
    _outbox_run_exit_cmds
    exit "$code"
}

# outbox_on_exit "CMD" — CMD is eval'ed at exit; quote values inside it.
outbox_on_exit() {
    if [[ $# -ne 1 || -z "$1" ]]; then
        log "usage: outbox_on_exit \"command\""
        return 2
    fi
    _OUTBOX_EXIT_CMDS+=("$1")
    if [[ "$_OUTBOX_TRAPS_SET" != 1 ]]; then
        trap _outbox_on_exit_trap EXIT
        trap '_outbox_on_signal INT 130' INT
        trap '_outbox_on_signal TERM 143' TERM
        _OUTBOX_TRAPS_SET=1
    fi
}

# outbox_free_port — ask the kernel for a free port (bind port 0) and print it.
# The port is released before this returns, so another process can still take
# it; callers that bind later must be ready to retry.
outbox_free_port() {
    python3 - <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

# outbox_wait_http URL SECONDS — poll URL until it answers with a non-error
# status (curl -f: < 400). Returns 0 on success, 1 on timeout.
outbox_wait_http() {
    if [[ $# -ne 2 ]]; then
        log "usage: outbox_wait_http URL SECONDS"
        return 2
    fi
    local url=$1 secs=$2 deadline
    deadline=$((SECONDS + secs))
    while :; do
        if curl -fsS -o /dev/null --connect-timeout 1 --max-time 2 "$url" 2>/dev/null; then
            return 0
        fi
        if ((SECONDS >= deadline)); then
            log "timed out after ${secs}s waiting for $url"
            return 1
        fi
        sleep 0.2
    done
}
