//! The one-call solvers: [`eigh`] and [`eigvalsh`] (symmetric EVD, and
//! Hermitian for complex input), [`svd`]
//! and [`svdvals`] (SVD) on any faer matrix or view, run on a process-wide
//! default [`Runtime`] created on first use; [`eigh_with`] and [`svd_with`]
//! take options and a runtime; [`eigh_generalized`] and
//! [`eigvalsh_generalized`] solve `A x = λ B x`. The pipeline-level forms, which also return
//! the run's timings, are [`crate::pipeline::eigh`] and
//! [`crate::pipeline::svd()`].

use crate::pipeline::sygv::{self, GeneralizedOptions};
use crate::pipeline::{self, EvdJob, EvdOptions, SvdJob, SvdOptions};
use crate::runtime::Runtime;
use crate::{Result, Scalar};
use faer::mat::AsMatRef;
use faer::{Mat, MatRef};
use std::sync::OnceLock;

/// The element types the one-call eigensolvers ([`eigh`], [`eigvalsh`],
/// [`eigh_with`], [`eigh_select`]) accept: `f32` and `f64` (symmetric input,
/// [`crate::pipeline::eigh`]) and faer's `c32` and `c64` (Hermitian input,
/// [`crate::pipeline::hermitian::eigh`]). The eigenvalues are of the real
/// type `Self::Real` (`f32` for `c32`, `f64` for `c64`).
///
/// Complex input today takes the one-stage path at every order (the
/// two-stage complex graph is not built yet); the batched, generalized and
/// SVD entry points take real input only.
pub trait Field: faer::traits::ComplexField<Real: Scalar> + Copy + Send + Sync + 'static {
    /// The eigenvalues (ascending) and, for [`EvdJob::Vectors`], the
    /// eigenvectors of the symmetric or Hermitian `a`, by the solver of the
    /// element type.
    #[doc(hidden)]
    fn solve_eigh(
        a: MatRef<'_, Self>,
        job: EvdJob,
        opts: &EvdOptions,
        rt: &Runtime,
    ) -> Result<Pairs<Self>>;
}

/// Eigenvalues (real) and, when computed, eigenvectors.
type Pairs<T> = (Vec<<T as faer::traits::ComplexField>::Real>, Option<Mat<T>>);

impl<T: Scalar> Field for T {
    fn solve_eigh(
        a: MatRef<'_, T>,
        job: EvdJob,
        opts: &EvdOptions,
        rt: &Runtime,
    ) -> Result<Pairs<T>> {
        pipeline::eigh(a, job, opts, rt).map(|e| (e.values, e.vectors))
    }
}

impl<R: Scalar> Field for faer::complex::Complex<R> {
    fn solve_eigh(
        a: MatRef<'_, Self>,
        job: EvdJob,
        opts: &EvdOptions,
        rt: &Runtime,
    ) -> Result<Pairs<Self>> {
        pipeline::hermitian::eigh(a, job, opts, rt).map(|e| (e.values, e.vectors))
    }
}

/// Eigenvalues and eigenvectors of a symmetric or Hermitian matrix, as
/// returned by [`eigh`] (numpy's `w, v = np.linalg.eigh(a)`): the values real
/// (`T::Real`), the vectors of the input's type.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Eigh<T: Field> {
    /// Eigenvalues, ascending.
    pub values: Vec<T::Real>,
    /// Orthonormal eigenvectors: column `j` belongs to `values[j]`.
    pub vectors: Mat<T>,
}

/// The process-wide runtime of [`eigh`] and [`eigvalsh`]: every core, no stream
/// lane, no trace. Created on first use and kept for the life of the process,
/// with its worker threads: they start at the first call and are reused by
/// every later one (no thread start per call). Concurrent calls do not block
/// each other: each takes its own set of threads (see [`crate::runtime`]).
pub fn default_runtime() -> &'static Runtime {
    static DEFAULT: OnceLock<Runtime> = OnceLock::new();
    DEFAULT.get_or_init(|| Runtime::builder().build())
}

