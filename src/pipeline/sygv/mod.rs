//! The generalized symmetric-definite eigenproblem as one task graph: for
//! symmetric `A` and symmetric positive definite `B`,
//!
//! - type 1: `A x = λ B x`,
//! - type 2: `A B x = λ x`,
//! - type 3: `B A x = λ x`,
//!
//! by the Cholesky method of LAPACK `dsygv` (Golub and Van Loan, "Matrix
//! Computations", 4th ed., §8.7.2): [`potrf()`] factors `B = L L^T`, [`sygst()`]
//! forms the standard problem's `C = L^{-1} A L^{-T}` (type 1) or
//! `C = L^T A L` (types 2, 3), the EVD graph of [`crate::pipeline::evd`]
//! (sy2sb, sb2st, the tridiagonal solver or a [`Selection`], Q2 and Q1) solves
//! `C z = λ z`, and [`back_substitute()`] maps the eigenvectors back:
//! `X = L^{-T} Z` (types 1, 2) or `X = L Z` (type 3). The eigenvectors are
//! `B`-orthonormal for types 1 and 2 (`X^T B X = I`) and `B^{-1}`-orthonormal
//! for type 3 (`X^T B^{-1} X = I`), as LAPACK's.
//!
//! **Accuracy limit.** The method is backward stable for the pencil only when
//! `B` is well conditioned: the errors of `L^{-1}` enter `C` and `X`
//! amplified by up to `cond(B)`. With `cond(B)` up to about `1e3` the
//! backward error `||A x - λ B x|| / ((||A|| + |λ| ||B||) ||x||)` and the
//! `B`-orthogonality `||X^T B X - I|| / ||B||` stay a small multiple of
//! `n eps` (the tests check both below `30 n eps` from `n = 33` on; below,
//! the back-substitution's `O(eps sqrt(cond(B)))` does not shrink with `n`,
//! for LAPACK `dsygvd` as here). Beyond, both grow with `cond(B)`, as
//! LAPACK's do: at `n = 300` on dense `B` of `cond(B) = 1e8`, a
//! `B`-orthogonality ratio of about 5e4 and a worst type-1 backward error of
//! 149 (LAPACK through scipy, same pencil: 5e4 and 524). `docs/generalized.md`
//! has the measured table, the pencils and the test that keeps ours within
//! 3x LAPACK's.
//!
//! `potrf` and `sygst` are tile tasks (tiles of order
//! [`GeneralizedOptions::tile`]) whose edges follow from the tiles they read
//! and write (one [`Flow`] for both, so a `sygst` task waits only for the
//! tiles of `L` it reads); the EVD starts when `C` is complete (its
//! reduction does not yet take `C` tile by tile); the back-substitution is
//! one task per column block. `C` is not scaled into the safe range as the
//! standard problem's input is (its entries exist only at run time): a `C`
//! that overflows is an error.
//!
//! ```
//! use eigenflow::faer::Mat;
//! let n = 4;
//! let a = Mat::<f64>::from_fn(n, n, |i, j| if i == j { 2.0 } else { -1.0 });
//! let b = Mat::<f64>::from_fn(n, n, |i, j| if i == j { 4.0 } else { 0.0 });
//! let eig = eigenflow::eigh_generalized(&a, &b)?;
//! // A x = λ B x with B = 4 I: the eigenvalues of A over 4.
//! let plain = eigenflow::eigvalsh(&a)?;
//! assert!((0..n).all(|j| (eig.values[j] - plain[j] / 4.0).abs() < 1e-14));
//! let x = eig.vectors.col(0);
//! let r = &a * x - (&b * x) * eig.values[0];
//! assert!(r.norm_max() < 1e-13);
//! # Ok::<(), eigenflow::Error>(())
//! ```

mod back_substitute;
mod potrf;
mod sygst;
#[cfg(test)]
mod tests;

pub use back_substitute::back_substitute;
pub use potrf::{potrf, Cholesky};
pub use sygst::{sygst, Standard};

use crate::graph::{Flow, TaskGraph};
use crate::pipeline::evd::{self, side, EvdJob, EvdOptions, EvdValues, Selection};
use crate::runtime::{RunOptions, RunReport, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};

/// Stage name of the Cholesky factorization of `B`.
pub const POTRF: &str = "potrf";
/// Stage name of the reduction to the standard problem.
pub const SYGST: &str = "sygst";
/// Stage name of the back-substitution of the eigenvectors.
pub const BACK: &str = "sygv.back";

