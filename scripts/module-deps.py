#!/usr/bin/env python3
"""The import graph between lockbench's top-level modules, and its circles.

Reads every src/**/*.rs, takes the module a file belongs to (src/<module>/... or
src/<module>.rs) and the top-level modules it names through `crate::<module>` paths
(`use crate::x::...`, `crate::x::f()`, grouped `use crate::{x::A, y}`), comments and string
literals left out. Prints the pairs of modules that import each other, the groups in which
every module reaches every other (strongly connected), and the elementary circles.

    scripts/module-deps.py            # the summary
    scripts/module-deps.py --edges    # also every edge with the files behind it
    scripts/module-deps.py --without chaos:runner   # as if that edge were gone

The test `layering_tests` (src/layering_tests.rs) keeps the results layer importing only
downward and fails on any circle; this script is for reading the whole picture.
"""

import argparse
import re
import sys
from pathlib import Path


def strip(src: str) -> str:
    """The source without comments, string and char literals (what is left is code)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        raw = re.match(r'r(#*)"', src[i : i + 12])
        if raw and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = '"' + raw.group(1)
            j = src.find(end, i + len(raw.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
            continue
        c = src[i]
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            out.append('""')
            continue
        if c == "'":
            ch = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", src[i : i + 14])
            if ch:
                i += len(ch.group(0))
                out.append("' '")
                continue
        out.append(c)
        i += 1
    return "".join(out)


def group_heads(code: str, start: int) -> list:
    """The first name of each item of the `{...}` group opening at `code[start]`."""
    depth, items, cur = 0, [], ""
    for c in code[start:]:
        if c == "{":
            depth += 1
            if depth == 1:
                continue
        elif c == "}":
            depth -= 1
            if depth == 0:
                items.append(cur)
                break
        elif c == "," and depth == 1:
            items.append(cur)
            cur = ""
            continue
        if depth >= 1:
            cur += c
    return [m.group(1) for m in (re.match(r"\s*(\w+)", it) for it in items) if m]


def graph(src: Path):
    """Top-level modules, and {(from, to): files} for every import between two of them."""
    mods = {p.name for p in src.iterdir() if p.is_dir()}
    mods |= {p.stem for p in src.glob("*.rs") if p.stem not in ("lib", "main")}
    edges = {}
    for f in sorted(src.rglob("*.rs")):
        rel = f.relative_to(src).parts
        top = rel[0] if len(rel) > 1 else f.stem
        if top not in mods:
            continue
        code = strip(f.read_text())
        for m in re.finditer(r"\bcrate\s*::\s*(\{|\w+)", code):
            heads = group_heads(code, m.start(1)) if m.group(1) == "{" else [m.group(1)]
            for to in heads:
                if to in mods and to != top:
                    edges.setdefault((top, to), set()).add(str(f.relative_to(src.parent)))
    return mods, edges


def components(mods, adj):
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(mods):
        if v not in index:
            visit(v)
    return sorted(out)


def circles(mods, adj):
    """Every elementary circle, each once, starting at its smallest module."""
    found = []

    def walk(start, v, path, seen):
        for w in sorted(adj.get(v, ())):
            if w == start:
                found.append(list(path))
            elif w > start and w not in seen:
                seen.add(w)
                path.append(w)
                walk(start, w, path, seen)
                path.pop()
                seen.discard(w)

    for s in sorted(mods):
        walk(s, s, [s], {s})
    return sorted(found, key=lambda c: (len(c), c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=str(Path(__file__).resolve().parent.parent / "src"))
    ap.add_argument("--edges", action="store_true", help="print every edge and its files")
    ap.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="FROM:TO",
        help="leave this edge out (to see what else a circle rests on)",
    )
    ap.add_argument("--most", type=int, default=20, help="circles to list (default 20)")
    a = ap.parse_args()

    mods, edges = graph(Path(a.src))
    for w in a.without:
        frm, _, to = w.partition(":")
        if edges.pop((frm, to), None) is None:
            sys.exit(f"--without {w}: no such edge (give FROM:TO, e.g. chaos:runner)")
    adj = {}
    for frm, to in edges:
        adj.setdefault(frm, set()).add(to)

    if a.edges:
        for (frm, to), files in sorted(edges.items()):
            print(f"{frm} -> {to}: {' '.join(sorted(files))}")
        print()
    pairs = sorted((x, y) for (x, y) in edges if x < y and (y, x) in edges)
    print(f"{len(pairs)} pairs of top-level modules import each other")
    for x, y in pairs:
        print(f"  {x} <-> {y}   ({min(edges[(x, y)])}; {min(edges[(y, x)])})")
    groups = components(mods, adj)
    print(f"{len(groups)} groups in which every module reaches every other")
    for g in groups:
        print(f"  {' '.join(g)}")
    found = circles(mods, adj)
    print(f"{len(found)} elementary circles" + (f", the {a.most} shortest:" if 0 < a.most < len(found) else ""))
    for c in found[: a.most]:
        print("  " + " -> ".join(c + [c[0]]))


if __name__ == "__main__":
    main()
