//! The complex Hermitian eigendecomposition (`c64`, `c32`) as one task graph:
//! LAPACK `zheevd`'s one-stage sequence, with the real tridiagonal solvers of
//! the real path.
//!
//! | stage | task(s) | kernel |
//! |---|---|---|
//! | [`HETRD`] | one task | [`crate::linalg::hermitian::hetrd()`] (`zhetrd`: `zlatrd` panels, one `zher2k` per panel through faer's complex GEMM) |
//! | [`SOLVE`] | one task | the real tridiagonal `T`: `dstedc` (vectors, [`stedc_identity`]), `dsterf` or the values-only divide and conquer (values), bisection and inverse iteration (a [`Selection`]) |
//! | [`LARFT`] | one task, beside [`SOLVE`] | the compact-WY factors `T` of `Q`'s blocks ([`block_factors`]) |
//! | [`UNMTR`] | one task per column block | `X = Q Z`, `Z` the real eigenvectors promoted to complex ([`unmtr_blocked`], `zunmtr`) |
//!
//! `T` is real because `zlarfg`'s reflectors leave real subdiagonals (the
//! diagonal unitary scaling that makes a complex Hermitian tridiagonal real is
//! folded into their complex `tau`s; see [`crate::linalg::hermitian`]), so the
//! eigenvectors of `A = Q T Q^H` are `X = Q Z`. Every task is sequential
//! inside and every column of `X` is computed the same way whichever task
//! computes it, so the bits do not depend on the thread count or the schedule.
//!
//! What is not here yet (issue 62): the two-stage complex path (`he2hb`,
//! `hb2st` with its explicit phase scaling, the complex Q2), so this path is
//! used at every order; the reduction is one task (its half of the flops in
//! `zhemv` is memory-bound and sequential).
//!
//! The input is read as LAPACK reads it: the lower triangle (or the upper one,
//! [`EvdOptions::side`]), the **real part** of the diagonal only (a Hermitian
//! matrix has a real diagonal; an imaginary part there is ignored, as
//! `zheevd` ignores it). It is scaled into the safe range first, as the real
//! path's input is.

use crate::graph::{Flow, Footprint, Region, Task, TaskGraph};
use crate::linalg::hermitian::{block_factors, hetrd, unmtr, unmtr_blocked, HetrdParams, Re};
use crate::linalg::par::Fork;
use crate::linalg::tridiagonal::stebz::Sturm;
use crate::linalg::tridiagonal::stedc::forked::stedc_identity;
use crate::linalg::tridiagonal::stedc::values::stedc_values;
use crate::linalg::tridiagonal::stein::stein_columns;
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::evd::{EvdJob, EvdOptions, Selection};
use crate::pipeline::task::with_access;
use crate::runtime::{RunOptions, RunReport, Runtime};
use crate::{ComplexScalar, Error, Result};
use faer::{Mat, MatRef, Side};
use num_traits::Float;
use parking_lot::Mutex;
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// Stage name of the reduction to real tridiagonal form.
pub const HETRD: &str = "hetrd";
/// Stage name of the real tridiagonal solve.
pub const SOLVE: &str = "hermitian.solve";
/// Stage name of the compact-WY factors of `Q`.
pub const LARFT: &str = "larft";
/// Stage name of the back-transformation `X = Q Z`.
pub const UNMTR: &str = "unmtr";

/// Reflectors per compact-WY block of the back-transformation.
const UNMTR_NB: usize = 32;

/// Eigenvalues (real, ascending) and, for [`EvdJob::Vectors`], the
/// orthonormal complex eigenvectors of a Hermitian matrix, with the run's
/// timings.
#[derive(Debug)]
#[non_exhaustive]
pub struct HermitianEigen<C: ComplexScalar> {
    /// Eigenvalues, ascending.
    pub values: Vec<C::Real>,
    /// Eigenvectors (column `j` belongs to `values[j]`), for
    /// [`EvdJob::Vectors`].
    pub vectors: Option<Mat<C>>,
    /// The run's timings.
    pub report: RunReport,
}

/// Eigenvalues and, when computed, eigenvectors.
pub type Eigenpairs<C> = (Vec<Re<C>>, Option<Mat<C>>);

/// What a solve task leaves: the scaled eigenvalues and, for a selection,
/// the selected eigenvectors (the full problem's are in a shared matrix).
type Solved<C> = Arc<Mutex<Option<Eigenpairs<C>>>>;

