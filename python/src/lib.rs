//! `eigenflow._eigenflow`: the native half of the Python package
//! (`python/eigenflow/__init__.py` is the public half: numpy's names, named
//! tuples, dtype handling and argument checks). Every function here takes
//! float32 or float64 arrays (`eigh` also complex64 and complex128: the
//! Hermitian EVD), releases the GIL while it computes, and answers
//! Ctrl-C by cancelling the run (see [`run::run_graph`] and, for the
//! one-stage paths, [`run::run_stoppable`]). The path taken (one-stage or
//! task graph) depends on the order, the precision and the CPU only, never
//! on `trace=`: a traced call computes the same bits as an untraced one.

mod errors;
mod run;

use eigenflow::faer::complex::Complex;
use eigenflow::faer::{Mat, MatRef};
use eigenflow::pipeline::batched::{
    eigh_batched_graph, svd_batched_graph, BatchLayout, BatchRef, BatchedOptions,
};
use eigenflow::pipeline::evd::{evd_graph, EvdJob};
use eigenflow::pipeline::hermitian::{heevd_graph, HeevdGraph};
use eigenflow::pipeline::svd::svd_graph;
use eigenflow::pipeline::sygv::{sygv_graph, GeneralizedOptions, Problem, SygvGraph};
use eigenflow::pipeline::{EvdOptions, SvdJob, SvdOptions};
use eigenflow::{Scalar, Selection, Side};
use errors::to_py;
use numpy::{Element, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::path::PathBuf;

/// A faer view of a 2-D numpy array, with its strides (any order, any sign):
/// no copy.
///
/// # Safety
/// The view borrows `a`'s buffer: it must not outlive `a` (the caller keeps
/// the readonly borrow for the whole call).
fn view<'a, T: Element>(a: &'a PyReadonlyArray2<'_, T>) -> MatRef<'a, T> {
    let v = a.as_array();
    let (m, n) = v.dim();
    let s = v.strides();
    // SAFETY: `as_ptr` is element [0, 0] of an ndarray view whose shape and
    // element strides are those given, all inside the borrowed buffer.
    unsafe { MatRef::from_raw_parts(v.as_ptr(), m, n, s[0], s[1]) }
}

/// The columns of `m` one after another (column-major), with the GIL held
/// or not: the one copy between faer's matrix and numpy's buffer.
fn col_major<T: Copy>(m: &Mat<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(m.nrows() * m.ncols());
    for j in 0..m.ncols() {
        out.extend_from_slice(m.col_as_slice(j));
    }
    out
}

/// Orders below which a one-stage EVD runs inline (a few milliseconds: no
/// thread start, and Ctrl-C waits for it); from there it runs as a
/// stoppable task ([`run::run_stoppable`]).
const INLINE_BELOW: usize = 256;

/// Flat column-major buffer of a result matrix as a 1-D array (numpy owns the
/// `Vec`, no copy); the Python side reshapes it in Fortran order (a view).
type Flat<'py, T> = Bound<'py, PyArray1<T>>;

#[allow(clippy::type_complexity)]
fn eigh_impl<'py, T: Scalar + Element>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, T>,
    lower: bool,
    vectors: bool,
    selection: Option<Selection>,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<(Flat<'py, T>, Option<Flat<'py, T>>)> {
    let rt = run::runtime(py, threads)?;
    let mut opts = EvdOptions::auto();
    opts.side = if lower { Side::Lower } else { Side::Upper };
    opts.selection = selection;
    let job = if vectors {
        EvdJob::Vectors
    } else {
        EvdJob::Values
    };
    let n = a.shape()[0];
    let mat = view(&a);
    let (values, z) = if opts.one_stage_for::<T>(n, job) {
        // Below the crate's crossover: the one-stage path (whether traced
        // or not: its phases go to the trace). Tiny orders run inline;
        // larger ones as a stoppable task with a copy of the matrix, so that
        // Ctrl-C returns at once and the solve stops at its next phase.
        let r = if n < INLINE_BELOW {
            py.detach(|| {
                run::traced(trace.as_deref(), || {
                    eigenflow::pipeline::eigh(mat, job, &opts, rt)
                })
            })
            .map_err(|e| to_py(py, e))?
        } else {
            let owned = py.detach(|| mat.to_owned());
            run::run_stoppable(py, rt, move || {
                run::traced(trace.as_deref(), || {
                    eigenflow::pipeline::eigh_owned(owned, job, &opts, rt)
                })
            })?
        };
        (r.values, r.vectors)
    } else {
        // The graph works on its own copy of the triangle read.
        let (graph, slot) = py
            .detach(|| evd_graph(mat, job, &opts))
            .map_err(|e| to_py(py, e))?
            .into_parts();
        run::run_graph(py, rt, graph, trace)?;
        slot.into_results().map_err(|e| to_py(py, e))?
    };
    let z = z.map(|z| py.detach(|| col_major(&z)));
    Ok((
        PyArray1::from_vec(py, values),
        z.map(|z| PyArray1::from_vec(py, z)),
    ))
}

#[allow(clippy::type_complexity)]
fn svd_impl<'py, T: Scalar + Element>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, T>,
    compute_uv: bool,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<(Flat<'py, T>, Option<(Flat<'py, T>, Flat<'py, T>)>)> {
    let rt = run::runtime(py, threads)?;
    let job = if compute_uv {
        SvdJob::Vectors
    } else {
        SvdJob::Values
    };
    let mat = view(&a);
    let opts = SvdOptions::auto();
    let (m, n) = (mat.nrows(), mat.ncols());
    let (s, u, vt) = if opts.one_stage_for::<T>(m, n, job) {
        // Below the crate's crossover: the one-stage path, traced or not, as
        // for eigh (inline when small, else a stoppable task with a copy).
        let r = if m.min(n) < INLINE_BELOW {
            py.detach(|| {
                run::traced(trace.as_deref(), || {
                    eigenflow::pipeline::svd(mat, job, &opts, rt)
                })
            })
            .map_err(|e| to_py(py, e))?
        } else {
            let owned = py.detach(|| mat.to_owned());
            run::run_stoppable(py, rt, move || {
                run::traced(trace.as_deref(), || {
                    eigenflow::pipeline::svd(owned.as_ref(), job, &opts, rt)
                })
            })?
        };
        (r.values, r.u, r.vt)
    } else {
        let (graph, slot) = py
            .detach(|| svd_graph(mat, job, &opts))
            .map_err(|e| to_py(py, e))?
            .into_parts();
        run::run_graph(py, rt, graph, trace)?;
        slot.into_results().map_err(|e| to_py(py, e))?
    };
    let uv = match (u, vt) {
        (Some(u), Some(vt)) => {
            let (u, vt) = py.detach(|| (col_major(&u), col_major(&vt)));
            Some((PyArray1::from_vec(py, u), PyArray1::from_vec(py, vt)))
        }
        _ => None,
    };
    Ok((PyArray1::from_vec(py, s), uv))
}

/// `data` (a contiguous numpy stack) as `batch` matrices of `m x n`, each
/// row-major or column-major, borrowed for the duration of a graph run.
///
/// # Safety
/// The graph's tasks borrow the numpy buffer through the returned view. The
/// caller keeps `data` (the readonly borrow, holding a reference to the
/// array) until it returns, and runs the graph with `run_graph`, which
/// returns only after the run ended and its graph was dropped (on success,
/// error, cancel, and by its guard on unwinding), so no task reads the
/// buffer after the borrow ends.
unsafe fn stack_view<'py, T: Scalar + Element>(
    py: Python<'py>,
    data: &PyReadonlyArray1<'py, T>,
    (batch, m, n): (usize, usize, usize),
    row_major: bool,
) -> PyResult<BatchRef<'static, T>> {
    let slice = data.as_slice()?;
    // SAFETY: see the function's contract.
    let slice: &'static [T] = unsafe { std::slice::from_raw_parts(slice.as_ptr(), slice.len()) };
    let layout = if row_major {
        BatchLayout::RowMajor
    } else {
        BatchLayout::ColMajor
    };
    BatchRef::new(slice, batch, m, n, layout).map_err(|e| to_py(py, e))
}