/// The eigendecomposition `A = V diag(values) V^T` of the symmetric matrix `a`
/// (its lower triangle is read, the strict upper one ignored), or
/// `A = V diag(values) V^H` of the Hermitian `a` for complex input (`c32`,
/// `c64`: see below), computed by the
/// two-stage pipeline on [`default_runtime`], or, below the crossover
/// [`EvdOptions::one_stage_below`] (automatic by default), by the one-stage
/// reduction with no task graph (calling thread plus the runtime's threads for
/// its GEMM-rich halves). `a` may be a `&Mat<T>`, a
/// `MatRef<T>` or a `MatMut<T>`, with `T` `f32`, `f64`, `c32` or `c64`.
///
/// Complex input: the eigenvalues are real, the vectors complex with
/// `V^H V = I`; the matrix is read as LAPACK `zheevd` reads it, the lower
/// triangle and the **real part of the diagonal only** (the imaginary part
/// of the diagonal is ignored); it goes through
/// [`crate::pipeline::hermitian`] (one-stage, as a task graph) at every
/// order.
///
/// ```
/// use eigenflow::faer::{c64, Mat};
/// let a = Mat::<c64>::from_fn(2, 2, |i, j| match (i, j) {
///     (1, 0) => c64::new(0.0, 1.0),
///     (0, 1) => c64::new(0.0, -1.0),
///     _ => c64::new(1.0, 0.0),
/// });
/// let eig = eigenflow::eigh(&a)?; // [[1, -i], [i, 1]]: eigenvalues 0 and 2
/// assert!(eig.values[0].abs() < 1e-14 && (eig.values[1] - 2.0).abs() < 1e-14);
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// ```
/// use eigenflow::faer::Mat;
/// let a = Mat::<f64>::from_fn(3, 3, |i, j| if i == j { 2.0 } else { -1.0 });
/// let eig = eigenflow::eigh(&a)?;
/// assert!((eig.values[0] - 0.0).abs() < 1e-12 && (eig.values[2] - 3.0).abs() < 1e-12);
/// assert_eq!(eig.vectors.ncols(), 3);
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// Errors: as [`crate::pipeline::eigh`] ([`crate::Error::Shape`] for a
/// non-square input, [`crate::Error::NonFinite`] for a NaN or infinity in the
/// lower triangle, [`crate::Error::OutOfMemory`] before allocating a problem that
/// does not fit); for complex input a NaN or infinity in the real or the
/// imaginary part is a [`crate::Error::NonFinite`] naming its row and column.
pub fn eigh<T, A>(a: A) -> Result<Eigh<T>>
where
    T: Field,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    eigh_with(a, &EvdOptions::auto(), default_runtime())
}

/// [`eigh`] with options and a runtime of the caller's: for instance the upper
/// triangle read instead of the lower one.
///
/// ```
/// use eigenflow::{faer::Mat, EvdOptions, Side};
/// let a = Mat::<f64>::from_fn(3, 3, |i, j| if i <= j { 1.0 } else { f64::NAN });
/// let mut opts = EvdOptions::auto();
/// opts.side = Side::Upper; // the NaNs below the diagonal are never read
/// let eig = eigenflow::eigh_with(&a, &opts, eigenflow::default_runtime())?;
/// assert!((eig.values[2] - 3.0).abs() < 1e-12);
/// # Ok::<(), eigenflow::Error>(())
/// ```
pub fn eigh_with<T, A>(a: A, opts: &EvdOptions, rt: &Runtime) -> Result<Eigh<T>>
where
    T: Field,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let (values, vectors) = T::solve_eigh(a.as_mat_ref(), EvdJob::Vectors, opts, rt)?;
    let vectors = vectors.ok_or_else(|| {
        crate::Error::InvalidArgument("the vectors job returned no eigenvectors".into())
    })?;
    Ok(Eigh { values, vectors })
}

/// The selected eigenpairs of the symmetric matrix `a` (lower triangle read)
/// on [`default_runtime`]: the values ascending, eigenvector column `j` for
/// value `j` (`n x k`), at the cost of the eigenvalues plus `O(n^2 k)`
/// (bisection, inverse iteration and the back-transformation of `k`
/// columns; see [`crate::pipeline::evd::Selection`]).
///
/// ```
/// use eigenflow::{faer::Mat, Selection};
/// let a = Mat::<f64>::from_fn(50, 50, |i, j| if i == j { i as f64 } else { 0.0 });
/// let top = eigenflow::eigh_select(&a, Selection::Largest(3))?;
/// assert_eq!(top.values.len(), 3);
/// assert!((top.values[2] - 49.0).abs() < 1e-12);
/// assert_eq!((top.vectors.nrows(), top.vectors.ncols()), (50, 3));
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// Errors: as [`eigh`], and [`crate::Error::InvalidArgument`] for a selection
/// that does not fit (`k > n`, a reversed or too long index range, a NaN
/// bound or `lo > hi`).
pub fn eigh_select<T, A>(a: A, selection: crate::pipeline::evd::Selection) -> Result<Eigh<T>>
where
    T: Field,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let mut opts = EvdOptions::auto();
    opts.selection = Some(selection);
    eigh_with(a, &opts, default_runtime())
}

