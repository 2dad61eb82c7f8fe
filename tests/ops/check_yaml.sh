#!/usr/bin/env bash
# Checks the deployment files under deploy/:
#   1. every *.yml / *.yaml parses (PyYAML; without it, promtool checks the
#      Prometheus files and the rest is skipped), and the dashboard JSON parses;
#   2. structure: the compose file's services and mounted files (the
#      Kubernetes manifests: tests/ops/check_k8s.py);
#   3. `RELAY_BINARY check --config FILE` accepts every relay configuration
#      that deploy/ mounts: deploy/compose/relay.yaml and the config.yaml of
#      deploy/k8s/base and deploy/k8s/sidecar, with placeholder values for
#      ${VAR}s that have no default.
#
# Usage: tests/ops/check_yaml.sh [RELAY_BINARY]     e.g. build/outbox-relay
# Exit 0 all checked and fine, 1 a failure, 77 nothing failed but something
# was skipped (no RELAY_BINARY given, or no YAML parser).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
deploy="$root/deploy"
relay="${1:-}"

fail=0
skip=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ! command -v python3 >/dev/null 2>&1; then
  echo "check_yaml: python3 is required (apt-get install -y python3)" >&2
  exit 1
fi

# A python3 that has PyYAML: the PATH one, else Debian's (python3-yaml).
pyyaml=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import yaml' 2>/dev/null; then
    pyyaml="$py"
    break
  fi
done

mapfile -t yamls < <(find "$deploy" -type f \( -name '*.yml' -o -name '*.yaml' \) | sort)
echo "== ${#yamls[@]} YAML files under deploy/"

# ---------------------------------------------------------------- 1 + 2
if [[ -n "$pyyaml" ]]; then
  "$pyyaml" - "$root" "${yamls[@]}" <<'PY' || fail=1
import os, re, sys, yaml

root, files = sys.argv[1], sys.argv[2:]
errors = []
docs = {}
for path in files:
    rel = os.path.relpath(path, root)
    try:
        with open(path, encoding="utf-8") as f:
            docs[rel] = [d for d in yaml.safe_load_all(f) if d is not None]
        print(f"ok    {rel}")
    except yaml.YAMLError as e:
        errors.append(f"{rel}: does not parse: {e}")

VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")

def shutdown_budget_s(config):
    """Seconds a relay with this parsed config may take to stop on SIGTERM:
    min(60, lease_ms / 2000 + 5) for in-flight batches (services in
    parallel), then up to 5 for the producer flush (src/app/app.cc)."""
    leases = [int(str(s.get("lease_ms", 30000))) for s in config.get("services", [])] or [30000]
    return min(60, max(leases) / 2000 + 5) + 5

def duration_s(v):
    m = re.fullmatch(r"\s*(\d+)\s*(s|m)?\s*", str(v))
    return None if not m else int(m.group(1)) * (60 if m.group(2) == "m" else 1)

def needed_env(config_text):
    """Variables a relay config needs from its environment (comments aside)."""
    config_text = re.sub(r"(^|\s)#.*$", "", config_text, flags=re.M)
    need = {m.group(1) for m in VAR.finditer(config_text) if m.group(2) is None}
    need |= set(re.findall(r"^\s*password_env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$", config_text, re.M))
    return need

# docker compose
compose = docs.get("deploy/compose/docker-compose.yml")
if compose:
    c = compose[0]
    services = c.get("services", {})
    for name in ("mysql", "kafka", "relay", "prometheus"):
        if name not in services:
            errors.append(f"docker-compose.yml: no service {name}")
    for name, s in services.items():
        if "image" not in s and "build" not in s:
            errors.append(f"docker-compose.yml: service {name} has neither image nor build")
        for v in s.get("volumes", []):
            src = v.split(":", 1)[0] if isinstance(v, str) else v.get("source", "")
            if src.startswith((".", "/")):
                p = os.path.normpath(os.path.join(root, "deploy/compose", src))
                if not os.path.exists(p):
                    errors.append(f"docker-compose.yml: {name} mounts {src}, which does not exist")
        for dep in (s.get("depends_on") or {}):
            if dep not in services:
                errors.append(f"docker-compose.yml: {name} depends on unknown service {dep}")
    relay = services.get("relay", {})
    build = relay.get("build", {})
    ctx = os.path.normpath(os.path.join(root, "deploy/compose", build.get("context", ".")))
    if not os.path.exists(os.path.join(ctx, build.get("dockerfile", "Dockerfile"))):
        errors.append("docker-compose.yml: relay build context has no Dockerfile")
    env = relay.get("environment", {})
    env = set(env) if isinstance(env, dict) else {e.split("=", 1)[0] for e in env}
    env.add("HOSTNAME")  # set by the container runtime
    cfg = open(os.path.join(root, "deploy/compose/relay.yaml"), encoding="utf-8").read()
    for var in sorted(needed_env(cfg) - env):
        errors.append(f"deploy/compose/relay.yaml needs ${var}, which the relay service does not set")
    if not re.search(r"^\s*listen:\s*0\.0\.0\.0:9464\s*$", cfg, re.M):
        errors.append("deploy/compose/relay.yaml: http.listen must be 0.0.0.0:9464 in a container")
    budget = shutdown_budget_s(yaml.safe_load(cfg))
    grace = duration_s(relay.get("stop_grace_period", "10s"))
    if grace is None or grace < budget + 10:
        errors.append(f"docker-compose.yml: relay stop_grace_period {relay.get('stop_grace_period', '10s (default)')}"
                      f" must exceed the relay's shutdown deadline with relay.yaml ({budget:.0f} s) by 10 s")