#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn batched_impl<'py, T: Scalar + Element>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, T>,
    batch: usize,
    m: usize,
    n: usize,
    row_major: bool,
    compute_uv: bool,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<(Flat<'py, T>, Option<(Flat<'py, T>, Flat<'py, T>)>)> {
    let rt = run::runtime(py, threads)?;
    // SAFETY: `data` lives until this function returns, after `run_graph`.
    let batch = unsafe { stack_view(py, &data, (batch, m, n), row_major)? };
    let job = if compute_uv {
        SvdJob::Vectors
    } else {
        SvdJob::Values
    };
    let mut g = eigenflow::graph::TaskGraph::new();
    let h = py
        .detach(|| svd_batched_graph(&mut g, batch, job, &BatchedOptions::default()))
        .map_err(|e| to_py(py, e))?;
    run::run_graph(py, rt, g, trace)?;
    let r = h
        .collect()
        .and_then(|r| r.into_result())
        .map_err(|e| to_py(py, e))?;
    let uv = match (r.u, r.vt) {
        (Some(u), Some(vt)) => Some((PyArray1::from_vec(py, u), PyArray1::from_vec(py, vt))),
        _ => None,
    };
    Ok((PyArray1::from_vec(py, r.values), uv))
}

/// The batched EVD of a contiguous stack of `batch` symmetric `n x n`
/// matrices, the lower triangle of each read in the given layout (the
/// Python side passes the other layout to read the upper triangle: the
/// lower triangle of the transpose).
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn batched_eigh_impl<'py, T: Scalar + Element>(
    py: Python<'py>,
    data: PyReadonlyArray1<'py, T>,
    batch: usize,
    n: usize,
    row_major: bool,
    vectors: bool,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<(Flat<'py, T>, Option<Flat<'py, T>>)> {
    let rt = run::runtime(py, threads)?;
    // SAFETY: `data` lives until this function returns, after `run_graph`.
    let batch = unsafe { stack_view(py, &data, (batch, n, n), row_major)? };
    let job = if vectors {
        EvdJob::Vectors
    } else {
        EvdJob::Values
    };
    let mut g = eigenflow::graph::TaskGraph::new();
    let h = py
        .detach(|| eigh_batched_graph(&mut g, batch, job, &BatchedOptions::default()))
        .map_err(|e| to_py(py, e))?;
    run::run_graph(py, rt, g, trace)?;
    let r = h
        .collect()
        .and_then(|r| r.into_result())
        .map_err(|e| to_py(py, e))?;
    Ok((
        PyArray1::from_vec(py, r.values),
        r.vectors.map(|v| PyArray1::from_vec(py, v)),
    ))
}