/// Which generalized problem (LAPACK's `itype`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Problem {
    /// Type 1: `A x = λ B x`.
    #[default]
    AxLambdaBx,
    /// Type 2: `A B x = λ x`.
    ABxLambdaX,
    /// Type 3: `B A x = λ x`.
    BAxLambdaX,
}

impl Problem {
    /// The problem of LAPACK's (and scipy's) `itype`/`type` 1, 2 or 3.
    pub fn from_type(t: u8) -> Result<Self> {
        match t {
            1 => Ok(Problem::AxLambdaBx),
            2 => Ok(Problem::ABxLambdaX),
            3 => Ok(Problem::BAxLambdaX),
            _ => Err(Error::InvalidArgument(format!(
                "generalized problem type {t} (1, 2 or 3)"
            ))),
        }
    }
}

/// Options of the generalized problem: its type and the options of the
/// standard EVD that solves `C z = λ z` (its [`EvdOptions::selection`]
/// selects eigenpairs of the pencil, its [`EvdOptions::side`] says which
/// triangle of both `A` and `B` is read).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GeneralizedOptions {
    /// Which problem.
    pub problem: Problem,
    /// Options of the standard EVD of `C`.
    pub evd: EvdOptions,
    /// Order of the tiles of `potrf` and `sygst` (at least 1; the last tile
    /// row and column may be smaller). Default [`DEFAULT_TILE`].
    pub tile: usize,
}

/// The default [`GeneralizedOptions::tile`]: tiles whose GEMMs run near the
/// kernel's peak on one thread, few enough tasks at the orders where the
/// graph pays (4,096 tile tasks or so at `n = 4096`).
pub const DEFAULT_TILE: usize = 256;

impl Default for GeneralizedOptions {
    fn default() -> Self {
        GeneralizedOptions {
            problem: Problem::default(),
            evd: EvdOptions::auto(),
            tile: DEFAULT_TILE,
        }
    }
}

/// The tiles of an order-`n` matrix: `count()` tile rows (and columns) of
/// `nb` rows, the last one shorter when `nb` does not divide `n`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tiles {
    n: usize,
    nb: usize,
}

impl Tiles {
    fn new(n: usize, tile: usize) -> Self {
        Tiles { n, nb: tile.max(1) }
    }

    fn nb(&self) -> usize {
        self.nb
    }

    fn count(&self) -> usize {
        self.n.div_ceil(self.nb)
    }

    /// Rows (or columns) of tile `k`.
    fn range(&self, k: usize) -> std::ops::Range<usize> {
        k * self.nb..((k + 1) * self.nb).min(self.n)
    }
}

impl GeneralizedOptions {
    /// Options for `problem`, the EVD's automatic defaults.
    pub fn new(problem: Problem) -> Self {
        GeneralizedOptions {
            problem,
            ..Self::default()
        }
    }

    /// These options with `selection`.
    pub fn with_selection(mut self, selection: Selection) -> Self {
        self.evd.selection = Some(selection);
        self
    }
}

/// Result of [`eigh_generalized`].
#[derive(Debug)]
#[non_exhaustive]
pub struct GeneralizedEigen<T> {
    /// Eigenvalues, ascending.
    pub values: Vec<T>,
    /// Eigenvectors (column `j` belongs to `values[j]`), for
    /// [`EvdJob::Vectors`].
    pub vectors: Option<Mat<T>>,
    /// The run's timings.
    pub report: RunReport,
}

/// The graph of one generalized problem and where its results land.
pub struct SygvGraph<T> {
    /// The task graph; run it with any [`Runtime`].
    pub graph: TaskGraph<'static>,
    /// Where the results land (read them after the run).
    pub results: EvdValues<T>,
}