/// The graph of one Hermitian EVD and where its results land.
pub struct HeevdGraph<C: ComplexScalar> {
    /// The task graph; run it with any [`Runtime`].
    pub graph: TaskGraph<'static>,
    /// Where the results land (read them after the run).
    pub results: HeevdResults<C>,
}

/// Where the results of a [`HeevdGraph`] land.
pub struct HeevdResults<C: ComplexScalar> {
    solved: Solved<C>,
    vectors: Option<Arc<SharedMatrix<C>>>,
    scale: Re<C>,
}

impl<C: ComplexScalar> HeevdResults<C> {
    /// The eigenvalues (unscaled) and eigenvectors, once the graph has run
    /// successfully ([`Error::NotRun`] otherwise). Call it after the run has
    /// given the graph back (its tasks dropped).
    pub fn into_results(self) -> Result<Eigenpairs<C>> {
        let (mut values, selected) = self.solved.lock().take().ok_or(Error::NotRun)?;
        for x in values.iter_mut() {
            *x /= self.scale;
        }
        let vectors = match (selected, self.vectors) {
            (Some(x), _) => Some(x),
            (None, Some(x)) => Some(
                Arc::try_unwrap(x)
                    .map_err(|_| {
                        Error::InvalidArgument("the eigenvectors are still held by a task".into())
                    })?
                    .into_inner(),
            ),
            (None, None) => None,
        };
        Ok((values, vectors))
    }
}

/// Checks the triangle read for NaN and infinity in either part, naming the
/// first offender's row and column in the caller's matrix; the diagonal's
/// imaginary part is not read and not checked.
pub fn check_finite_hermitian<C: ComplexScalar>(a: MatRef<'_, C>, side: Side) -> Result<()> {
    let n = a.nrows();
    for j in 0..n {
        let rows = match side {
            Side::Lower => j..n,
            Side::Upper => 0..j + 1,
        };
        for i in rows {
            let z = a[(i, j)];
            let bad = if i == j {
                !num_traits::Float::is_finite(z.re())
            } else {
                !z.finite()
            };
            if bad {
                return Err(Error::NonFinite {
                    row: i,
                    col: j,
                    value: format!("{:?} + {:?}i", z.re(), z.im()),
                });
            }
        }
    }
    Ok(())
}

/// The lower triangle of the Hermitian matrix `a` as the triangle `side`
/// gives it (the conjugate transpose of the upper one), the diagonal real,
/// the strict upper part zero; and the largest modulus in it.
fn lower_copy<C: ComplexScalar>(a: MatRef<'_, C>, side: Side) -> (Mat<C>, Re<C>) {
    let n = a.nrows();
    let zero = <Re<C> as num_traits::Zero>::zero();
    let mut anrm = zero;
    let mut h = Mat::<C>::zeros(n, n);
    for j in 0..n {
        h[(j, j)] = C::from_parts(a[(j, j)].re(), zero);
        anrm = anrm.max(a[(j, j)].re().abs());
        for i in j + 1..n {
            let z = match side {
                Side::Lower => a[(i, j)],
                Side::Upper => a[(j, i)].conjugate(),
            };
            anrm = anrm.max(z.modulus());
            h[(i, j)] = z;
        }
    }
    (h, anrm)
}

/// Bytes the graph holds for order `n`: the working copy, the real
/// eigenvectors and the complex ones (vectors), the tridiagonal, `tau`, the
/// block factors and the tasks' workspaces (`O(n)` columns each).
fn memory_bytes<C: ComplexScalar>(n: usize, job: EvdJob) -> Option<u64> {
    let (n, c, r) = (
        n as u64,
        std::mem::size_of::<C>() as u64,
        std::mem::size_of::<Re<C>>() as u64,
    );
    let nn = n.checked_mul(n)?;
    let base = nn.checked_mul(c)?.checked_add(n.checked_mul(200 * c)?)?;
    match job {
        EvdJob::Values => Some(base),
        EvdJob::Vectors => base
            .checked_add(nn.checked_mul(c + r)?)?
            .checked_add(n.checked_mul(4 * UNMTR_NB as u64 * c)?),
    }
}

