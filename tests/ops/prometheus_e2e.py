#!/usr/bin/env python3
"""End to end with a real Prometheus: a DEAD row fires OutboxDeadEvents.

What an operator sees on the day, with real parts only:

  - MariaDB (the test server of scripts/test, OUTBOX_TEST_MYSQL_*): a fresh
    database with sql/t_outbox.sql plus `last_error`, and a relay account with
    only SELECT, UPDATE on the table (the documented minimal grants);
  - outbox-mock-broker (a Kafka-protocol broker) that starts rejecting every
    produce request with TOPIC_AUTHORIZATION_FAILED, as a broker does when
    the relay's ACL is missing;
  - `outbox-relay run` with retry.max_attempts 2, scraped by Debian's
    `prometheus` on loopback (temp dir, free port, 1 s scrape and rule
    evaluation) with the production rules of deploy/prometheus/alerts.yml.

The rule file Prometheus loads is generated from alerts.yml with every `for:`
set to 10s and nothing else changed (checked below): the production `for: 1m`
of OutboxDeadEvents would make the test wait a minute for nothing, while the
expressions, labels and annotations under test stay the production ones.

Then it follows docs/RUNBOOK.md#outboxdeadevents: runs the section's
`outbox-relay dead ...` commands, its SQL and its PromQL (against this
Prometheus, each must return data), fixes the cause (the broker accepts
writes again), replays, and checks that the events are delivered in order,
that the alert resolves, that no other alert about the relay or its
dependencies fired, that every PromQL query of RUNBOOK.md and METRICS.md is
valid, and that Prometheus saw exactly the metrics METRICS.md lists.

Usage: tests/ops/prometheus_e2e.py RELAY_BINARY MOCK_BROKER_BINARY
Needs prometheus, promtool, the mariadb client and kcat on PATH.
Exit 0 ok, 1 failure.
"""
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "ops"))
import promql_names  # noqa: E402  (METRICS.md parsing shared with the other checks)

DB = "ops_prom_e2e"
RELAY_USER = "ops_prom_relay"
RELAY_PASSWORD = "prom-e2e-relay-pw"
SERVICE = "order"
RULE_FOR = "10s"
failures = []


def log(msg):
    print(f"[prometheus-e2e] {msg}", flush=True)


