#!/usr/bin/env bash
# The outbox table's DDL exists once, in sql/t_outbox.sql (README "The outbox table"):
#   - the file is one `create table t_outbox (...)` statement with the README "The outbox table"
#     columns and indexes;
#   - the README shows exactly that file;
#   - no other file of the repository carries a copy (scripts/lib/mariadb.sh
#     reads the file, the tests and tools compile it in via outbox_ddl.h, the
#     compose demo mounts it into MySQL's init directory).
#
# Usage: tests/ops/check_ddl.sh          Exit 0 ok, 1 a problem (printed).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
  mapfile -t files < <(find . \( -name .git -o -name 'build*' \) -prune -o -type f -print | sed 's#^\./##')
fi
python3 - "${files[@]}" <<'PY'
import re, sys
files = sys.argv[1:]
errors = []
ddl = open("sql/t_outbox.sql", encoding="utf-8").read()
if not ddl.startswith("create table t_outbox (\n") or not ddl.rstrip().endswith(");"):
    errors.append("sql/t_outbox.sql: want one 'create table t_outbox (...);' statement")
for needle in ("id bigint primary key", "payload json not null", "status varchar(16) not null",
               "unique key uk_event_key (event_key)", "key idx_status_retry (status, next_retry_at)"):
    if needle not in ddl:
        errors.append(f"sql/t_outbox.sql: lacks '{needle}' (README, The outbox table)")
readme = open("README.md", encoding="utf-8").read()
blocks = re.findall(r"```sql\n(create table t_outbox \(.*?)```", readme, re.S)
if blocks != [ddl]:
    errors.append("README.md: its `create table t_outbox` block must be sql/t_outbox.sql verbatim")
# A copy of the DDL: a CREATE TABLE with the contract's key and columns
# (the inbox's tables share some columns, not the status).
# (Variants that differ on purpose, like the partitioned table of
# docs/CONFIG.md with its (id, created_at) key, are not copies.)
copy = re.compile(r"create\s+table[^;]*?id\s+bigint\s+primary\s+key[^;]*?"
                  r"aggregate_type\s+varchar\s*\(\s*32\s*\)[^;]*?"
                  r"status\s+varchar\s*\(\s*16\s*\)", re.I | re.S)
for path in files:
    if path in ("sql/t_outbox.sql", "README.md") or path.startswith("tests/ops/check_ddl"):
        continue
    try:
        text = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        continue
    if copy.search(text):
        errors.append(f"{path}: carries a copy of the outbox DDL; use sql/t_outbox.sql "
                      "(shell: scripts/lib/mariadb.sh; C++: outbox_ddl.h)")
compose = open("deploy/compose/docker-compose.yml", encoding="utf-8").read()
if "../../sql/t_outbox.sql:/docker-entrypoint-initdb.d/" not in compose:
    errors.append("deploy/compose/docker-compose.yml: mysql must mount ../../sql/t_outbox.sql into /docker-entrypoint-initdb.d/")
for e in errors:
    print(f"FAIL  {e}")
print(f"checked {len(files)} files: {'ok' if not errors else str(len(errors)) + ' problem(s)'}")
sys.exit(1 if errors else 0)
PY