/// `(w, v)` of the generalized problem of `a` and `b` (same dtype, the
/// triangle `lower` says read of both; `v` None without vectors), always as
/// one task graph (`pipeline::sygv`: Cholesky of `b`, the reduction to the
/// standard problem, the EVD, the back-substitution).
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn eigh_generalized_impl<'py, T: Scalar + Element>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, T>,
    b: PyReadonlyArray2<'py, T>,
    lower: bool,
    vectors: bool,
    problem: Problem,
    selection: Option<Selection>,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<(Flat<'py, T>, Option<Flat<'py, T>>)> {
    let rt = run::runtime(py, threads)?;
    let mut opts = GeneralizedOptions::new(problem);
    opts.evd.side = if lower { Side::Lower } else { Side::Upper };
    opts.evd.selection = selection;
    let job = if vectors {
        EvdJob::Vectors
    } else {
        EvdJob::Values
    };
    let (ma, mb) = (view(&a), view(&b));
    // The graph works on its own copies of the triangles read.
    let SygvGraph { graph, results } = py
        .detach(|| sygv_graph(ma, mb, job, &opts))
        .map_err(|e| to_py(py, e))?;
    run::run_graph(py, rt, graph, trace)?;
    let (values, z) = results.into_results().map_err(|e| to_py(py, e))?;
    let z = z.map(|z| py.detach(|| col_major(&z)));
    Ok((
        PyArray1::from_vec(py, values),
        z.map(|z| PyArray1::from_vec(py, z)),
    ))
}

