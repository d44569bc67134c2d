#!/usr/bin/env python3
"""Runs numpy's, scipy's and scikit-learn's own tests of eigh/eigvalsh/svd
from the INSTALLED packages twice, without and with ``eigenflow.patch()``
(``python -m eigenflow.patch -m pytest``), and compares test by test: every
test that passes unpatched must pass patched (issue 66). Prints, per suite,
the pass counts of both runs and the calls eigenflow served and delegated
(with the reasons); exits 1 if a test passes only unpatched.

    python scripts/patched-suites.py            # the three suites in full
    python scripts/patched-suites.py --fast     # the CI subset (< 1 min)
    python scripts/patched-suites.py --timing   # and the per-call speed rule

``--timing`` (by hand, not in CI: it measures) also times every call
eigenflow serves in more than 50 ms against the original function on the
same arguments (``scripts/patched_call_timing.py``, a pytest plugin) and
lists the calls more than 10% slower patched: issue 66's rule.

Run it with the Python that has eigenflow, pytest, numpy, scipy,
scikit-learn and hypothesis (numpy's test configuration imports it)
installed, e.g. .ci/.venv/bin/python.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

# (name, pytest arguments, part of --fast)
SUITES = [
    (
        "numpy linalg (eigh, eigvalsh, svd classes)",
        ["--pyargs", "numpy.linalg.tests.test_linalg", "-k", "TestSVD or TestEigvalsh or TestEigh"],
        True,
    ),
    (
        "scipy decomp (TestEigh, TestSVD_GESDD, TestSVD_GESVD, TestSVDVals)",
        [
            "--pyargs",
            "scipy.linalg.tests.test_decomp",
            "-k",
            "TestEigh or TestSVD_GESDD or TestSVD_GESVD or TestSVDVals",
        ],
        True,
    ),
    (
        "scikit-learn kernel PCA, truncated SVD",
        [
            "--pyargs",
            "sklearn.decomposition.tests.test_kernel_pca",
            "sklearn.decomposition.tests.test_truncated_svd",
        ],
        True,
    ),
    ("scikit-learn PCA", ["--pyargs", "sklearn.decomposition.tests.test_pca"], False),
]


def outcomes(junit: str) -> dict:
    """test id -> "passed" / "failed" / "skipped" from pytest's JUnit XML."""
    result = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            result[tid] = "failed"
        elif "skipped" in tags:
            result[tid] = "skipped"
        else:
            result[tid] = "passed"
    return result


#: The per-call rule of ``--timing``: a served call may take at most this
#: multiple of the original's time.
SLOWER_ALLOWED = 1.10


def run(args, patched: bool, tmp: str, python: str, timing: bool = False):
    """One pytest run: (outcomes, report dict or None, timed calls or None)."""
    junit = os.path.join(tmp, f"junit-{int(patched)}.xml")
    report = os.path.join(tmp, "report.json")
    timings = os.path.join(tmp, "timing.json")
    env = dict(os.environ)
    cmd = [python]
    if patched:
        cmd += ["-m", "eigenflow.patch", "--quiet", "--json", report]
    cmd += ["-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    if patched and timing:
        cmd += ["-p", "patched_call_timing"]
        here = os.path.dirname(os.path.abspath(__file__))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
        env["EIGENFLOW_CALL_TIMING"] = timings
    cmd += args
    # From a neutral directory, so that the installed packages are tested.
    subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = rows = None
    if patched:
        with open(report) as f:
            rep = json.load(f)
    if patched and timing:
        with open(timings) as f:
            rows = json.load(f)
    return outcomes(junit), rep, rows


def print_timing(rows: list) -> int:
    """Prints the timed calls' summary and each violation of the rule;
    returns the number of violations."""
    timed = [r for r in rows if r["eigenflow_s"] > 0.05]
    slow = [r for r in timed if r["eigenflow_s"] > SLOWER_ALLOWED * r["original_s"]]
    print(
        f"   calls served above 50 ms: {len(timed)} ({len(rows) - len(timed)} more only at "
        f"their first run), more than 10% slower than the original: {len(slow)}"
    )
    for r in sorted(timed, key=lambda r: r["original_s"] / r["eigenflow_s"]):
        mark = "SLOWER" if r in slow else "ok    "
        print(
            f"     {mark} {r['original_s'] / r['eigenflow_s']:5.2f}x  eigenflow "
            f"{r['eigenflow_s'] * 1e3:7.1f} ms, original {r['original_s'] * 1e3:7.1f} ms  "
            f"{r['function']}({r['call']})  [{r['test']}]"
        )
    return len(slow)


def count(out: dict, what: str) -> int:
    return sum(1 for v in out.values() if v == what)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fast", action="store_true", help="the CI subset")
    p.add_argument("--python", default=sys.executable, help="the Python to run pytest with")
    p.add_argument("--timing", action="store_true", help="also check the per-call speed rule")
    opts = p.parse_args()
    broken = slow = 0
    total_served = total_delegated = 0
    for name, args, fast in SUITES:
        if opts.fast and not fast:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            before, _, _ = run(args, False, tmp, opts.python)
            after, rep, rows = run(args, True, tmp, opts.python, opts.timing)
        lost = sorted(t for t, v in before.items() if v == "passed" and after.get(t) != "passed")
        served, delegated = rep["served"], rep["delegated"]
        total_served += served
        total_delegated += delegated
        share = 100.0 * served / max(served + delegated, 1)
        print(f"== {name}")
        print(
            f"   unpatched: {count(before, 'passed')} passed, {count(before, 'failed')} failed, "
            f"{count(before, 'skipped')} skipped"
        )
        print(
            f"   patched:   {count(after, 'passed')} passed, {count(after, 'failed')} failed, "
            f"{count(after, 'skipped')} skipped"
        )
        print(f"   calls: {served} served, {delegated} delegated ({share:.1f}% served)")
        for row in rep["delegated_by_reason"]:
            print(f"     delegated {row['calls']:6d}  {row['function']}: {row['reason']}")
        for t in lost:
            print(f"   PASSES ONLY UNPATCHED: {t}")
        if rows is not None:
            slow += print_timing(rows)
        broken += len(lost)
    share = 100.0 * total_served / max(total_served + total_delegated, 1)
    print(f"all suites: {total_served} served, {total_delegated} delegated ({share:.1f}% served)")
    if broken:
        print(f"{broken} test(s) pass unpatched but not patched")
        return 1
    print("no test that passes unpatched fails patched")
    if opts.timing:
        print(f"{slow} served call(s) above 50 ms more than 10% slower than the original")
    return 0


if __name__ == "__main__":
    sys.exit(main())
