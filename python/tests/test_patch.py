"""eigenflow.patch(): what it replaces, that unpatch() restores the very
objects, the bound-name case, thread safety, and the command line (issue 66)."""

import json
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.linalg as sl

import bound_before_patch as bound  # before any patch: binds the originals
import eigenflow
import eigenflow.numpy as enp
import eigenflow.scipy as esp
from eigenflow._report import reset_patch_report

ORIGINALS = [(np.linalg, n, f) for n, f in enp.ORIGINALS.items()] + [
    (sl, n, f) for n, f in esp.ORIGINALS.items()
]
BOUND = {"np_eigh": enp.ORIGINALS["eigh"], "svd": enp.ORIGINALS["svd"],
         "eigh": esp.ORIGINALS["eigh"], "my_svdvals": esp.ORIGINALS["svdvals"]}


@pytest.fixture(autouse=True)
def unpatched(monkeypatch):
    monkeypatch.delenv("EIGENFLOW_PATCH_STRICT", raising=False)
    eigenflow.unpatch()
    reset_patch_report()
    yield
    eigenflow.unpatch()


def assert_originals():
    for module, name, f in ORIGINALS:
        assert getattr(module, name) is f, (module.__name__, name)
    for name, f in BOUND.items():
        assert getattr(bound, name) is f, name


def assert_replaced():
    for module, name, f in ORIGINALS:
        repl = (enp if module is np.linalg else esp).REPLACEMENTS[name]
        assert getattr(module, name) is repl, (module.__name__, name)
    assert bound.np_eigh is enp.eigh and bound.svd is enp.svd
    assert bound.eigh is esp.eigh and bound.my_svdvals is esp.svdvals


def test_patch_replaces_and_unpatch_restores_identity():
    assert_originals()
    assert not eigenflow.is_patched()
    eigenflow.patch()
    assert eigenflow.is_patched()
    assert_replaced()
    eigenflow.patch()  # idempotent
    assert_replaced()
    eigenflow.unpatch()
    assert_originals()
    eigenflow.unpatch()
    assert_originals()


def test_defining_modules_keep_the_originals():
    from numpy.linalg import _linalg
    from scipy.linalg import _decomp

    with eigenflow.patched():
        assert _linalg.eigh is enp.ORIGINALS["eigh"]
        assert _decomp.eigh is esp.ORIGINALS["eigh"]


def test_a_name_bound_before_patch_is_served():
    a = np.diag([3.0, 1.0, 2.0])
    with eigenflow.patched():
        assert bound.top_eigenvalue(a) == 3.0
    r = eigenflow.patch_report()
    assert r.served == {"scipy.linalg.eigh": 1}
    assert_originals()


def test_patched_context_restores_the_state_it_found():
    with eigenflow.patched():
        assert_replaced()
        with eigenflow.patched():
            assert_replaced()
        assert_replaced()
    assert_originals()
    eigenflow.patch()
    with eigenflow.patched():
        assert_replaced()
    assert_replaced()


def test_overlapping_patched_blocks_across_threads():
    """The first block to open closes first: the patch stays until the
    second one closes."""
    inside = [threading.Event(), threading.Event()]
    leave = [threading.Event(), threading.Event()]

    def block(i):
        with eigenflow.patched():
            inside[i].set()
            leave[i].wait()

    threads = [threading.Thread(target=block, args=(i,)) for i in (0, 1)]
    threads[0].start()
    inside[0].wait()
    threads[1].start()
    inside[1].wait()
    leave[0].set()
    threads[0].join()
    assert_replaced()
    leave[1].set()
    threads[1].join()
    assert_originals()


def test_patch_is_thread_safe():
    barrier = threading.Barrier(8)
    errors = []

    def worker(i):
        try:
            barrier.wait()
            for _ in range(20):
                eigenflow.patch() if i % 2 else eigenflow.unpatch()
                np.linalg.eigvalsh(np.eye(3))  # whichever function is bound
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # Whatever the interleaving, the end state is whole: all or nothing.
    if eigenflow.is_patched():
        assert_replaced()
    eigenflow.unpatch()
    assert_originals()


def test_a_module_imported_while_patched_is_restored_by_unpatch(tmp_path, monkeypatch):
    (tmp_path / "late_binder.py").write_text("from scipy.linalg import svd\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with eigenflow.patched():
        import late_binder

        assert late_binder.svd is esp.svd
    assert late_binder.svd is esp.ORIGINALS["svd"]


def test_kernel_pca_runs_on_eigenflow():
    decomposition = pytest.importorskip("sklearn.decomposition")
    x = np.random.default_rng(0).standard_normal((60, 5))
    ref = decomposition.KernelPCA(n_components=3, eigen_solver="dense").fit_transform(x)
    with eigenflow.patched():
        got = decomposition.KernelPCA(n_components=3, eigen_solver="dense").fit_transform(x)
    assert eigenflow.patch_report().served.get("scipy.linalg.eigh", 0) >= 1
    # Components agree up to sign.
    np.testing.assert_allclose(np.abs(got), np.abs(ref), atol=1e-8)


def test_command_line_runs_a_script_patched(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import sys, numpy as np, eigenflow\n"
        "assert eigenflow.is_patched()\n"
        "assert sys.argv[1:] == ['x', '--y']\n"
        "np.linalg.svd(np.eye(4))\n"
        "np.linalg.eigh(np.ones((2, 2, 2), dtype=complex))\n"
    )
    out = tmp_path / "report.json"
    r = subprocess.run(
        [sys.executable, "-m", "eigenflow.patch", "--json", str(out), str(script), "x", "--y"],
        capture_output=True, text=True, check=True,
    )
    assert "1 served, 1 delegated" in r.stderr
    report = json.loads(out.read_text())
    assert report["served_by_function"] == {"numpy.linalg.svd": 1}
    assert report["delegated_by_reason"][0]["reason"].startswith("complex")


def test_command_line_runs_a_module_and_keeps_its_exit_status(tmp_path):
    (tmp_path / "failing_mod.py").write_text("raise SystemExit(3)\n")
    r = subprocess.run(
        [sys.executable, "-m", "eigenflow.patch", "--quiet", "-m", "failing_mod"],
        capture_output=True, text=True, cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(tmp_path) + ":" + ":".join(sys.path)},
    )
    assert r.returncode == 3 and r.stderr == ""