/// Dispatches a call on the dtype of its array argument: float64 or float32
/// (the Python side converts or rejects the others).
macro_rules! by_dtype {
    ($py:expr, $arr:expr, |$a:ident: $ty:ident| $body:expr) => {{
        if let Ok($a) = $arr.extract::<$ty<'_, f64>>() {
            $body.into_pyobject($py).map(|o| o.into_any().unbind())
        } else if let Ok($a) = $arr.extract::<$ty<'_, f32>>() {
            $body.into_pyobject($py).map(|o| o.into_any().unbind())
        } else {
            Err(pyo3::exceptions::PyValueError::new_err(
                "expected a float32 or float64 numpy array of the right dimension",
            ))
        }
    }};
}

/// The crate's selection of the Python side's arguments. numpy/scipy's
/// subset_by_index is inclusive: `(lo, hi)` is the half-open `lo..hi + 1` of
/// the crate (checked by the Python side: `lo <= hi < n`). A value range is
/// the crate's half-open `[lo, hi)` (the Python side maps scipy's `(lo, hi]`
/// onto it); the two never come together.
fn selection_of(
    subset: Option<(usize, usize)>,
    value_range: Option<(f64, f64)>,
) -> Option<Selection> {
    match (subset, value_range) {
        (_, Some((lo, hi))) => Some(Selection::Value(lo, hi)),
        (Some((lo, hi)), None) => Some(Selection::Index(lo..hi.saturating_add(1))),
        (None, None) => None,
    }
}

/// `(w, v)` of the symmetric `a` (`v` None without vectors); the flat
/// column-major `v` is reshaped by the Python side. `subset` is an inclusive
/// index range, `value_range` the crate's half-open `[lo, hi)`; at most one
/// is given.
#[pyfunction]
#[pyo3(signature = (a, lower, vectors, subset, threads, trace, value_range=None))]
#[allow(clippy::too_many_arguments)]
fn eigh(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    lower: bool,
    vectors: bool,
    subset: Option<(usize, usize)>,
    threads: Option<i64>,
    trace: Option<PathBuf>,
    value_range: Option<(f64, f64)>,
) -> PyResult<Py<PyAny>> {
    let selection = selection_of(subset, value_range);
    // Complex Hermitian input (complex128, complex64): real w, complex v.
    if let Ok(x) = a.extract::<PyReadonlyArray2<'_, Complex<f64>>>() {
        let r = eigh_complex_impl(py, x, lower, vectors, selection, threads, trace)?;
        return r.into_pyobject(py).map(|o| o.into_any().unbind());
    }
    if let Ok(x) = a.extract::<PyReadonlyArray2<'_, Complex<f32>>>() {
        let r = eigh_complex_impl(py, x, lower, vectors, selection, threads, trace)?;
        return r.into_pyobject(py).map(|o| o.into_any().unbind());
    }
    by_dtype!(py, a, |x: PyReadonlyArray2| eigh_impl(
        py,
        x,
        lower,
        vectors,
        selection.clone(),
        threads,
        trace.clone()
    )?)
}

/// `(w, v)` of the generalized problem (`problem_type` 1, 2 or 3: scipy's
/// `type`) of `a` and `b`, both float64 or both float32 (the Python side
/// converts them to one dtype); selections as for [`eigh`].
#[pyfunction]
#[pyo3(signature = (a, b, lower, vectors, problem_type, subset, threads, trace, value_range=None))]
#[allow(clippy::too_many_arguments)]
fn eigh_generalized(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    lower: bool,
    vectors: bool,
    problem_type: u8,
    subset: Option<(usize, usize)>,
    threads: Option<i64>,
    trace: Option<PathBuf>,
    value_range: Option<(f64, f64)>,
) -> PyResult<Py<PyAny>> {
    let problem = Problem::from_type(problem_type).map_err(|e| to_py(py, e))?;
    let selection = selection_of(subset, value_range);
    if let (Ok(x), Ok(y)) = (
        a.extract::<PyReadonlyArray2<'_, f64>>(),
        b.extract::<PyReadonlyArray2<'_, f64>>(),
    ) {
        let r =
            eigh_generalized_impl(py, x, y, lower, vectors, problem, selection, threads, trace)?;
        return r.into_pyobject(py).map(|o| o.into_any().unbind());
    }
    if let (Ok(x), Ok(y)) = (
        a.extract::<PyReadonlyArray2<'_, f32>>(),
        b.extract::<PyReadonlyArray2<'_, f32>>(),
    ) {
        let r =
            eigh_generalized_impl(py, x, y, lower, vectors, problem, selection, threads, trace)?;
        return r.into_pyobject(py).map(|o| o.into_any().unbind());
    }
    Err(pyo3::exceptions::PyValueError::new_err(
        "expected two float32 or two float64 numpy matrices",
    ))
}