/// Builds the graph of the eigendecomposition of the Hermitian `a` (see the
/// module docs); `a` is not modified (the graph works on a copy). Honoured
/// options: [`EvdOptions::side`], [`EvdOptions::selection`],
/// [`EvdOptions::leaf_size`], the values-only divide and conquer crossover,
/// and the back-transformation's column block (`col_block_for`).
///
/// Errors: [`Error::Shape`] for a non-square `a`, [`Error::NonFinite`]
/// naming the first NaN or infinity in the real or the imaginary part of the
/// triangle read, [`Error::InvalidArgument`] for a selection that does not
/// fit, [`Error::OutOfMemory`] for a problem that does not fit.
pub fn heevd_graph<C: ComplexScalar>(
    a: MatRef<'_, C>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<HeevdGraph<C>> {
    let n = a.nrows();
    if a.ncols() != n {
        return Err(Error::Shape(format!(
            "Hermitian eigendecomposition needs a square matrix, got {n} x {}",
            a.ncols()
        )));
    }
    if let Some(sel) = &opts.selection {
        sel.indices(n)?;
    }
    check_finite_hermitian(a, opts.side)?;
    let needed = memory_bytes::<C>(n, job).unwrap_or(u64::MAX);
    let what = format!(
        "the {n} x {n} {} Hermitian eigendecomposition",
        std::any::type_name::<C>()
    );
    crate::sysinfo::check_fits(needed, &what, |_| String::new())?;
    let (mut h, anrm) = lower_copy(a, opts.side);
    let scale = if opts.selection.is_some() {
        crate::pipeline::scale::selection_range_factor(anrm)
    } else {
        crate::pipeline::scale::safe_range_factor(anrm)
    };
    if scale != <Re<C> as num_traits::One>::one() {
        for j in 0..n {
            for i in j..n {
                h[(i, j)] = h[(i, j)].scaled(scale);
            }
        }
    }
    let parts = Parts::new(h, job, opts.selection.is_some());
    let mut g = TaskGraph::new();
    let mut flow = Flow::new();
    add_hetrd(&mut g, &mut flow, &parts);
    let solved: Solved<C> = Arc::new(Mutex::new(None));
    match &opts.selection {
        Some(sel) => add_select(&mut g, &mut flow, &parts, sel.clone(), job, scale, &solved),
        None => {
            add_solve(&mut g, &mut flow, &parts, job, opts, &solved);
            if job == EvdJob::Vectors {
                add_back_transform(&mut g, &mut flow, &parts, opts.col_block_for(n));
            }
        }
    }
    Ok(HeevdGraph {
        graph: g,
        results: HeevdResults {
            solved,
            vectors: parts.x.clone(),
            scale,
        },
    })
}

/// The graph's shared matrices.
struct Parts<C: ComplexScalar> {
    n: usize,
    /// The working copy, then `hetrd`'s reflectors.
    h: Arc<SharedMatrix<C>>,
    /// `d` (column 0) and `e` (column 1, rows `0..n-1`) of `T`.
    tri: Arc<SharedMatrix<Re<C>>>,
    /// `tau` (rows `0..n-1`).
    tau: Arc<SharedMatrix<C>>,
    /// The block factors of `Q` (full problem with vectors).
    t: Option<Arc<SharedMatrix<C>>>,
    /// The real eigenvectors of `T` (full problem with vectors).
    z: Option<Arc<SharedMatrix<Re<C>>>>,
    /// The complex eigenvectors (full problem with vectors).
    x: Option<Arc<SharedMatrix<C>>>,
}

impl<C: ComplexScalar> Parts<C> {
    fn new(h: Mat<C>, job: EvdJob, selective: bool) -> Self {
        let n = h.nrows();
        let full = job == EvdJob::Vectors && !selective;
        let k = n.saturating_sub(1);
        Parts {
            n,
            h: Arc::new(SharedMatrix::new(h)),
            tri: Arc::new(SharedMatrix::new(Mat::zeros(n, 2))),
            tau: Arc::new(SharedMatrix::new(Mat::zeros(n, 1))),
            t: full.then(|| Arc::new(SharedMatrix::new(Mat::zeros(UNMTR_NB, k)))),
            z: full.then(|| Arc::new(SharedMatrix::deferred(n, n))),
            x: full.then(|| Arc::new(SharedMatrix::deferred(n, n))),
        }
    }

    /// Everything `hetrd` writes and later tasks read.
    fn all(&self, m: &Arc<SharedMatrix<impl faer::traits::ComplexField>>) -> Region {
        Region::new(m.id(), 0..m.nrows(), 0..m.ncols())
    }
}

/// `(d, e, tau)` out of the shared tridiagonal and `tau`.
fn read_tridiagonal<C: ComplexScalar>(
    p_tri: &SharedMatrix<Re<C>>,
    acc: &Access<'_>,
    n: usize,
) -> (Vec<Re<C>>, Vec<Re<C>>) {
    let tri = p_tri.read(acc, 0..n, 0..2);
    let d = (0..n).map(|i| tri[(i, 0)]).collect();
    let e = (0..n.saturating_sub(1)).map(|i| tri[(i, 1)]).collect();
    (d, e)
}

