"""Runs a script or a module with :func:`eigenflow.patch` in effect, then
prints :func:`eigenflow.patch_report` to stderr::

    python -m eigenflow.patch script.py [args ...]
    python -m eigenflow.patch -m pytest --pyargs sklearn.decomposition [...]

Options before the script or ``-m``: ``--quiet`` (no report), ``--json
PATH`` (the report also written to ``PATH`` as JSON, for scripts).

This file is the command line only: the function is ``eigenflow.patch``
(import it from ``eigenflow``, not from this module).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from typing import List, Optional

_USAGE = (
    "usage: python -m eigenflow.patch [--quiet] [--json PATH] (script.py | -m module) [args ...]"
)


def _parse(argv: List[str]):
    quiet, json_path = False, None
    while argv and argv[0] in ("--quiet", "--json"):
        flag = argv.pop(0)
        if flag == "--quiet":
            quiet = True
        elif argv:
            json_path = argv.pop(0)
        else:
            raise SystemExit(_USAGE)
    if not argv or argv[0] in ("-h", "--help"):
        raise SystemExit(_USAGE)
    if argv[0] == "-m":
        if len(argv) < 2:
            raise SystemExit(_USAGE)
        return quiet, json_path, argv[1], None, argv[1:]
    return quiet, json_path, None, argv[0], argv


def _report(quiet: bool, json_path: Optional[str]) -> None:
    import eigenflow

    report = eigenflow.patch_report()
    if not quiet:
        print(report, file=sys.stderr)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report.as_dict(), f, indent=1)


def main(argv: Optional[List[str]] = None) -> None:
    """The command line: patch, run the script or module as ``__main__``
    with its arguments in ``sys.argv``, report (also when it exits or
    raises)."""
    import eigenflow

    quiet, json_path, module, script, args = _parse(list(sys.argv[1:] if argv is None else argv))
    eigenflow.patch()
    sys.argv = args
    try:
        if module is not None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    finally:
        _report(quiet, json_path)


if __name__ == "__main__":
    main()