def check(cond, what):
    log(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # The children go when this process goes, even if ctest kills it.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def wait_until(what, fn, deadline_s):
    """Polls fn every 0.25 s until it returns a truthy value; returns it or None."""
    end = time.monotonic() + deadline_s
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() >= end:
            log(f"gave up after {deadline_s}s waiting for: {what}")
            return None
        time.sleep(0.25)


class Mysql:
    def __init__(self):
        self.base = ["mariadb", "--no-defaults", "--batch", "--skip-column-names",
                     "-h", os.environ.get("OUTBOX_TEST_MYSQL_HOST", "127.0.0.1"),
                     "-P", os.environ.get("OUTBOX_TEST_MYSQL_PORT", "3306"),
                     "-u", os.environ.get("OUTBOX_TEST_MYSQL_USER", "root")]
        pw = os.environ.get("OUTBOX_TEST_MYSQL_PASSWORD", "")
        if pw:
            self.base.append("-p" + pw)

    def run(self, sql, db=DB):
        r = subprocess.run(self.base + ([db] if db else []), input=sql, text=True,
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"SQL failed ({r.stderr.strip()}): {sql.strip()[:200]}")
        return r.stdout

    def status(self, row_id):
        return self.run(f"SELECT status FROM t_outbox WHERE id = {row_id}").strip()


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            # While it starts, Prometheus answers 503 with a plain-text body.
            try:
                return json.loads(e.read() or b"{}")
            except ValueError:
                return None
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def query(self, q):
        return self.get("/api/v1/query", query=q)

    def value(self, q):
        """The single value of an instant query, or None."""
        r = self.query(q)
        if not r or r.get("status") != "success" or not r["data"]["result"]:
            return None
        return float(r["data"]["result"][0]["value"][1])

    def alerts(self):
        r = self.get("/api/v1/alerts")
        return r["data"]["alerts"] if r and r.get("status") == "success" else []


def runbook_section(text, heading):
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def code_blocks(text, lang):
    return re.findall(rf"^ *```{lang}\n(.*?)^ *```", text, re.S | re.M)


def promql_queries(block):
    """The queries of a ```promql block: one per line, except that a line
    starting with a binary operator, or following one with unclosed
    parentheses or ending in an operator, continues the previous query."""
    queries = []
    ops = ("/", "+", "-", "*", "and ", "or ", "unless ", ">", "<", "==")
    for line in (l.strip() for l in block.splitlines()):
        if not line:
            continue
        prev = queries[-1] if queries else ""
        if queries and (line.startswith(ops) or prev.count("(") > prev.count(")")
                        or prev.endswith(tuple(o.strip() for o in ops))):
            queries[-1] = prev + " " + line
        else:
            queries.append(line)
    return queries


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    relay_bin, broker_bin = (str(Path(p).resolve()) for p in sys.argv[1:3])
    for tool in ("prometheus", "promtool", "mariadb", "kcat"):
        if not shutil.which(tool):
            log(f"{tool} not found: scripts/lib/deps.sh installs it")
            return 1
    tmp = Path(tempfile.mkdtemp(prefix="outbox-prom-e2e."))
    procs = []
    mysql = Mysql()
    try:
        return run(relay_bin, broker_bin, tmp, procs, mysql)
    finally:
        for name, p, stop in reversed(procs):
            if p.poll() is None:
                stop(p)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    log(f"{name} (pid {p.pid}) did not stop; killing it")
                    p.kill()
                    p.wait()
        try:
            mysql.run(f"DROP DATABASE IF EXISTS {DB}; DROP USER IF EXISTS '{RELAY_USER}'@'%';",
                      db=None)
        except RuntimeError as e:
            log(f"cleanup: {e}")
        if failures:
            for f in ("relay.log", "prometheus.log"):
                p = tmp / f
                if p.exists():
                    log(f"---- last lines of {f}")
                    print("\n".join(p.read_text(errors="replace").splitlines()[-30:]))
        shutil.rmtree(tmp, ignore_errors=True)


def run(relay_bin, broker_bin, tmp, procs, mysql):
    # ---------------------------------------------------------------- database
    ddl = (ROOT / "sql" / "t_outbox.sql").read_text()
    mysql.run(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB} CHARACTER SET utf8mb4;",
              db=None)
    mysql.run(ddl + "\nALTER TABLE t_outbox ADD COLUMN last_error varchar(1024) NULL;")
    mysql.run(f"DROP USER IF EXISTS '{RELAY_USER}'@'%';"
              f"CREATE USER '{RELAY_USER}'@'%' IDENTIFIED BY '{RELAY_PASSWORD}';"
              f"GRANT SELECT, UPDATE ON {DB}.t_outbox TO '{RELAY_USER}'@'%';", db=None)

    # ------------------------------------------------------------------ broker
    broker = subprocess.Popen([broker_bin, "--partitions", "3"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)

    def stop_broker(p):
        try:
            p.stdin.write("quit\n")
            p.stdin.close()
        except OSError:
            p.terminate()
    procs.append(("outbox-mock-broker", broker, stop_broker))
    first = broker.stdout.readline().split()
    if len(first) != 2 or first[0] != "bootstrap":
        return check(False, f"outbox-mock-broker printed its bootstrap address (got {first})")
    bootstrap = first[1]

    def broker_cmd(line):
        broker.stdin.write(line + "\n")
        broker.stdin.flush()
        reply = broker.stdout.readline().strip()
        check(reply.startswith("ok"), f"broker `{line}`: {reply}")

    # The relay's principal lacks the topic ACL: every produce request fails.
    broker_cmd("produce-errors 1000000 TOPIC_AUTHORIZATION_FAILED")

    # ------------------------------------------------------------------- relay
    http_port = free_port()
    config = tmp / "relay.yaml"
    config.write_text(f"""instance_id: prom-e2e
http: {{listen: "127.0.0.1:{http_port}"}}
log: {{level: info, format: text}}
kafka:
  bootstrap_servers: "{bootstrap}"
services:
  - name: {SERVICE}
    mysql:
      host: "{os.environ.get('OUTBOX_TEST_MYSQL_HOST', '127.0.0.1')}"
      port: {os.environ.get('OUTBOX_TEST_MYSQL_PORT', '3306')}
      user: {RELAY_USER}
      password_env: OPS_PROM_E2E_DB_PASSWORD
      database: {DB}
      tls: {{mode: disabled}}
    poll_interval_ms: 100
    lease_ms: 4000
    gauge_interval_ms: 500
    retry: {{max_attempts: 2, initial_backoff_ms: 200, max_backoff_ms: 200}}
""")
    env = dict(os.environ, OPS_PROM_E2E_DB_PASSWORD=RELAY_PASSWORD)
    relay_log = open(tmp / "relay.log", "w")
    relay = subprocess.Popen([relay_bin, "run", "--config", str(config)], stdout=relay_log,
                             stderr=subprocess.STDOUT, env=env, preexec_fn=die_with_parent)
    procs.append(("outbox-relay", relay, lambda p: p.send_signal(signal.SIGTERM)))

    def relay_cli(args):
        r = subprocess.run([relay_bin] + args, capture_output=True, text=True, env=env, timeout=60)
        return r

    # -------------------------------------------------------------- prometheus
    alerts_src = (ROOT / "deploy" / "prometheus" / "alerts.yml").read_text()
    test_rules, n_for = re.subn(r"(?m)^(\s+for:\s*)\S+\s*$", rf"\g<1>{RULE_FOR}", alerts_src)
    changed = [(a, b) for a, b in zip(alerts_src.splitlines(), test_rules.splitlines()) if a != b]
    n_alerts = len(re.findall(r"(?m)^\s+- alert:", alerts_src))
    check(n_for == n_alerts and all(re.match(r"\s+for:", a) for a, _ in changed),
          f"test rules = alerts.yml with only the {n_for} `for:` lines set to {RULE_FOR}")
    (tmp / "alerts.yml").write_text(test_rules)
    prom_port = free_port()
    (tmp / "prometheus.yml").write_text(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: outbox-relay
    static_configs:
      - targets: ['127.0.0.1:{http_port}']
""")
    r = subprocess.run(["promtool", "check", "config", str(tmp / "prometheus.yml")],
                       capture_output=True, text=True)
    check(r.returncode == 0, "promtool check config (test config and rules)")
    prom_log = open(tmp / "prometheus.log", "w")
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{prom_port}",
         "--log.level=warn"],
        stdout=prom_log, stderr=subprocess.STDOUT, cwd=tmp, preexec_fn=die_with_parent)
    procs.append(("prometheus", prom, lambda p: p.send_signal(signal.SIGTERM)))
    P = Prometheus(prom_port)
    if not check(wait_until("Prometheus ready", lambda: P.get("/api/v1/status/buildinfo"), 60),
                 f"prometheus answers on 127.0.0.1:{prom_port}"):
        return 1
    log("prometheus " + P.get("/api/v1/status/buildinfo")["data"]["version"])
    if not check(wait_until("the relay target up",
                            lambda: P.value('up{job="outbox-relay"}') == 1, 60),
                 "Prometheus scrapes the relay (up == 1)"):
        return 1

    # ------------------------------------------- events, and the real failure
    mysql.run("""INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key,
        payload, status, retry_count, next_retry_at, created_at, updated_at) VALUES
      (1, 'Order', 42, 'OrderCreated', 'OrderCreated:42:1', '{"orderId": 42}', 'NEW', 0, NOW(), NOW(), NOW()),
      (2, 'Order', 42, 'OrderPaid', 'OrderPaid:42:2', '{"orderId": 42}', 'NEW', 0, NOW(), NOW(), NOW()),
      (3, 'Order', 42, 'OrderShipped', 'OrderShipped:42:3', '{"orderId": 42}', 'NEW', 0, NOW(), NOW(), NOW()),
      (4, 'Order', 43, 'OrderCreated', 'OrderCreated:43:1', '{"orderId": 43}', 'NEW', 0, NOW(), NOW(), NOW());""")
    dead = wait_until("rows 1 and 4 DEAD",
                      lambda: mysql.status(1) == "DEAD" and mysql.status(4) == "DEAD", 60)
    if not check(bool(dead), "the broker's rejections drive rows 1 and 4 DEAD after 2 attempts"):
        return 1
    check(mysql.status(2) == "NEW" and mysql.status(3) == "NEW",
          "Order/42's later events 2 and 3 wait behind DEAD row 1 (dead_policy block)")
    check(mysql.run("SELECT MIN(retry_count) FROM t_outbox WHERE status = 'DEAD'").strip() == "2",
          "retry_count of the DEAD rows is max_attempts (2)")

    # --------------------------------------------------------------- the alert
    check(wait_until("outbox_dead_events == 2 in Prometheus",
                     lambda: P.value(f'outbox_dead_events{{service="{SERVICE}"}}') == 2, 30),
          "Prometheus has outbox_dead_events{service=\"order\"} 2")
    check(wait_until("outbox_blocked_aggregates == 1",
                     lambda: P.value(f'outbox_blocked_aggregates{{service="{SERVICE}"}}') == 1, 30),
          "outbox_blocked_aggregates is 1 (Order/42 is held back, Order/43 has nothing after)")
    states = []
    seen_other = set()

    def dead_alert():
        for a in P.alerts():
            name = a["labels"].get("alertname")
            if name in ("OutboxRelayDown", "OutboxDatabaseUnreachable", "OutboxKafkaUnreachable",
                        "OutboxPollingStalled", "OutboxBacklogStale", "OutboxWakeupBinlogDown"):
                seen_other.add(f"{name} ({a['state']})")
            if name == "OutboxDeadEvents":
                if not states or states[-1] != a["state"]:
                    states.append(a["state"])
                if a["state"] == "firing":
                    return a
        return None

    t0 = time.monotonic()
    firing = wait_until("OutboxDeadEvents firing", dead_alert, 90)
    if not check(bool(firing), "OutboxDeadEvents reaches state firing"):
        return 1
    log(f"OutboxDeadEvents states seen: {' -> '.join(states)} "
        f"({time.monotonic() - t0:.1f} s after the rows went DEAD; for: {RULE_FOR})")
    check(firing["labels"].get("service") == SERVICE and firing["labels"].get("severity") == "critical",
          f"alert labels service=order severity=critical (got {firing['labels']})")
    ann = firing["annotations"]
    check(ann.get("summary") == "DEAD outbox events in service order", f"summary: {ann.get('summary')}")
    check("holds 2 DEAD event(s)" in ann.get("description", ""),
          f"description names the count: {ann.get('description')}")
    check(ann.get("runbook_url", "").endswith("docs/RUNBOOK.md#outboxdeadevents"),
          f"runbook_url: {ann.get('runbook_url')}")
    check(P.value('ALERTS{alertname="OutboxDeadEvents",alertstate="firing",service="order"}') == 1,
          'ALERTS{alertname="OutboxDeadEvents",alertstate="firing"} is 1')
    check((P.value('sum(outbox_publish_failures_total{service="order",reason="broker_error"})') or 0) >= 4,
          "outbox_publish_failures_total{reason=\"broker_error\"} counts the rejections")

    # ------------------------------------------ follow the runbook: how to look
    runbook = (ROOT / "docs" / "RUNBOOK.md").read_text()
    section = runbook_section(runbook, "OutboxDeadEvents")
    look, fix = section.split("**How to fix.**", 1)
    cli_lines = lambda text: [l.strip() for b in code_blocks(text, "sh") for l in b.splitlines()
                              if l.strip().startswith("outbox-relay dead ")]
    # The runbook's commands rely on the default config path; the variable
    # that replaces it points them at this test's file.
    runbook_cli = lambda line: subprocess.run(
        [relay_bin] + line.replace("/etc/outbox-relay/config.yaml", str(config)).split()[1:],
        capture_output=True, text=True, env={**env, "OUTBOX_RELAY_CONFIG": str(config)}, timeout=60)
    look_cmds = cli_lines(look)
    check(len(look_cmds) >= 2, f"the runbook's 'How to look' has dead list commands ({len(look_cmds)})")
    for line in look_cmds:
        r = runbook_cli(line)
        ok = r.returncode == 0
        if "--json" in line and ok:
            rows = json.loads(r.stdout)
            ok = [d["id"] for d in rows] == [1, 4] and all(
                "TOPIC_AUTHORIZATION_FAILED" in (d["last_error"] or "") and d["retry_count"] == 2
                and d["age_seconds"] >= 0 for d in rows)
        elif ok:
            ok = (re.search(r"^1 +Order/42 +OrderCreated +2 +\d+s +.*TOPIC_AUTHORIZATION_FAILED",
                            r.stdout, re.M) is not None
                  and re.search(r"^4 +Order/43 +OrderCreated +2 ", r.stdout, re.M) is not None
                  and "2 DEAD row(s)" in r.stdout)
        check(ok, f"runbook: `{line}` lists rows 1 and 4 with the broker's error")
        if not ok:
            print(r.stdout, r.stderr)
    for block in code_blocks(look, "sql"):
        try:
            out = mysql.run(block)
            check(bool(out.strip()), f"runbook SQL runs and returns rows: {block.split(chr(10))[0]} ...")
        except RuntimeError as e:
            check(False, f"runbook SQL: {e}")
    for block in code_blocks(look, "promql"):
        for q in promql_queries(block):
            r = P.query(q)
            check(bool(r) and r.get("status") == "success" and r["data"]["result"],
                  f"runbook PromQL returns data: {q}")

    # --------------------------------------------- fix the cause, then replay
    broker_cmd("clear-errors")  # the ACL is granted
    fix_cmds = cli_lines(fix)
    check(any("--all" in l and "--dry-run" not in l for l in fix_cmds),
          "the runbook's 'How to fix' ends with a real replay")
    for line in fix_cmds:
        r = runbook_cli(line)
        check(r.returncode == 0, f"runbook: `{line}` exits 0")
        if "--all" in line and "--dry-run" not in line:
            check("replayed 2 DEAD row(s) -> NEW" in r.stdout, f"`{line}` replays the 2 rows")
            check(re.search(r"audit: dead replay service=order outbox_id=1 aggregate_type=Order "
                            r"aggregate_id=42 event_type=OrderCreated", r.stderr) is not None,
                  "the replay logs an audit line per row")
        if "--dry-run" in line and "--all" in line:
            check("would replay 2 DEAD row(s) -> NEW" in r.stdout, f"`{line}` shows the 2 rows")
    for block in code_blocks(fix, "sql"):  # archiving a row the owner drops: id 4711, none here
        try:
            mysql.run(block)
            check(True, "runbook SQL of 'How to fix' runs")
        except RuntimeError as e:
            check(False, f"runbook SQL: {e}")

    delivered = wait_until("all four rows SENT", lambda: mysql.run(
        "SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'").strip() == "4", 60)
    check(bool(delivered), "after the replay every row is SENT")
    r = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", "outbox.event.Order", "-e", "-q",
                        "-f", "%k %h\n"], capture_output=True, text=True, timeout=60)
    order42 = [int(m.group(1)) for line in r.stdout.splitlines() if line.startswith("42 ")
               for m in [re.search(r"outbox_id=(\d+)", line)] if m]
    check(order42 == [1, 2, 3], f"Kafka has Order/42's events once, in id order (got {order42})")
    check(wait_until("published counter 4", lambda: P.value(
        f'sum(outbox_events_published_total{{service="{SERVICE}"}})') == 4, 30),
        "Prometheus: outbox_events_published_total sums to 4")

    # -------------------------------------------------------- alert resolves
    resolved = wait_until("OutboxDeadEvents gone", lambda: not any(
        a["labels"].get("alertname") == "OutboxDeadEvents" for a in P.alerts()) and P.value(
        f'outbox_dead_events{{service="{SERVICE}"}}') == 0, 60)
    check(bool(resolved), "OutboxDeadEvents resolves once outbox_dead_events is 0")
    check(P.value(f'outbox_blocked_aggregates{{service="{SERVICE}"}}') == 0,
          "outbox_blocked_aggregates is back to 0")
    dead_alert()
    check(not seen_other, f"no RelayDown/DatabaseUnreachable/KafkaUnreachable/PollingStalled/"
          f"BacklogStale alert (seen: {sorted(seen_other) or 'none'})")

    # ------------------------------------------ docs against the real thing
    for doc in ("docs/RUNBOOK.md", "docs/METRICS.md"):
        qs = [q for b in code_blocks((ROOT / doc).read_text(), "promql")
              for q in promql_queries(b)]
        bad = []
        for q in qs:
            r = P.query(q.replace('instance="INSTANCE"', f'instance="127.0.0.1:{http_port}"'))
            if not r or r.get("status") != "success":
                bad.append(f"{q}: {r and r.get('error')}")
        check(not bad, f"{doc}: all {len(qs)} PromQL queries are valid" +
              ("".join("\n      " + b for b in bad)))
    names = P.get("/api/v1/label/__name__/values")["data"]
    exported = {n for n in names if n.startswith("outbox_")}
    families = set()
    for n in exported:
        base = n
        for suffix in promql_names.HISTOGRAM_SUFFIXES:
            if n.endswith(suffix) and n[: -len(suffix)] + "_bucket" in exported:
                base = n[: -len(suffix)]
        families.add(base)
    documented = promql_names.documented_metrics(str(ROOT / "docs" / "METRICS.md"))
    # Exported only for services with `wakeup: binlog` (this relay polls) and
    # for services with a value_format other than bytes (this relay sends the
    # payload as it is); tests/ops/check_metrics.sh sees those exposed.
    documented -= {"outbox_wakeup_binlog_up"}
    documented -= {n for n in documented if n.startswith("outbox_schema_")}
    check(families == documented,
          f"the relay exported exactly the {len(documented)} metrics of METRICS.md"
          f" (undocumented: {sorted(families - documented)}, missing: {sorted(documented - families)})")

    # ----------------------------------------------------------- shut down
    relay.send_signal(signal.SIGTERM)
    try:
        rc = relay.wait(timeout=60)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, f"the relay exits 0 on SIGTERM (got {rc})")
    return 1 if failures else 0


if __name__ == "__main__":
    rc = main()
    log("OK" if rc == 0 and not failures else f"FAILED: {len(failures)} check(s)")
    sys.exit(1 if failures or rc else 0)