/// The reduction task: `h` to reflectors, `T` into `tri`, `tau`.
fn add_hetrd<C: ComplexScalar>(g: &mut TaskGraph<'static>, flow: &mut Flow, p: &Parts<C>) {
    let n = p.n;
    let (h, tri, tau) = (p.h.clone(), p.tri.clone(), p.tau.clone());
    let body = move |acc: &Access<'_>| {
        let k = n.saturating_sub(1);
        let zero = <Re<C> as num_traits::Zero>::zero();
        let (mut d, mut e, mut t) = (vec![zero; n], vec![zero; k], vec![C::zero_impl(); k]);
        hetrd(
            h.write(acc, 0..n, 0..n),
            HetrdParams::default(),
            &mut d,
            &mut e,
            &mut t,
        );
        let mut tri = tri.write(acc, 0..n, 0..2);
        let mut tau = tau.write(acc, 0..n, 0..1);
        for i in 0..n {
            tri[(i, 0)] = d[i];
        }
        for i in 0..k {
            tri[(i, 1)] = e[i];
            tau[(i, 0)] = t[i];
        }
        Ok(())
    };
    let fp = Footprint::new()
        .write(p.all(&p.h))
        .write(p.all(&p.tri))
        .write(p.all(&p.tau));
    let nf = n as f64;
    flow.add(
        g,
        Task::new("hetrd", with_access(body))
            .stage(HETRD)
            .cost(
                16.0 / 3.0 * nf * nf * nf,
                (std::mem::size_of::<C>() * n * n) as f64,
            )
            .footprint(fp),
    );
}

/// The solve task of the full problem: `dstedc` on `T` into `z` (vectors),
/// or the values only.
fn add_solve<C: ComplexScalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    p: &Parts<C>,
    job: EvdJob,
    opts: &EvdOptions,
    solved: &Solved<C>,
) {
    let n = p.n;
    let (tri, z, out) = (p.tri.clone(), p.z.clone(), solved.clone());
    let (leaf, by_dc) = (opts.leaf_size, opts.values_by_dc(n));
    let body = move |acc: &Access<'_>| {
        let (mut d, mut e) = read_tridiagonal::<C>(&tri, acc, n);
        match (&z, job) {
            (Some(z), EvdJob::Vectors) => {
                let zt = stedc_identity(&mut d, &mut e, leaf, Fork::Seq)?;
                z.write(acc, 0..n, 0..n).copy_from(&zt);
            }
            _ if by_dc => stedc_values(&mut d, &mut e, leaf, Fork::Seq)?,
            _ => crate::linalg::tridiagonal::sterf::sterf(&mut d, &mut e)?,
        }
        *out.lock() = Some((d, None));
        Ok(())
    };
    let mut fp = Footprint::new().read(p.all(&p.tri));
    if let Some(z) = &p.z {
        fp = fp.write(p.all(z));
    }
    let nf = n as f64;
    let name = if p.z.is_some() { "stedc" } else { "sterf" };
    flow.add(
        g,
        Task::new(name, with_access(body))
            .stage(SOLVE)
            .cost(4.0 / 3.0 * nf * nf * nf, (8 * n * n) as f64)
            .footprint(fp),
    );
}

/// The selective solve: bisection and inverse iteration on `T` (`dstebz`,
/// `dstein`) and, with vectors, `X = Q Z` on the `k` columns, in one task
/// (`k` is known only once the eigenvalues are).
fn add_select<C: ComplexScalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    p: &Parts<C>,
    sel: Selection,
    job: EvdJob,
    scale: Re<C>,
    solved: &Solved<C>,
) {
    let n = p.n;
    let (h, tri, tau, out) = (p.h.clone(), p.tri.clone(), p.tau.clone(), solved.clone());
    let body = move |acc: &Access<'_>| {
        let (d, e) = read_tridiagonal::<C>(&tri, acc, n);
        let sturm = Sturm::new(&d, &e)?;
        let range = sel.resolve(&sturm, scale)?;
        let w = sturm.bisect(range, <Re<C> as num_traits::Zero>::zero())?;
        let x = match job {
            EvdJob::Values => None,
            EvdJob::Vectors => {
                let z = stein_columns(&d, &e, &w, 0..w.len())?;
                let mut x = promote::<C>(z.as_ref());
                let k = n.saturating_sub(1);
                let tau = tau.read(acc, 0..n, 0..1);
                let taus: Vec<C> = (0..k).map(|i| tau[(i, 0)]).collect();
                unmtr(h.read(acc, 0..n, 0..n), &taus, x.as_mut(), UNMTR_NB);
                Some(x)
            }
        };
        *out.lock() = Some((w, x));
        Ok(())
    };
    let fp = Footprint::new()
        .read(p.all(&p.h))
        .read(p.all(&p.tri))
        .read(p.all(&p.tau));
    let nf = n as f64;
    flow.add(
        g,
        Task::new("select", with_access(body))
            .stage(SOLVE)
            .cost(8.0 * nf * nf, (std::mem::size_of::<C>() * n * n) as f64)
            .footprint(fp),
    );
}

