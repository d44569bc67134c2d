#!/usr/bin/env python3
"""Which top-level module of src/ imports which, and the import circles.

    python3 scripts/module-imports.py

One line per top-level module of the crate (`src/<name>/` or `src/<name>.rs`):
`module -> the modules it imports`, then every circle among them (a set of
modules each reachable from every other, found as the strongly connected
components of the import graph), or `circles: none`.

What counts as an import: a path `crate::<module>` (also inside a
`use crate::{a, b::c}` group) in code, not in comments or doc comments, and
not in test code (files named tests.rs, *_tests.rs or under a tests/ folder,
and the lines of a file from an inline `#[cfg(test)] mod ... {` on, where
the test modules sit). Reads the text only.
"""
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def modules():
    names = {p.stem for p in SRC.iterdir() if (p.is_dir() or p.suffix == ".rs")}
    return sorted(names - {"lib", "main"})


def files_of(module):
    paths = []
    if (SRC / module).is_dir():
        paths += sorted((SRC / module).rglob("*.rs"))
    if (SRC / f"{module}.rs").is_file():
        paths.append(SRC / f"{module}.rs")
    test = re.compile(r"(^|/)tests(\.rs$|/)|_tests\.rs$")
    return [p for p in paths if not test.search(str(p.relative_to(SRC)))]


def imported(path, names):
    found = set()
    lines = path.read_text().splitlines()
    for no, line in enumerate(lines):
        if line.strip().startswith("#[cfg(test)]"):
            following = next((l for l in lines[no + 1 :] if l.strip()), "")
            if re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", following):
                break
        code = line.split("//", 1)[0]
        for group in re.findall(r"crate::\{([^}]*)", code):
            found |= {g.strip().split("::")[0] for g in group.split(",")}
        found |= set(re.findall(r"crate::([a-z_]+)", code))
    return found & names


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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

    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    names = set(modules())
    graph = {}
    for m in sorted(names):
        deps = set()
        for f in files_of(m):
            deps |= imported(f, names)
        graph[m] = sorted(deps - {m})
        print(f"{m} -> {' '.join(graph[m])}".rstrip())
    found = circles(graph)
    if not found:
        print("circles: none")
    for c in found:
        print("circle:", " ".join(c))


if __name__ == "__main__":
    main()