/// `(w, v)` of the complex Hermitian `a` (`c64` or `c32`, `R` its real
/// type): `w` real, `v` complex (flat column-major, None without vectors),
/// through the crate's Hermitian graph (`pipeline::hermitian`), run
/// stoppably (Ctrl-C cancels it).
#[allow(clippy::type_complexity)]
fn eigh_complex_impl<'py, R>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, Complex<R>>,
    lower: bool,
    vectors: bool,
    selection: Option<Selection>,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<(Flat<'py, R>, Option<Flat<'py, Complex<R>>>)>
where
    R: Scalar + Element,
    Complex<R>: Element,
{
    let rt = run::runtime(py, threads)?;
    let mut opts = EvdOptions::auto();
    opts.side = if lower { Side::Lower } else { Side::Upper };
    opts.selection = selection;
    let job = if vectors {
        EvdJob::Vectors
    } else {
        EvdJob::Values
    };
    let mat = view(&a);
    // The graph works on its own copy of the triangle read.
    let HeevdGraph { graph, results } = py
        .detach(|| heevd_graph(mat, job, &opts))
        .map_err(|e| to_py(py, e))?;
    run::run_graph(py, rt, graph, trace)?;
    let (values, z) = results.into_results().map_err(|e| to_py(py, e))?;
    let z = z.map(|z| py.detach(|| col_major(&z)));
    Ok((
        PyArray1::from_vec(py, values),
        z.map(|z| PyArray1::from_vec(py, z)),
    ))
}

/// `(s, (u, vt))` of `a` (`(u, vt)` None without vectors), flat column-major.
#[pyfunction]
#[pyo3(signature = (a, compute_uv, threads, trace))]
fn svd(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    compute_uv: bool,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<Py<PyAny>> {
    by_dtype!(py, a, |x: PyReadonlyArray2| svd_impl(
        py,
        x,
        compute_uv,
        threads,
        trace.clone()
    )?)
}

/// `(s, (u, vt))` of a contiguous batch: `data` holds `batch` matrices of
/// `m x n`, each row-major (C order) or column-major; results flat, each
/// matrix column-major, one after another.
#[pyfunction]
#[pyo3(signature = (data, batch, m, n, row_major, compute_uv, threads, trace=None))]
#[allow(clippy::too_many_arguments)]
fn batched_svd(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    batch: usize,
    m: usize,
    n: usize,
    row_major: bool,
    compute_uv: bool,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<Py<PyAny>> {
    by_dtype!(py, data, |x: PyReadonlyArray1| batched_impl(
        py,
        x,
        batch,
        m,
        n,
        row_major,
        compute_uv,
        threads,
        trace.clone()
    )?)
}

/// `(w, v)` of a contiguous batch of `batch` symmetric `n x n` matrices
/// (`v` None without vectors), each row-major or column-major, its lower
/// triangle read: `w` flat `batch x n`, `v` each matrix column-major one
/// after another. An error in one matrix names its index in the batch.
#[pyfunction]
#[pyo3(signature = (data, batch, n, row_major, vectors, threads, trace=None))]
#[allow(clippy::too_many_arguments)]
fn batched_eigh(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    batch: usize,
    n: usize,
    row_major: bool,
    vectors: bool,
    threads: Option<i64>,
    trace: Option<PathBuf>,
) -> PyResult<Py<PyAny>> {
    by_dtype!(py, data, |x: PyReadonlyArray1| batched_eigh_impl(
        py,
        x,
        batch,
        n,
        row_major,
        vectors,
        threads,
        trace.clone()
    )?)
}

#[pymodule]
fn _eigenflow(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(eigh, m)?)?;
    m.add_function(wrap_pyfunction!(eigh_generalized, m)?)?;
    m.add_function(wrap_pyfunction!(svd, m)?)?;
    m.add_function(wrap_pyfunction!(batched_svd, m)?)?;
    m.add_function(wrap_pyfunction!(batched_eigh, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
