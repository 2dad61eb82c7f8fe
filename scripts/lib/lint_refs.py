#!/usr/bin/env python3
"""scripts/lint's "refs" check: every reference to a doc or a file, in a doc
or in a comment, resolves. Prints one line per broken reference, "refs:
FILE:LINE: what", for the files given (repository paths).

  - `X.md "Section"` (also `docs/X.md, "Section"`, `[X.md](X.md) "Section"`
    and `README "Section"`): X.md has a heading with that text (backquotes
    and case aside; a heading may go on after the section, as in "Wake-up:
    binlog" for "Wake-up");
  - `X.md#anchor`: X.md has a heading whose GitHub anchor that is;
  - a document named alone (`DESIGN.md`, `SPEC §3`, `SPEC "Reload"`): it
    is in the repository (the product's own contract lives in README and
    docs/, not in a document a reader of the repository cannot open);
  - a repository path (src/..., docs/..., scripts/..., tests/..., ...; a
    glob such as src/binlog/binlog_streams.* too): the file or folder exists,
    from the root or, in code, from src/ (its include root) or the file's
    own folder; `deploy/NAME` that is no folder is kubectl's Deployment.
A section is a heading ("### 1. The outbox table" answers to "The outbox
table") or a list item led by a bold name ("- **Pass and cursor.**").

In Markdown every line counts, except fenced code blocks' command lines; in
code only comments (//, /* */, and # in scripts, CMake and YAML) do.
"""
import glob
import os
import re
import sys

ROOT = os.getcwd()
TOP = ("src", "tests", "tools", "bench", "examples", "scripts", "docs", "deploy",
       "packaging", "systemd", "sql", "config", ".ci", ".github")
PATH_RE = re.compile(r"(?<![\w./<>$-])((?:%s)/[\w./*+-]*[\w*/])" % "|".join(re.escape(t) for t in TOP))
SECTION_RE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*(?:[A-Z][A-Z0-9_]*\.md|README))`?(?:\]\([^)]*\))?\)?,? \"([^\"$\n]+)\"")
ANCHOR_RE = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)#([\w-]+)")
# A document by its name alone, and the outside SPEC by section.
DOC_RE = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9_]*\.md)\b")
SPEC_RE = re.compile(r"\bSPEC(?:\.md)?(?= ?§| \"| section\b)")
# kubectl's short form of a Deployment (`kubectl port-forward deploy/NAME`).
K8S_RESOURCE = re.compile(r"deploy/[\w-]+")
HASH_COMMENT = (".sh", ".py", ".pl", ".yaml", ".yml", ".txt", ".cmake", ".service", ".gp", ".in",
                ".conf", ".toml", "Dockerfile")

_headings = {}


def headings(md):
    if md not in _headings:
        hs, fence = [], False
        with open(md, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                elif not fence and re.match(r"#{1,6} ", line):
                    hs.append(line.lstrip("#").strip())
                elif not fence and re.match(r"\s*[-*] \*\*[^*]+\*\*", line):
                    # A list item led by a bold name ("- **Pass and cursor.**")
                    # is a section too (not an anchor).
                    hs.append("**" + re.match(r"\s*[-*] \*\*([^*]+)\*\*", line).group(1))
        _headings[md] = hs
    return _headings[md]


def norm(text):
    text = re.sub(r"^\d+\. ", "", text.replace("`", "").strip())
    return text.rstrip(".").lower()


def slug(heading):
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def find_md(name, src):
    name = name if name.endswith(".md") else name + ".md"
    for base in (os.path.dirname(src), "docs", "."):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None


def path_exists(path, src):
    path = path.rstrip(".")
    bases = [".", os.path.dirname(src)]
    if not src.endswith(".md"):
        bases.append("src")
    for base in bases:
        p = os.path.normpath(os.path.join(base, path))
        if glob.glob(p) or os.path.exists(p):
            return True
    return False


def comment_text(path, text):
    """The comments of a code file, other characters blanked (newlines kept)."""
    hash_style = path.endswith(HASH_COMMENT) or os.path.basename(path) in (
        "CMakeLists.txt", "Dockerfile") or text.startswith("#!")
    if hash_style:
        out = []
        for line in text.split("\n"):
            m = re.search(r"(?:^|\s)#(?![!{])", line)
            out.append(" " * m.start() + line[m.start():] if m else "")
        return "\n".join(out)
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    keep = []
    pos = 0
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', text, re.S):
        keep.append(re.sub(r"[^\n]", " ", text[pos:m.start()]))
        keep.append(m.group(0) if not m.group(0).startswith('"') else blank(m))
        pos = m.end()
    keep.append(re.sub(r"[^\n]", " ", text[pos:]))
    return "".join(keep)


def markdown_text(text):
    """Markdown without the command lines of its fenced code blocks."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
            out.append("")
        else:
            out.append("" if fence and not line.lstrip().startswith("#") else line)
    return "\n".join(out)


def check(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    body = markdown_text(text) if path.endswith(".md") else comment_text(path, text)
    problems = []
    for n, line in enumerate(body.split("\n"), 1):
        for m in SECTION_RE.finditer(line):
            md = find_md(m.group(1), path)
            want = norm(m.group(2))
            if md is None:
                problems.append((n, "%s: no such document" % m.group(1)))
            elif not any(norm(h.lstrip("*")) == want or (norm(h).startswith(want) and
                                                          not norm(h)[len(want)].isalnum())
                         for h in headings(md)):
                problems.append((n, '%s has no section "%s"' % (md, m.group(2))))
        for m in ANCHOR_RE.finditer(line):
            md = find_md(m.group(1), path)
            if md is None:
                problems.append((n, "%s: no such document" % m.group(1)))
            elif m.group(2) not in {slug(h) for h in headings(md) if not h.startswith("**")}:
                problems.append((n, "%s has no anchor #%s" % (md, m.group(2))))
        for m in DOC_RE.finditer(line):
            if find_md(m.group(1), path) is None and not os.path.exists(m.group(1)):
                problems.append((n, "%s: no such document in the repository" % m.group(1)))
        for m in SPEC_RE.finditer(line):
            problems.append((n, "SPEC: not a document of the repository; name the README or "
                                "docs/ section that says it"))
        for m in PATH_RE.finditer(line):
            if K8S_RESOURCE.fullmatch(m.group(1)) and not os.path.exists(m.group(1)):
                continue
            if not path_exists(m.group(1), path):
                problems.append((n, "%s: no such file or folder" % m.group(1)))
    for n, what in problems:
        print("refs: %s:%d: %s" % (path, n, what))


for f in sys.argv[1:]:
    check(f)
