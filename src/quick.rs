//! The one-call eigensolver: [`eigh`] and [`eigvalsh`] on any faer matrix or
//! view, run on a process-wide default [`Runtime`] created on first use;
//! [`eigh_with`] takes options (the triangle read, tuning) and a runtime. The
//! pipeline-level form, which also returns the run's timings, is
//! [`crate::pipeline::eigh`].

use crate::pipeline::{self, EvdJob, EvdOptions};
use crate::runtime::Runtime;
use crate::{Result, Scalar};
use faer::mat::AsMatRef;
use faer::Mat;
use std::sync::OnceLock;

/// Eigenvalues and eigenvectors of a symmetric matrix, as returned by [`eigh`]
/// (numpy's `w, v = np.linalg.eigh(a)`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Eigh<T> {
    /// Eigenvalues, ascending.
    pub values: Vec<T>,
    /// Orthonormal eigenvectors: column `j` belongs to `values[j]`.
    pub vectors: Mat<T>,
}

/// The process-wide runtime of [`eigh`] and [`eigvalsh`]: every core, no stream
/// lane, no trace. Created on first use and kept for the life of the process
/// (a run starts its own threads, so concurrent calls do not block each other).
pub fn default_runtime() -> &'static Runtime {
    static DEFAULT: OnceLock<Runtime> = OnceLock::new();
    DEFAULT.get_or_init(|| Runtime::builder().build())
}

/// The eigendecomposition `A = V diag(values) V^T` of the symmetric matrix `a`
/// (its lower triangle is read, the strict upper one ignored), computed by the
/// two-stage pipeline on [`default_runtime`], or, below the crossover
/// [`EvdOptions::one_stage_below`] (automatic by default), by the one-stage
/// reduction on the calling thread with no task graph. `a` may be a `&Mat<T>`, a
/// `MatRef<T>` or a `MatMut<T>`, with `T` `f32` or `f64`.
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
/// does not fit).
pub fn eigh<T, A>(a: A) -> Result<Eigh<T>>
where
    T: Scalar,
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
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    let eig = pipeline::eigh(a.as_mat_ref(), EvdJob::Vectors, opts, rt)?;
    let vectors = eig.vectors.ok_or_else(|| {
        crate::Error::InvalidArgument("the vectors job returned no eigenvectors".into())
    })?;
    Ok(Eigh {
        values: eig.values,
        vectors,
    })
}

/// The eigenvalues, ascending, of the symmetric matrix `a` (lower triangle
/// read), on [`default_runtime`]; numpy's `np.linalg.eigvalsh(a)`. Accepts
/// what [`eigh`] accepts and fails as it does.
pub fn eigvalsh<T, A>(a: A) -> Result<Vec<T>>
where
    T: Scalar,
    A: AsMatRef<T = T, Rows = usize, Cols = usize>,
{
    pipeline::eigh(
        a.as_mat_ref(),
        EvdJob::Values,
        &EvdOptions::auto(),
        default_runtime(),
    )
    .map(|eig| eig.values)
}
