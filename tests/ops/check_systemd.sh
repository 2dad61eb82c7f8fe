#!/usr/bin/env bash
# Verifies systemd/outbox-relay.service with `systemd-analyze verify`, and
# the settings the relay relies on (Type=notify, WatchdogSec, the default
# config path, TimeoutStopSec, ExecReload checking the file and sending
# SIGHUP, a per-host HOSTNAME for the example config's instance_id), and the
# Debian package's paths and user (/usr/bin, User=outbox-relay).
#
# systemd-analyze checks that ExecStart's binary exists, so a copy of the unit
# is checked with /usr/bin/outbox-relay replaced by a binary that does:
# the relay binary given as $1 (e.g. build/outbox-relay), else /bin/true.
# Also prints the unit's `systemd-analyze security` exposure score when this
# systemd supports --offline (information only).
#
# Usage: tests/ops/check_systemd.sh [RELAY_BINARY]
# Exit 0 ok, 1 failure, 77 skipped (no systemd-analyze).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
unit="$root/systemd/outbox-relay.service"
bin="${1:-/bin/true}"

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not installed (Debian package systemd)"
  exit 77
fi
if [[ ! -f "$unit" ]]; then
  echo "check_systemd: $unit not found" >&2
  exit 1
fi
bin="$(readlink -f "$bin")"
if [[ ! -x "$bin" ]]; then
  echo "check_systemd: $bin is not an executable file" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed "s#/usr/bin/outbox-relay#$bin#g" "$unit" > "$tmp/outbox-relay.service"

fail=0
# The config is the default path (/etc/outbox-relay/config.yaml): no -c.
# The binary is where the Debian package installs it.
grep -q '^ExecStart=/usr/bin/outbox-relay run$' "$unit" \
  || { echo "check_systemd: ExecStart is not '/usr/bin/outbox-relay run'"; fail=1; }
# The user is the package's system user (its postinst creates it), which the
# config is group-readable by (root:outbox-relay 0640): not DynamicUser=.
for key in User=outbox-relay Group=outbox-relay ProtectSystem=strict ProtectHome=yes \
           NoNewPrivileges=yes PrivateTmp=yes PrivateDevices=yes CapabilityBoundingSet= \
           RestrictSUIDSGID=yes RemoveIPC=yes Restart=on-failure Type=notify NotifyAccess=main \
           ExecStartPre=/usr/bin/outbox-relay\ check; do
  grep -qx "$key" "$unit" || { echo "check_systemd: $unit lacks $key"; fail=1; }
done
if grep -q '^DynamicUser=' "$unit"; then
  echo "check_systemd: DynamicUser= would not be the package's user"; fail=1
fi

# Reload: `systemctl reload` checks the file, then sends SIGHUP to the relay
# itself (the main process; the relay reads its file again, docs/CONFIG.md "Reload").
if [[ "$(grep '^ExecReload=' "$unit")" != $'ExecReload=/usr/bin/outbox-relay check\nExecReload=/bin/kill -HUP $MAINPID' ]]; then
  echo "check_systemd: ExecReload is not 'outbox-relay check', then '/bin/kill -HUP \$MAINPID'"; fail=1
fi
# Identity: the example configs take instance_id from ${HOSTNAME}, which
# systemd does not set; the unit sets it to the host name (%H), before the
# env file (whose values win), so two hosts never share an instance_id (and
# with wakeup: binlog a replica server_id).
env_line="$(grep -n '^Environment=HOSTNAME=%H$' "$unit" | cut -d: -f1)"
file_line="$(grep -n '^EnvironmentFile=' "$unit" | head -1 | cut -d: -f1)"
if [[ -z "$env_line" ]]; then
  echo "check_systemd: the unit does not set Environment=HOSTNAME=%H"; fail=1