/// The eigenvalues, ascending, of the symmetric matrix `a` (lower triangle
/// read), on [`default_runtime`]; numpy's `np.linalg.eigvalsh(a)`. Accepts
/// what [`eigh`] accepts (complex too, with real values) and fails as it does.
pub fn eigvalsh<T, A>(a: A) -> Result<Vec<T::Real>>
where
    T: Field,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    T::solve_eigh(
        a.as_mat_ref(),
        EvdJob::Values,
        &EvdOptions::auto(),
        default_runtime(),
    )
    .map(|(values, _)| values)
}

/// The thin singular value decomposition `A = U diag(values) V^T` of a
/// matrix of any shape, as returned by [`svd`] (numpy's
/// `u, s, vt = np.linalg.svd(a, full_matrices=False)`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Svd<T> {
    /// Singular values, descending (`k = min(m, n)` of them, or the selected
    /// ones).
    pub values: Vec<T>,
    /// `U` (`m x k`, orthonormal columns).
    pub u: Mat<T>,
    /// `V^T` (`k x n`, orthonormal rows).
    pub vt: Mat<T>,
}

/// The thin SVD of `a` (`m x n`, any shape) by the two-stage pipeline on
/// [`default_runtime`], or, below the crossover
/// [`SvdOptions::one_stage_below`] (automatic by default), by the one-stage
/// reduction with no task graph (LAPACK `dgesdd`'s sequence); `a` may be a
/// `&Mat<T>`, a `MatRef<T>` or a `MatMut<T>`, with `T` `f32` or `f64`.
///
/// ```
/// use eigenflow::faer::Mat;
/// let a = Mat::<f64>::from_fn(4, 3, |i, j| (i + 2 * j) as f64);
/// let svd = eigenflow::svd(&a)?;
/// let s = Mat::<f64>::from_fn(3, 3, |i, j| if i == j { svd.values[i] } else { 0.0 });
/// assert!((&svd.u * &s * &svd.vt - &a).norm_max() < 1e-12);
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// Errors: as [`crate::pipeline::svd()`].
pub fn svd<T, A>(a: A) -> Result<Svd<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    svd_with(a, &SvdOptions::auto(), default_runtime())
}

/// [`svd`] with options and a runtime of the caller's.
pub fn svd_with<T, A>(a: A, opts: &SvdOptions, rt: &Runtime) -> Result<Svd<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let r = pipeline::svd(a.as_mat_ref(), SvdJob::Vectors, opts, rt)?;
    let missing = || crate::Error::InvalidArgument("the vectors job returned no vectors".into());
    Ok(Svd {
        values: r.values,
        u: r.u.ok_or_else(missing)?,
        vt: r.vt.ok_or_else(missing)?,
    })
}

/// The `k` largest singular triplets of `a` (`m x n`, any shape) on
/// [`default_runtime`]: `values` (`k`, descending), `u` (`m x k`) and `vt`
/// (`k x n`), at the cost of the singular values plus `O(max(m, n) n k)`
/// (bisection on the Golub–Kahan tridiagonal of the bidiagonal, inverse
/// iteration and the back-transformation of `k` columns of `U` and `V`; see
/// [`crate::pipeline::svd::SvdSelection`]). `k = 0` gives empty results.
///
/// ```
/// use eigenflow::faer::Mat;
/// let a = Mat::<f64>::from_fn(60, 40, |i, j| if i == j { (j + 1) as f64 } else { 0.0 });
/// let top = eigenflow::svd_top(&a, 3)?;
/// assert_eq!(top.values.len(), 3);
/// assert!((top.values[0] - 40.0).abs() < 1e-12);
/// assert_eq!((top.u.nrows(), top.u.ncols(), top.vt.nrows(), top.vt.ncols()), (60, 3, 3, 40));
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// Errors: as [`svd`], and [`crate::Error::InvalidArgument`] for
/// `k > min(m, n)`.
pub fn svd_top<T, A>(a: A, k: usize) -> Result<Svd<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let mut opts = SvdOptions::auto();
    opts.selection = Some(crate::pipeline::svd::SvdSelection::Largest(k));
    svd_with(a, &opts, default_runtime())
}

