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
- The job `image` builds the Dockerfile (`docker build` with every build
  argument the Dockerfile declares without a usable default: REVISION and
  CREATED, which fill the OCI labels revision and created), checks the
  labels, runs the image with `--version`, starts a container of it and runs
  `outbox-relay health` in it and waits for its HEALTHCHECK, checks that
  `health` exits 1 against a closed port, and stops it with SIGTERM
  expecting exit 0. The relay config it writes parses, listens on
  0.0.0.0:9464 and, given RELAY_BINARY, passes `outbox-relay check`.

Usage: check_workflow.py [REPO_ROOT [RELAY_BINARY]]     exit 0 ok, 1 a problem
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

# ------------------------------------------------------------------ image
img = jobs.get("image", {})
need(bool(img), "a job `image` builds and runs the container image")
img_runs = [str(st.get("run", "")) for st in img.get("steps", [])]
all_runs = "\n".join(img_runs)
flat = re.sub(r"\\\n\s*", " ", all_runs)
build = re.search(r"docker build\b([^\n]*)", flat)
need(build is not None, "the image job runs docker build")
tag = None
if build:
    t = re.search(r"-t\s+(\S+)", build.group(1))
    tag = t.group(1) if t else None
    need(tag is not None, "docker build tags the image (-t)")
    need(re.search(r"\s\.\s*$", build.group(1)) is not None,
         "docker build builds the repository's root (context `.`, the Dockerfile there)")
    passed = set(re.findall(r"--build-arg\s+([A-Z_]+)=", build.group(1)))
    dockerfile = open(os.path.join(root, "Dockerfile"), encoding="utf-8").read()
    declared = dict(re.findall(r"(?m)^ARG\s+([A-Z_]+)(?:=(.*))?$", dockerfile))
    for arg in ("REVISION", "CREATED"):
        need(arg in declared, f"the Dockerfile declares ARG {arg}")
        need(arg in passed, f"docker build passes --build-arg {arg} (its OCI label is empty otherwise)")
    for arg in sorted(passed - set(declared)):
        problems.append(f"docker build passes --build-arg {arg}, which the Dockerfile does not declare")
    need("org.opencontainers.image.created" in dockerfile
         and re.search(r'org\.opencontainers\.image\.created="\$\{CREATED\}"', dockerfile) is not None,
         "the Dockerfile's created label is the CREATED build argument")
if tag:
    t = re.escape(tag)
    need(re.search(rf"docker run\b[^\n]*\s{t}\s+--version\b", flat) is not None,
         f"the image job runs `docker run {tag} --version`")
    need(re.search(rf"docker run\s+-d\b[^\n]*\s{t}\s*$", flat, re.M) is not None,
         f"the image job starts a container of {tag} (docker run -d ... {tag})")
    need(re.search(r"docker exec\s+\S+\s+outbox-relay health\s*(&&|$)", flat, re.M) is not None,
         "the image job runs `outbox-relay health` in the running container")
    need("State.Health.Status" in flat and "healthy" in flat,
         "the image job waits for the image's HEALTHCHECK to report healthy")
    need(re.search(r"outbox-relay health --url \S+ \|\| rc=\$\?", flat) is not None
         and re.search(r'\[ "\$rc" -eq 1 \]', flat) is not None,
         "the image job checks that health exits 1 (never 2) when nothing answers")
    need(re.search(r"docker stop\b", flat) is not None and "State.ExitCode" in flat,
         "the image job stops the container and checks its exit code")
# The relay config the job writes (a heredoc ending in YAML).
cfg = re.search(r"cat > (\S+) <<'YAML'\n(.*?)\n\s*YAML\n", all_runs, re.S)
need(cfg is not None, "the image job writes the relay's config with a <<'YAML' heredoc")
if cfg:
    import textwrap
    text = textwrap.dedent(cfg.group(2))
    conf = yaml.safe_load(text)
    need((conf.get("http") or {}).get("listen") == "0.0.0.0:9464",
         "the container's config listens on 0.0.0.0:9464")
    need(re.search(rf'-v "\$PWD/{re.escape(cfg.group(1))}:/etc/outbox-relay/config.yaml:ro"', flat) is not None,
         "the container mounts that config at /etc/outbox-relay/config.yaml")
    relay = sys.argv[2] if len(sys.argv) > 2 else None
    if relay:
        import subprocess
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(text)
            f.flush()
            env = dict(os.environ)
            env.update({k: "unused" for k in re.findall(r"-e\s+([A-Z_]+)=", flat)})
            r = subprocess.run([relay, "check", "--config", f.name], capture_output=True, text=True, env=env)
        need(r.returncode == 0, f"outbox-relay check rejects the image job's config: {r.stdout}{r.stderr}")

for p in problems:
    print(f"FAIL  {p}")
print(f"check_workflow: {'FAILED' if problems else 'OK'} ({len(dbs)} databases, "
      f"variables {sorted(set_vars)})")
sys.exit(1 if problems else 0)
