#!/usr/bin/env python3
"""Lists the functions of src/ longer than a threshold, longest first.

    python3 scripts/long-functions.py [MIN_LINES] [PATH...]

A function's length is the count of lines from its `fn` line to its closing
brace. Braces inside strings, chars and comments are skipped; code in an inline
`#[cfg(test)] mod ... { }` (from there to the end of the file) or a test file (tests.rs, *_tests.rs, under tests/)
counts too (tests are functions as well), marked `test`.
Reads the text only: a macro that defines functions is not seen.
"""
import re
import sys
from pathlib import Path

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?fn\s+(\w+)")


def strip(line, state):
    """The line without strings, chars and comments; state carries block comments."""
    out, i = [], 0
    while i < len(line):
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"], i = False, j + 2
        elif line.startswith("//", i):
            break
        elif line.startswith("/*", i):
            state["block"], i = True, i + 2
        elif line[i] == '"':
            j = i + 1
            while j < len(line) and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            i = j + 1
        elif line[i] == "'" and re.match(r"'(\\.|[^\\'])'", line[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", line[i:]).group(0))
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def functions(path):
    lines = path.read_text().splitlines()
    in_test_file = bool(re.search(r"(^|/)tests(\.rs$|/)|_tests\.rs$", str(path)))
    state = {"block": False}
    test_from = None
    stack = []  # (name, start line, depth at which it opened)
    depth, found = 0, []
    pending = None
    for no, raw in enumerate(lines, 1):
        if test_from is None and raw.strip().startswith("#[cfg(test)]"):
            following = next((l for l in lines[no:] if l.strip()), "")
            if re.match(r"\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", following):
                test_from = no
        m = FN.match(raw)
        if m and not state["block"]:
            pending = (m.group(1), no)
        code = strip(raw, state)
        for ch in code:
            if ch == "{":
                if pending:
                    stack.append((pending[0], pending[1], depth))
                    pending = None
                depth += 1
            elif ch == "}":
                depth -= 1
                if stack and stack[-1][2] == depth:
                    name, start, _ = stack.pop()
                    test = in_test_file or (test_from is not None and start >= test_from)
                    found.append((no - start + 1, name, start, test))
            elif ch == ";" and pending:
                pending = None  # a declaration without a body
    return found


def main():
    args = sys.argv[1:]
    minimum = int(args.pop(0)) if args and args[0].isdigit() else 100
    roots = [Path(a) for a in args] or [Path(__file__).resolve().parent.parent / "src"]
    rows = []
    for root in roots:
        for path in sorted(root.rglob("*.rs") if root.is_dir() else [root]):
            for length, name, start, test in functions(path):
                if length >= minimum:
                    rows.append((length, f"{path}:{start}", name, "test" if test else ""))
    for length, where, name, test in sorted(rows, reverse=True):
        print(f"{length:5}  {where}  {name}  {test}".rstrip())
    print(f"{len(rows)} functions of {minimum} lines or more")


if __name__ == "__main__":
    main()
