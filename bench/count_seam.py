"""How much product there is, and how much of it reaches into BokehJS's internals (issue 28).

    .venv/bin/python bench/count_seam.py [--ref REF ...] [--out FILE]

Counts, in this tree (and at each git REF, from `git archive`):
* product lines: the lines of app/, core/, widgets/ and static/ (not bench/, tests/, nor static/lab/'s run
  data), by kind of file;
* the private BokehJS names the product uses, in every .js of static/ and every .py of app/ and widgets/
  (JavaScript in Python strings counts too):
  - modules: a BokehJS module reached with Bokeh.require (its public API is the `Bokeh` object alone), or
    named to the seam's replace();
  - replaced: a member of a BokehJS class replaced by the product (a patch);
  - members: a member read or called whose name BokehJS keeps private: it starts with "_" and is BokehJS's
    own (found in BokehJS's type declarations), or it is declared protected or private there and public
    nowhere.
A name is counted once per file; the totals count each name once. BokehJS's declarations are the ones
installed with bokeh (bokeh/server/static/js/lib/**/*.d.ts).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("app", "core", "widgets", "static")
SKIP = ("static/lab/",)  # the lab's shipped runs: data, not code
KINDS = {".py": "Python", ".js": "JavaScript", ".css": "CSS"}

MODULES = (
    re.compile(r"""\brequire\(\s*["']([A-Za-z][\w/-]*)["']\s*\)"""),
    re.compile(r"""\breplace\(\s*["']([\w/]+)["'],"""),  # replace(module, Class, method)
)
REPLACED = (
    # replace(module, Class, method)
    re.compile(r"""\breplace\(\s*(?:["'][\w/]+["']|\w+),\s*["'](\w+)["'],\s*["'](\w+)["']"""),
    re.compile(r"\b(?:proto|doc)\.(\w+)\s*=[^=]"),  # proto.m = ..., doc.m = ...
    re.compile(r"""defineProperty\(\s*proto,\s*["'](\w+)["']"""),
)
MEMBER = re.compile(r"\.(\w+)\b")
# Names BokehJS keeps private that are also the DOM's or the product's own (`window.history`; a field of a
# plain object the seam keeps): counted nowhere.
NOT_BOKEHS = {"history", "extent"}


def bokehjs_names() -> tuple[set[str], set[str]]:
    """BokehJS's own member names that start with "_", and those declared protected or private and public
    nowhere, from its type declarations."""
    import bokeh

    lib = Path(bokeh.__file__).parent / "server" / "static" / "js" / "lib"
    declared = re.compile(r"^\s+((?:(?:public|protected|private|static|readonly|abstract|get|set)\s+)*)"
                          r"(\w+)\s*[(:?<]", re.M)
    underscored, hidden, public = set(), set(), set()
    for path in lib.rglob("*.d.ts"):
        for modifiers, name in declared.findall(path.read_text()):
            if name.startswith("_"):
                underscored.add(name)
            elif "protected" in modifiers or "private" in modifiers:
                hidden.add(name)
            else:
                public.add(name)
    return underscored, hidden - public


def product_files(root: Path) -> list[Path]:
    files = []
    for top in PRODUCT:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and path.suffix in KINDS and not rel.startswith(SKIP):
                files.append(path)
    return files


def lines(root: Path) -> Counter:
    counts = Counter()
    for path in product_files(root):
        counts[KINDS[path.suffix]] += len(path.read_text().splitlines())
    return counts


def private_names(root: Path) -> dict[str, set[str]]:
    """Each product file that uses a private BokehJS name → those names ("module:…", "replaced:…",
    "member:…")."""
    underscored, hidden = bokehjs_names()
    found: dict[str, set[str]] = {}
    for path in product_files(root):
        if path.suffix not in (".js", ".py") or path.parts[-2] == "core":
            continue
        text = path.read_text()
        if path.suffix == ".py":
            if "Bokeh" not in text:
                continue  # Python that holds no BokehJS code
            text = "\n".join(strings(text))  # the JavaScript it may hold is in its strings
        names = {f"module:{m}" for pattern in MODULES for m in pattern.findall(text)}
        for pattern in REPLACED:
            for match in pattern.findall(text):
                names.add("replaced:" + (".".join(match) if isinstance(match, tuple) else match))
        for member in set(MEMBER.findall(text)):
            if (member in underscored or member in hidden) and member not in NOT_BOKEHS:
                names.add(f"member:{member}")
        if names:
            found[path.relative_to(root).as_posix()] = names
    return found


def strings(source: str) -> list[str]:
    """The string literals of a Python source, f-strings aside (their expressions are Python)."""
    import io
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [tok.string for tok in tokens if tok.type == tokenize.STRING and "f" not in tok.string[:3].lower()]


def count(root: Path) -> dict:
    found = private_names(root)
    every = set().union(*found.values()) if found else set()
    kinds = Counter(name.split(":")[0] for name in every)
    return {
        "lines": lines(root),
        "files_reaching_in": sorted(found),
        "private": len(every),
        "modules": kinds["module"],
        "replaced": kinds["replaced"],
        "members": kinds["member"],
        "names": sorted(every),
    }


def tree_at(ref: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def table(results: dict[str, dict]) -> str:
    heads = list(results)
    rows = [
        ("product lines (Python + JavaScript + CSS)", lambda r: sum(r["lines"].values())),
        ("  Python", lambda r: r["lines"]["Python"]),
        ("  JavaScript", lambda r: r["lines"]["JavaScript"]),
        ("  CSS", lambda r: r["lines"]["CSS"]),
        ("private BokehJS names used", lambda r: r["private"]),
        ("  BokehJS modules reached with Bokeh.require", lambda r: r["modules"]),
        ("  BokehJS members replaced (patches)", lambda r: r["replaced"]),
        ("  private members read or called", lambda r: r["members"]),
        ("product files that use them", lambda r: len(r["files_reaching_in"])),
    ]
    out = ["| | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(heads)]
    for title, get in rows:
        out.append(f"| {title} | " + " | ".join(str(get(results[h])) for h in heads) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", action="append", default=[], help="also count at this git ref (before)")
    ap.add_argument("--names", action="store_true", help="list the names and the files that use them")
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for ref in args.ref:
            folder = Path(tmp) / ref.replace("/", "_")
            folder.mkdir()
            results[ref] = count(tree_at(ref, folder))
        results["this tree"] = count(ROOT)
    print(table(results))
    if args.names:
        for head, r in results.items():
            print(f"\n{head}: {', '.join(r['files_reaching_in'])}\n  " + "\n  ".join(r["names"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