elif [[ -n "$file_line" && "$env_line" -gt "$file_line" ]]; then
  echo "check_systemd: Environment=HOSTNAME=%H must come before EnvironmentFile= (the file overrides it)"; fail=1
else
  echo "ok    ExecReload checks the file, then sends SIGHUP; HOSTNAME=%H gives each host its own instance_id"
fi
cfg="$root/config/example.yaml"
grep -q '^instance_id: \${HOSTNAME' "$cfg" \
  || { echo "check_systemd: $cfg no longer takes instance_id from \${HOSTNAME}; update the unit's comment"; fail=1; }
# The source files the unit's comments cite exist.
for cited in $(grep -o 'src/[A-Za-z0-9_/]*\.\(cc\|h\)' "$unit" | sort -u); do
  [[ -f "$root/$cited" ]] || { echo "check_systemd: the unit cites $cited, which does not exist"; fail=1; }
done

# TimeoutStopSec must outlast the relay's own shutdown deadline: at most
# min(60 s, lease_ms / 2 + 5 s) for in-flight batches plus 5 s for the
# producer flush (ServiceSet::StopAll in src/app/service_set.cc, KafkaPublisher::Flush in
# src/kafka/kafka_publisher.cc) = 65 s, plus 10 s margin.
stop="$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$unit")"
if [[ -z "$stop" || "$stop" -lt 75 ]]; then
  echo "check_systemd: TimeoutStopSec must be at least 75s (the relay may take 65 s to stop), got '${stop:-unset}'"
  fail=1
else
  echo "ok    TimeoutStopSec=${stop}s >= 75s (relay shutdown deadline 65 s + margin)"
fi

# The relay pings the watchdog every WatchdogSec/2 from its HTTP thread
# (src/app/systemd_notify.cc); below 10 s a slow scrape on a loaded host could
# miss a ping, above 120 s a hung relay stays up too long after its stall.
wd="$(sed -n 's/^WatchdogSec=\([0-9]*\)s$/\1/p' "$unit")"
if [[ -z "$wd" || "$wd" -lt 10 || "$wd" -gt 120 ]]; then
  echo "check_systemd: WatchdogSec must be between 10s and 120s, got '${wd:-unset}'"
  fail=1
else
  echo "ok    Type=notify, WatchdogSec=${wd}s"
fi

# systemd-analyze must really judge the unit here: a broken copy must fail.
sed 's/^ProtectHome=yes$/ProtectHome=yes\nNoSuchSetting=1\nRestart=sometimes/' \
  "$tmp/outbox-relay.service" > "$tmp/broken.service"
broken="$(cd "$tmp" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no ./broken.service 2>&1)" || true
if grep -q "NoSuchSetting" <<<"$broken" && grep -q "sometimes" <<<"$broken"; then
  echo "ok    systemd-analyze verify reports a unit with an unknown key and a bad value"
else
  echo "check_systemd: systemd-analyze verify did not report a deliberately broken unit:"
  echo "$broken"
  fail=1
fi

echo "== systemd-analyze verify (ExecStart binary: $bin)"
# Outside a booted systemd (containers, CI) verify still parses the unit but
# may warn about the manager; only messages about our unit count.
out="$(cd "$tmp" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no ./outbox-relay.service 2>&1)" || rc=$?
rc="${rc:-0}"
echo "$out"
if [[ $rc -ne 0 ]] || grep -q 'outbox-relay.service' <<<"$out"; then
  echo "check_systemd: systemd-analyze verify reported problems (exit $rc)"
  fail=1
fi

if [[ $(systemd-analyze security --help 2>/dev/null) == *--offline* ]]; then
  echo "== systemd-analyze security (information only)"
  (cd "$tmp" && systemd-analyze security --offline=true --no-pager ./outbox-relay.service 2>&1 | grep 'Overall exposure') || true
fi

if [[ $fail -ne 0 ]]; then
  echo "check_systemd: FAILED"
  exit 1
fi
echo "check_systemd: OK"
