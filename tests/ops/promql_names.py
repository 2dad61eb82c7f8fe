#!/usr/bin/env python3
"""Metric names used by PromQL expressions, and the names docs/METRICS.md lists.

Standard library only. Used by check_dashboard.sh and check_rules.sh.

    promql_names.py dashboard DASHBOARD.json METRICS.md [--exprs-out FILE]
    promql_names.py rules RULES.yml METRICS.md
    promql_names.py names 'EXPR'            # prints the names, one a line

`dashboard` and `rules` exit 0 when every queried metric is listed in
METRICS.md (a histogram's _bucket/_sum/_count series count as the histogram),
1 otherwise, 2 on unusable input. `--exprs-out` writes every dashboard
expression, Grafana variables replaced by neutral values, one per line, so a
caller can have promtool parse them.
"""
import json
import re
import sys

KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
    "group_right", "bool", "offset", "atan2", "inf", "nan",
}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Series Prometheus makes itself; allowed in alert rules, not in the dashboard.
SYNTHETIC = {"up", "ALERTS", "ALERTS_FOR_STATE", "scrape_duration_seconds",
             "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
             "scrape_series_added"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_COMMENT = re.compile(r"#[^\n]*")
_IDENT = re.compile(r"(?<![\w.:$])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()")


def metric_names(expr):
    """Returns the set of metric names an expression selects."""
    s = _STRING.sub('""', expr)          # label values, regexes
    s = _COMMENT.sub(" ", s)
    s = _GRAFANA_VAR.sub(" ", s)         # $service, ${__rate_interval}, [[var]]
    s = _MATCHERS.sub(" ", s)            # {service=~""}
    s = _RANGE.sub(" ", s)               # [5m], [15m:1m]
    s = _GROUPING.sub(" ", s)            # by (service, le)
    names = set()
    for m in _IDENT.finditer(s):
        tok = m.group(1)
        if tok.lower() in KEYWORDS:
            continue
        names.add(tok)
    return names


def markdown_tables(path):
    """METRICS.md's tables: (header, cells) for each body row, in order.

    `header` is the lower-cased first cell of the row's table header ("metric"
    for the relay's metrics, "consumer metric" for the example inbox
    consumer's, "reason" for the failure reasons); `cells` are the row's
    stripped cells.
    """
    rows = []
    header = None  # first header cell of the table being read, or None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells[0].lower()
                continue
            rows.append((header, cells))
    return rows


def documented_names(path, header):
    """{name: cells} of the rows of `header` tables whose first cell is a
    name in backticks (a separator row is not)."""
    out = {}
    for h, cells in markdown_tables(path):
        m = re.fullmatch(r"`([A-Za-z_:][\w:]*)`", cells[0])
        if h == header and m:
            out[m.group(1)] = cells
    return out


def documented_metrics(path, headers=("metric",)):
    """Names in backticks in the first column of METRICS.md's metric tables.

    A metric table is a markdown table whose header's first cell is one of
    `headers`: "metric" for the relay's own, "consumer metric" for the
    example inbox consumer's (served by another process); other tables (the
    `reason` values, say) do not declare metrics.
    """
    names = set()
    for h in headers:
        names |= set(documented_names(path, h))
    return names


def is_documented(name, documented):
    if name in documented:
        return True
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in documented:
            return True
    return False


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def dashboard_exprs(dash):
    """(where, expr) for every PromQL expression of a Grafana dashboard."""
    out = []
    for i, node in enumerate(_walk(dash.get("panels", []))):
        if isinstance(node.get("expr"), str) and node["expr"].strip():
            out.append((f"panel target {node.get('refId', i)}", node["expr"]))
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var.get("query")
        if isinstance(q, dict):
            q = q.get("query", "")
        q = (q or "").strip()
        where = f"variable ${var.get('name')}"
        m = re.fullmatch(r"label_values\s*\((.*),\s*[\w]+\s*\)", q, re.S)
        if m:
            out.append((where, m.group(1)))
            continue
        m = re.fullmatch(r"query_result\s*\((.*)\)", q, re.S)
        if m:
            out.append((where, m.group(1)))
            continue
        # label_values(label), label_names(), metrics(regex): no metric selected.
    return out


def neutral(expr):
    """A dashboard expression with Grafana variables replaced, for promtool."""
    expr = re.sub(r"\$\{?__(rate_)?interval(_ms)?\}?", "5m", expr)
    expr = re.sub(r"\$\{?__range(_s|_ms)?\}?", "1h", expr)
    return _GRAFANA_VAR.sub(".*", expr)


def report(where_exprs, documented, allow=frozenset()):
    bad = 0
    used = set()
    for where, expr in where_exprs:
        for name in sorted(metric_names(expr)):
            used.add(name)
            if name in allow or is_documented(name, documented):
                continue
            print(f"NOT IN METRICS.md: {name} (in {where}: {expr.strip()})")
            bad += 1
    return bad, used


def main(argv):
    if len(argv) >= 2 and argv[0] == "names":
        for n in sorted(metric_names(argv[1])):
            print(n)
        return 0
    if len(argv) < 3 or argv[0] not in ("dashboard", "rules"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, path, metrics_md = argv[0], argv[1], argv[2]
    # Rules may alert on a fleet's and the example consumer's metrics too;
    # the dashboard shows the relay's.
    documented = documented_metrics(
        metrics_md,
        ("metric", "fleet metric", "consumer metric") if mode == "rules" else ("metric",))
    if not documented:
        print(f"{metrics_md}: no metric names found in its tables", file=sys.stderr)
        return 2
    if mode == "dashboard":
        try:
            with open(path, encoding="utf-8") as f:
                dash = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 2
        exprs = dashboard_exprs(dash)
        allow = frozenset()
        if "--exprs-out" in argv:
            with open(argv[argv.index("--exprs-out") + 1], "w", encoding="utf-8") as f:
                for _, e in exprs:
                    f.write(" ".join(neutral(e).split()) + "\n")
    else:
        try:
            import yaml  # PyYAML; only needed for this mode
        except ImportError:
            print("SKIP: PyYAML not available, rule metric names not cross-checked "
                  "(apt-get install python3-yaml)")
            return 77
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        exprs = [(f"rule {r.get('alert') or r.get('record')}", str(r["expr"]))
                 for g in doc.get("groups", []) for r in g.get("rules", [])]
        allow = SYNTHETIC
    if not exprs:
        print(f"{path}: no PromQL expressions found", file=sys.stderr)
        return 2
    bad, used = report(exprs, documented, allow)
    print(f"{path}: {len(exprs)} expressions, {len(used)} metric names, {bad} not in {metrics_md}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