/// The singular values, descending, of `a` (any shape) on
/// [`default_runtime`]; numpy's `np.linalg.svd(a, compute_uv=False)`.
pub fn svdvals<T, A>(a: A) -> Result<Vec<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    pipeline::svd(
        a.as_mat_ref(),
        SvdJob::Values,
        &SvdOptions::auto(),
        default_runtime(),
    )
    .map(|r| r.values)
}

/// The generalized symmetric-definite eigendecomposition `A x = λ B x` of the
/// symmetric `a` and the symmetric positive definite `b` (lower triangles
/// read), on [`default_runtime`] (scipy's `w, v = scipy.linalg.eigh(a, b)`):
/// the eigenvalues ascending and the `B`-orthonormal eigenvectors
/// (`X^T B X = I`), by the Cholesky method as one task graph (see
/// [`crate::pipeline::sygv`], which states its accuracy limit: `B`'s
/// condition number enters the errors).
///
/// ```
/// use eigenflow::faer::Mat;
/// let a = Mat::<f64>::from_fn(3, 3, |i, j| if i == j { 2.0 } else { -1.0 });
/// let b = Mat::<f64>::from_fn(3, 3, |i, j| if i == j { 2.0 } else { 0.0 });
/// let eig = eigenflow::eigh_generalized(&a, &b)?;
/// assert!((eig.values[2] - 1.5).abs() < 1e-12); // the eigenvalues of A over 2
/// let x = eig.vectors.col(2);
/// assert!((x.transpose() * (&b * x) - 1.0).abs() < 1e-12); // B-normalized
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// Errors: [`crate::Error::Shape`] for a non-square `a` or a `b` of another
/// shape, [`crate::Error::NonFinite`] for a NaN or infinity in `a`'s lower
/// triangle ([`crate::Error::InvalidArgument`] naming it for `b`),
/// [`crate::Error::NotPositiveDefinite`] naming the leading minor of `b` that
/// is not positive. Neither matrix is modified.
pub fn eigh_generalized<T, A, B>(a: A, b: B) -> Result<Eigh<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
    B: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    eigh_generalized_with(a, b, &GeneralizedOptions::default(), default_runtime())
}

/// [`eigh_generalized`] with options (the problem type, a selection, the
/// triangle read) and a runtime of the caller's.
///
/// ```
/// use eigenflow::{faer::Mat, GeneralizedOptions, Problem, Selection};
/// let a = Mat::<f64>::from_fn(6, 6, |i, j| if i == j { (i + 1) as f64 } else { 0.0 });
/// let b = Mat::<f64>::from_fn(6, 6, |i, j| if i == j { 2.0 } else { 0.0 });
/// // B A x = λ x, the two largest eigenpairs: 2 * 5 and 2 * 6.
/// let opts = GeneralizedOptions::new(Problem::BAxLambdaX).with_selection(Selection::Largest(2));
/// let eig = eigenflow::eigh_generalized_with(&a, &b, &opts, eigenflow::default_runtime())?;
/// assert!((eig.values[0] - 10.0).abs() < 1e-12 && (eig.values[1] - 12.0).abs() < 1e-12);
/// # Ok::<(), eigenflow::Error>(())
/// ```
pub fn eigh_generalized_with<T, A, B>(
    a: A,
    b: B,
    opts: &GeneralizedOptions,
    rt: &Runtime,
) -> Result<Eigh<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
    B: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let (a, b) = (a.as_mat_ref(), b.as_mat_ref());
    let eig = sygv::eigh_generalized(a, b, EvdJob::Vectors, opts, rt)?;
    let vectors = eig.vectors.ok_or_else(|| {
        crate::Error::InvalidArgument("the vectors job returned no eigenvectors".into())
    })?;
    Ok(Eigh {
        values: eig.values,
        vectors,
    })
}

/// The eigenvalues, ascending, of the generalized problem `A x = λ B x`
/// (lower triangles read) on [`default_runtime`]; scipy's
/// `scipy.linalg.eigvalsh(a, b)`. Accepts what [`eigh_generalized`] accepts
/// and fails as it does.
pub fn eigvalsh_generalized<T, A, B>(a: A, b: B) -> Result<Vec<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
    B: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let (a, b) = (a.as_mat_ref(), b.as_mat_ref());
    let opts = GeneralizedOptions::default();
    sygv::eigh_generalized(a, b, EvdJob::Values, &opts, default_runtime()).map(|e| e.values)
}
