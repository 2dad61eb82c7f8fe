#!/usr/bin/env python3
"""Checks .github/workflows/test.yml without running it (no GitHub here).

- It parses, and has the jobs `mock` (scripts/test in debian:12) and
  `external` (a matrix of MySQL 8.0, 8.4, MariaDB 10.6, 11.4 and a Kafka).
- Every OUTBOX_TEST_* variable the external job sets is one the suites read
  (tests/support/, tests/main.cc, scripts/test), so a rename cannot leave the
  workflow testing the in-process defaults while it believes it runs against
  MySQL 8 and Kafka.
- The external job gives the suites a database host and a Kafka bootstrap,
  and runs scripts/test.
- Each database image runs with the binary log on and a server_id.

Usage: check_workflow.py [REPO_ROOT]      exit 0 ok, 1 a problem
"""
import glob
import os
import re
import sys

import yaml

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
problems = []


def need(cond, what):
    if not cond:
        problems.append(what)


wf = yaml.safe_load(open(os.path.join(root, ".github/workflows/test.yml"), encoding="utf-8"))
jobs = wf.get("jobs", {})
need(set(jobs) >= {"mock", "external"}, f"jobs mock and external, found {sorted(jobs)}")
mock = jobs.get("mock", {})
need(mock.get("container") == "debian:12", "the mock job runs in debian:12")
need(any("scripts/test" in str(s.get("run", "")) for s in mock.get("steps", [])),
     "the mock job runs scripts/test")

ext = jobs.get("external", {})
dbs = ext.get("strategy", {}).get("matrix", {}).get("db", [])
images = [d.get("image", "") for d in dbs]
for want in ("mysql:8.0", "mysql:8.4", "mariadb:10.6", "mariadb:11.4"):
    need(want in images, f"the external matrix has {want} (has {images})")
for d in dbs:
    args = d.get("args", "")
    need("--log-bin" in args and "--server-id" in args,
         f"{d.get('name')}: the binary log on and a server_id (args: {args})")
need(any("kafka" in k for k in ext.get("strategy", {}).get("matrix", {}).get("kafka", [])),
     "the external matrix has a Kafka image")

runs = "\n".join(str(s.get("run", "")) for s in ext.get("steps", []))
set_vars = set(re.findall(r"-e\s+(OUTBOX_TEST_[A-Z_]+)=", runs))
need("OUTBOX_TEST_MYSQL_HOST" in set_vars, "the external job sets OUTBOX_TEST_MYSQL_HOST")
need("OUTBOX_TEST_KAFKA_BOOTSTRAP" in set_vars, "the external job sets OUTBOX_TEST_KAFKA_BOOTSTRAP")
need("scripts/test" in runs, "the external job runs scripts/test")

read = set()
for path in glob.glob(os.path.join(root, "tests/support/*.cc")) + [
        os.path.join(root, "tests/main.cc"), os.path.join(root, "scripts/test")]:
    read |= set(re.findall(r"OUTBOX_TEST_[A-Z_]+", open(path, encoding="utf-8").read()))
for v in sorted(set_vars - read):
    problems.append(f"the workflow sets {v}, which no test reads")

for p in problems:
    print(f"FAIL  {p}")
print(f"check_workflow: {'FAILED' if problems else 'OK'} ({len(dbs)} databases, "
      f"variables {sorted(set_vars)})")
sys.exit(1 if problems else 0)