/// The real `z` as complex.
fn promote<C: ComplexScalar>(z: MatRef<'_, Re<C>>) -> Mat<C> {
    let zero = <Re<C> as num_traits::Zero>::zero();
    Mat::from_fn(z.nrows(), z.ncols(), |i, j| C::from_parts(z[(i, j)], zero))
}

/// The block factors task and one `X = Q Z` task per block of `col` columns.
fn add_back_transform<C: ComplexScalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    p: &Parts<C>,
    col: usize,
) {
    let (Some(t), Some(z), Some(x)) = (&p.t, &p.z, &p.x) else {
        return;
    };
    let n = p.n;
    let k = n.saturating_sub(1);
    let (h, tau, tm) = (p.h.clone(), p.tau.clone(), t.clone());
    let larft = move |acc: &Access<'_>| {
        let tau = tau.read(acc, 0..n, 0..1);
        let taus: Vec<C> = (0..k).map(|i| tau[(i, 0)]).collect();
        let f = block_factors(h.read(acc, 0..n, 0..n), &taus, UNMTR_NB);
        tm.write(acc, 0..UNMTR_NB, 0..k).copy_from(&f);
        Ok(())
    };
    let fp = Footprint::new()
        .read(p.all(&p.h))
        .read(p.all(&p.tau))
        .write(p.all(t));
    let nf = n as f64;
    flow.add(
        g,
        Task::new("larft", with_access(larft))
            .stage(LARFT)
            .cost(
                4.0 * nf * (UNMTR_NB * UNMTR_NB) as f64,
                (std::mem::size_of::<C>() * n * n) as f64,
            )
            .footprint(fp),
    );
    let col = col.max(1);
    for c0 in (0..n).step_by(col) {
        let cols = c0..(c0 + col).min(n);
        let (h, tm, zm, xm, cc) = (p.h.clone(), t.clone(), z.clone(), x.clone(), cols.clone());
        let body = move |acc: &Access<'_>| {
            let zb = zm.read(acc, 0..n, cc.clone());
            let mut xb = xm.write(acc, 0..n, cc.clone());
            let zero = <Re<C> as num_traits::Zero>::zero();
            for j in 0..cc.len() {
                for i in 0..n {
                    xb[(i, j)] = C::from_parts(zb[(i, j)], zero);
                }
            }
            unmtr_blocked(
                h.read(acc, 0..n, 0..n),
                tm.read(acc, 0..UNMTR_NB, 0..k),
                UNMTR_NB,
                xb,
            );
            Ok(())
        };
        let fp = Footprint::new()
            .read(p.all(&p.h))
            .read(p.all(t))
            .read(Region::new(z.id(), 0..n, cols.clone()))
            .write(Region::new(x.id(), 0..n, cols.clone()));
        flow.add(
            g,
            Task::new(
                format!("unmtr[{}..{}]", cols.start, cols.end),
                with_access(body),
            )
            .stage(UNMTR)
            .cost(
                8.0 * nf * nf * cols.len() as f64,
                (std::mem::size_of::<C>() * n * (n + cols.len())) as f64,
            )
            .footprint(fp),
        );
    }
}

/// The eigendecomposition of the Hermitian `a` (see the module docs), run as
/// one task graph on `rt`: the eigenvalues ascending (real) and, for
/// [`EvdJob::Vectors`], the orthonormal complex eigenvectors. Nothing the
/// caller passed is modified.
///
/// Errors: as [`heevd_graph`]; [`Error::NoConvergence`] if the tridiagonal
/// solver does not converge (as the task's error).
pub fn eigh<C: ComplexScalar>(
    a: MatRef<'_, C>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<HermitianEigen<C>> {
    rt.check_threads()?;
    let HeevdGraph { graph, results } = heevd_graph(a, job, opts)?;
    let report = rt.run_with(graph, &RunOptions::new())?;
    let (values, vectors) = results.into_results()?;
    Ok(HermitianEigen {
        values,
        vectors,
        report,
    })
}