for e in errors:
    print(f"FAIL  {e}")
sys.exit(1 if errors else 0)
PY
else
  echo "SKIP: no PyYAML (apt-get install -y python3-yaml); checking what promtool can"
  skip=1
  if command -v promtool >/dev/null 2>&1; then
    promtool check config "$deploy/prometheus/prometheus.yml" >/dev/null || { echo "FAIL  deploy/prometheus/prometheus.yml"; fail=1; }
    cp "$deploy/compose/prometheus.yml" "$deploy/prometheus/alerts.yml" "$tmp/"
    promtool check config "$tmp/prometheus.yml" >/dev/null || { echo "FAIL  deploy/compose/prometheus.yml"; fail=1; }
    (cd "$deploy/prometheus" && promtool test rules alerts_test.yml >/dev/null) || { echo "FAIL  deploy/prometheus/alerts_test.yml"; fail=1; }
    echo "checked with promtool: deploy/prometheus/*.yml, deploy/compose/prometheus.yml"
  fi
fi

echo "== JSON"
for f in $(find "$deploy" -type f -name '*.json' | sort); do
  if python3 -m json.tool "$f" >/dev/null; then
    echo "ok    ${f#"$root"/}"
  else
    echo "FAIL  ${f#"$root"/} is not valid JSON"
    fail=1
  fi
done

# ---------------------------------------------------------------- 3
# Relay configs deploy/ mounts: name and file.
configs=("deploy/compose/relay.yaml:$deploy/compose/relay.yaml"
         "deploy/k8s/base/config.yaml:$deploy/k8s/base/config.yaml"
         "deploy/k8s/sidecar/config.yaml:$deploy/k8s/sidecar/config.yaml")

echo "== relay check --config"
if [[ -z "$relay" ]]; then
  echo "SKIP: no relay binary given (usage: $0 build/outbox-relay)"
  skip=1
elif [[ ! -x "$relay" ]]; then
  echo "FAIL  relay binary $relay is not an executable file"
  fail=1
else
  for entry in "${configs[@]}"; do
    name="${entry%%:*}"
    file="${entry#*:}"
    [[ -f "$file" ]] || continue
    # Placeholders for every ${VAR} without a default and every password_env
    # variable not already set in this environment.
    envs=()
    while IFS= read -r var; do
      [[ -z "$var" || -n "${!var:-}" ]] && continue
      case "$var" in
        *BOOTSTRAP*) val="kafka.invalid:9092" ;;
        *HOST*)      val="db.invalid" ;;
        *PASSWORD*)  val="check-yaml-placeholder" ;;
        *)           val="check-yaml-placeholder" ;;
      esac
      envs+=("$var=$val")
    done < <(python3 - "$file" <<'PY'
import re, sys
t = open(sys.argv[1], encoding="utf-8").read()
t = re.sub(r"(^|\s)#.*$", "", t, flags=re.M)  # the relay expands values, not comments
names = {m.group(1) for m in re.finditer(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", t)}
names |= set(re.findall(r"^\s*password_env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$", t, re.M))
print("\n".join(sorted(names)))
PY
)
    if out="$(env "${envs[@]}" "$relay" check --config "$file" 2>&1)"; then
      echo "ok    $name ${envs[*]:+(with ${envs[*]})}"
    else
      rc=$?
      echo "FAIL  $name: $relay check exited $rc ${envs[*]:+(with ${envs[*]})}"
      sed 's/^/      /' <<<"$out"
      fail=1
    fi
  done
fi

if [[ $fail -ne 0 ]]; then
  echo "check_yaml: FAILED"
  exit 1
fi
if [[ $skip -ne 0 ]]; then
  echo "check_yaml: OK, with parts skipped"
  exit 77
fi
echo "check_yaml: OK"
