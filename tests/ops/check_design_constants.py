#!/usr/bin/env python3
"""Holds every constant docs/DESIGN.md and docs/BINLOG.md quote to the code.

A quoted value is marked in the doc right after it, invisibly:

    ... a pass older than 10 s<!-- const: kMaxPassAge 10 s --> ends ...

`<!-- const: [FILE:]NAME VALUE -->`: NAME is a constant of src/ (FILE, a
path from the repository's root, when the name is defined in more than one
file), VALUE what the doc says: a number, a duration (`31.75 ms`, `1 s`),
or a list with one unit (`0.25, 0.5, 1, 2, 4, 8, 16 ms`). `sum:NAME` is the
sum of a list. The check fails when the code's value differs, when the name
is not found (or found twice), or when the prose before the marker does not
say VALUE: a doc that changes the number and not the marker, or the code
that changes and not the doc, fails the suite.

Usage: check_design_constants.py [--self-test] [REPO]
Exit 0 when every marked value holds, 1 naming each that does not.
"""
import pathlib
import re
import sys

DOCS = ("docs/DESIGN.md", "docs/BINLOG.md")
MARKER = re.compile(r"<!-- const: (\S+) (.+?) -->")
UNITS_US = {"us": 1, "ms": 1000, "s": 1000000, "min": 60000000}
TYPE_UNITS = {"microseconds": "us", "milliseconds": "ms", "seconds": "s", "minutes": "min"}
PROSE_WINDOW = 240  # characters before a marker that must say its value


def parse_doc_value(text):
    """'31.75 ms' -> [31750.0] (microseconds); '64' -> [64.0]; lists keep order."""
    m = re.fullmatch(r"([\d.,\s]+?)\s*(us|ms|s|min)?", text.strip())
    if not m:
        raise ValueError(f"cannot read the value {text!r}")
    scale = UNITS_US[m.group(2)] if m.group(2) else 1
    return [float(n) * scale for n in re.split(r",\s*", m.group(1).strip())]


_TEXTS = {}


def sources(src):
    """Every .h and .cc under src/, comments removed (read once)."""
    if src not in _TEXTS:
        _TEXTS[src] = [(p, re.sub(r"//[^\n]*", "", p.read_text(errors="replace")))
                       for p in sorted(src.rglob("*")) if p.suffix in (".h", ".cc")]
    return _TEXTS[src]


def definitions(src, name):
    """(file, declaration text) for every definition of `name` in src/."""
    use = re.compile(r"\b" + re.escape(name) + r"\s*(?:=(?!=)|\{|\()")
    found = []
    for path, text in sources(src):
        for m in use.finditer(text):
            start = max(text.rfind(c, 0, m.start()) for c in ";{}") + 1
            end = text.find(";", m.end())
            d = text[start:end + 1]
            if "constexpr" in d or re.search(r"\bstd::chrono::\w+\s+" + name + r"\b", d):
                found.append((path, d))
    return found


def code_value(decl, name, resolve):
    """The value a declaration gives `name`, as doc values are read."""
    m = re.search(r"\b" + re.escape(name) + r"\s*(=|\{|\()", decl)
    body = decl[m.end():].strip().rstrip(";").strip()
    if m.group(1) != "=":
        body = body[:-1].strip()  # the closing } or )
    items = re.findall(r"(microseconds|milliseconds|seconds|minutes)\((\d+)\)", body)
    if items:  # a list of durations
        return [float(n) * UNITS_US[TYPE_UNITS[u]] for u, n in items]
    unit = next((TYPE_UNITS[t] for t in TYPE_UNITS if re.search(r"\b" + t + r"\b", decl)), None)
    suffix = re.search(r"[a-z](S|Ms|Us)$", name)  # kSessionWaitTimeoutS: seconds
    if unit is None and suffix:
        unit = {"S": "s", "Ms": "ms", "Us": "us"}[suffix.group(1)]
    expr = re.sub(r"\b(k\w+)\.size\(\)", lambda k: str(len(resolve(k.group(1)))), body)
    expr = re.sub(r"static_cast<\w+>", "", expr)
    expr = re.sub(r"\b(k\w+)\b", lambda k: str(resolve(k.group(1))[0]), expr)
    if not re.fullmatch(r"[\d\s.+*/()-]+", expr):
        raise ValueError(f"cannot evaluate {body!r}")
    value = float(eval(expr))  # digits and arithmetic only (checked above)
    return [value * UNITS_US[unit]] if unit else [value]


def check(repo, docs_text=None):
    src = repo / "src"
    problems = []

    def resolve(ref):
        file, _, name = ref.rpartition(":")
        defs = definitions(src, name)
        if file:
            defs = [d for d in defs if d[0] == repo / file]
        if len(defs) != 1:
            where = ", ".join(str(p.relative_to(repo)) for p, _ in defs) or "nowhere"
            raise ValueError(f"{name} is defined in {where}: name exactly one (FILE:NAME)")
        return code_value(defs[0][1], name, resolve)

    for doc in DOCS:
        text = docs_text[doc] if docs_text else (repo / doc).read_text()
        for m in MARKER.finditer(text):
            ref, said = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            prose = re.sub(r"[`\s]+", " ", text[max(0, m.start() - PROSE_WINDOW):m.start()])
            if re.sub(r"\s+", " ", said) not in prose:
                problems.append(f"{doc}:{line}: the text before the marker does not say {said!r}")
            try:
                code = resolve(ref[len("sum:"):] if ref.startswith("sum:") else ref)
                if ref.startswith("sum:"):
                    code = [sum(code)]
                if [round(v, 6) for v in code] != [round(v, 6) for v in parse_doc_value(said)]:
                    problems.append(f"{doc}:{line}: {ref} is not {said} in the code")
            except ValueError as e:
                problems.append(f"{doc}:{line}: {ref}: {e}")
    return problems


def self_test(repo):
    """A changed number in the doc, and a name the code lacks, must be caught."""
    texts = {doc: (repo / doc).read_text() for doc in DOCS}
    first = MARKER.search(texts[DOCS[0]])
    if not first:
        return ["self-test: docs/DESIGN.md has no marker"]
    failures = []
    wrong = dict(texts)
    value = first.group(2)
    wrong[DOCS[0]] = texts[DOCS[0]].replace(first.group(0), f"<!-- const: {first.group(1)} 999 -->", 1)
    if not check(repo, wrong):
        failures.append("self-test: a marker whose value differs from the code passed")
    unknown = dict(texts)
    unknown[DOCS[0]] = texts[DOCS[0]].replace(
        first.group(0), f"{value}<!-- const: kNoSuchConstantAnywhere {value} -->", 1)
    if not check(repo, unknown):
        failures.append("self-test: a marker naming no constant passed")
    return failures


def main(argv):
    args = [a for a in argv[1:] if a != "--self-test"]
    repo = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parents[2])
    problems = check(repo)
    if "--self-test" in argv:
        problems += self_test(repo)
    for p in problems:
        print(p)
    count = sum(len(MARKER.findall((repo / d).read_text())) for d in DOCS)
    print(f"{count} marked constants, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