/// Builds the graph of the generalized problem of `a` and `b` (see the module
/// documentation); neither is modified (the graph works on copies).
///
/// Errors: [`Error::Shape`] for a non-square `a` or a `b` of another shape,
/// [`Error::NonFinite`] naming the first non-finite entry read of `a`,
/// [`Error::InvalidArgument`] naming that of `b`, or for a selection that does
/// not fit. A `b` that is not positive definite is found in the run:
/// [`Error::NotPositiveDefinite`] (wrapped in [`Error::TaskFailed`] of the
/// `potrf` task; [`eigh_generalized`] unwraps it).
pub fn sygv_graph<T: Scalar>(
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    job: EvdJob,
    opts: &GeneralizedOptions,
) -> Result<SygvGraph<T>> {
    check_inputs(a, b, &opts.evd)?;
    let side = opts.evd.side;
    let n = a.nrows();
    let (a, b) = (side::lower_copy(a, side), side::lower_copy(b, side));
    let anrm = magnitude_estimate(a.as_ref(), b.as_ref(), opts.problem);
    let (mut g, mut flow) = (TaskGraph::new(), Flow::new());
    let chol = potrf(&mut g, &mut flow, b, opts.tile)?;
    let c = sygst(&mut g, &mut flow, a, &chol, opts.problem)?;
    let evd = evd::build_after(g, c.c.clone(), c.task(), anrm, job, &opts.evd)?;
    let (mut g, results) = evd.into_parts();
    if let Some(z) = results.vectors_matrix() {
        let col = opts.evd.col_block_for(n);
        back_substitute(&mut g, &chol, z, results.complete_task(), opts.problem, col)?;
    }
    Ok(SygvGraph { graph: g, results })
}

/// Shapes and finiteness of the triangles read.
fn check_inputs<T: Scalar>(a: MatRef<'_, T>, b: MatRef<'_, T>, opts: &EvdOptions) -> Result<()> {
    if a.nrows() != a.ncols() || b.nrows() != a.nrows() || b.ncols() != a.ncols() {
        return Err(Error::Shape(format!(
            "the generalized problem needs square A and B of the same order, got A {} x {} and B {} x {}",
            a.nrows(),
            a.ncols(),
            b.nrows(),
            b.ncols()
        )));
    }
    if let Some(sel) = &opts.selection {
        sel.indices(a.nrows())?;
    }
    side::check_finite_side(a, opts.side)?;
    side::check_finite_side(b, opts.side).map_err(|e| Error::InvalidArgument(format!("B: {e}")))
}

/// A rough size of `C`'s entries, for the divide and conquer's power-of-two
/// scaling only: `max |A| / max_i B_ii` (type 1) or `max |A| max_i B_ii`
/// (types 2, 3), from the lower triangles.
fn magnitude_estimate<T: Scalar>(a: MatRef<'_, T>, b: MatRef<'_, T>, problem: Problem) -> T {
    let n = a.nrows();
    let mut amax = T::zero();
    for j in 0..n {
        for i in j..n {
            amax = amax.max(a[(i, j)].abs());
        }
    }
    let bmax = (0..n).fold(T::zero(), |m, i| m.max(b[(i, i)].abs()));
    if bmax <= T::zero() {
        return T::one();
    }
    let est = match problem {
        Problem::AxLambdaBx => amax / bmax,
        Problem::ABxLambdaX | Problem::BAxLambdaX => amax * bmax,
    };
    if est.is_finite() && est > T::zero() {
        est
    } else {
        T::one()
    }
}

/// The generalized symmetric-definite eigenproblem of `a` and `b` (see the
/// module documentation), run as one task graph on `rt`. With a selection,
/// the eigenpairs selected (by index or value of the pencil's eigenvalues).
///
/// Errors: as [`sygv_graph`], with [`Error::NotPositiveDefinite`] returned as
/// itself; [`Error::NoConvergence`] if the tridiagonal solver does not
/// converge. Nothing the caller passed is modified.
pub fn eigh_generalized<T: Scalar>(
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    job: EvdJob,
    opts: &GeneralizedOptions,
    rt: &Runtime,
) -> Result<GeneralizedEigen<T>> {
    rt.check_threads()?;
    if a.nrows() == 0 && a.ncols() == 0 && b.nrows() == 0 && b.ncols() == 0 {
        let vectors = (job == EvdJob::Vectors).then(|| Mat::zeros(0, 0));
        return Ok(GeneralizedEigen {
            values: Vec::new(),
            vectors,
            report: rt.run_with(TaskGraph::new(), &RunOptions::new())?,
        });
    }
    let SygvGraph { graph, results } = sygv_graph(a, b, job, opts)?;
    let report = rt
        .run_with(graph, &RunOptions::new())
        .map_err(unwrap_task_error)?;
    let (values, vectors) = results.into_results()?;
    Ok(GeneralizedEigen {
        values,
        vectors,
        report,
    })
}

/// A failed `potrf` task's [`Error::NotPositiveDefinite`] as itself (the task
/// name adds nothing the variant does not say).
fn unwrap_task_error(e: Error) -> Error {
    match e {
        Error::TaskFailed { source, .. }
            if matches!(*source, Error::NotPositiveDefinite { .. }) =>
        {
            *source
        }
        e => e,
    }
}
