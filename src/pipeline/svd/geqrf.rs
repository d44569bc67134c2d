//! QR pre-reduction of a tall matrix (LAPACK `dgesdd`'s path for `m >> n`,
//! Chan's R-bidiagonalization): `A = Q [R; 0]`, so the two-stage reduction
//! runs on the `n x n` triangle `R` instead of `A` (the LQ panels and right
//! updates then span `n` rows, not `m`: `2 m n^2 + 2 n^3` flops in all
//! instead of `4 m n^2 - 4/3 n^3`), and `U = Q [U_R; 0]` afterwards. The
//! crossovers are in [`super::SvdOptions::qr_ratio_for`]. The QR is the QR half of ge2gb: the same
//! panels and tile tasks ([`super::ge2gb::QrSweep`]), without the LQ panels.

use super::ge2gb::{ge2gb_produced, Ge2gbStage, QrSweep};
use super::reflectors::Q1uReflectors;
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::band::ge2gb::qr_panel_count;
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, Reduction};
use crate::pipeline::task::{subgraph_of, with_access};
use crate::{Error, Result, Scalar};
use faer::reborrow::*;
use faer::Mat;
use std::sync::Arc;

/// Stage name of the QR pre-reduction.
pub const GEQRF: &str = "geqrf";

/// The triangle `R` of a QR pre-reduction: an `n x n` matrix the stage's last
/// task writes, to be reduced by [`RFactor::ge2gb`].
pub struct RFactor<T> {
    pub(super) r: Arc<SharedMatrix<T>>,
    pub(super) task: TaskId,
    /// The reduction of the whole input (the QR and ge2gb of `R` share it).
    pub(super) reduction: Reduction,
}

/// What [`geqrf()`] leaves behind.
pub struct GeqrfStage<T> {
    /// `R`, for the two-stage reduction.
    pub r: RFactor<T>,
    /// `Q`'s reflectors, for `U = Q [U_R; 0]` by
    /// [`super::back_transform_q1u()`] (they are QR panels, exactly as the
    /// `U` side of ge2gb).
    pub reflectors: Q1uReflectors<T, basis::Dense>,
}

impl<T: Scalar> RFactor<T> {
    /// Adds ge2gb ([`super::ge2gb()`]) on `R`, its tasks ordered after the
    /// one that writes `R`.
    ///
    /// Errors: as [`super::ge2gb()`].
    pub fn ge2gb(
        self,
        g: &mut TaskGraph<'static>,
        b: usize,
        nb: usize,
        tw: usize,
    ) -> Result<Ge2gbStage<T>> {
        ge2gb_produced(g, self.r, Some(self.task), self.reduction, b, nb, tw)
    }
}

/// Adds the tiled QR of `a` (`m x n`, `m >= n`, `n >= 1`; the graph owns it):
/// panels of `ib` columns (`ib` divides the tile `nb`), trailing updates as
/// `left_w` / `left_tile` tasks on the grid of size `nb` (the kernels of
/// [`crate::linalg::band::ge2gb`]), then one task copying the upper triangle of
/// `a[..n, ..n]` into a fresh `n x n` `R` (zeros below).
///
/// Errors: [`Error::Shape`] for `m < n` or `n = 0`, [`Error::InvalidArgument`]
/// for `ib = 0` or a tile that is not a positive multiple of `ib`,
/// [`Error::NonFinite`] naming the first non-finite entry (column by column)
/// at its position in `a`.
pub fn geqrf<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Mat<T>,
    ib: usize,
    nb: usize,
) -> Result<GeqrfStage<T>> {
    let (m, n) = (a.nrows(), a.ncols());
    if m < n || n == 0 {
        return Err(Error::Shape(format!(
            "geqrf needs m >= n >= 1, got {m} x {n}"
        )));
    }
    if ib == 0 || nb == 0 || !nb.is_multiple_of(ib) {
        return Err(Error::InvalidArgument(format!(
            "geqrf: panel width {ib}, tile {nb} (need a tile that is a positive multiple of the panel width)"
        )));
    }
    crate::matrix::check_finite(a.as_ref(), false)?;
    let qr = QrSweep::new(Arc::new(SharedMatrix::new(a)), ib, nb, GEQRF);
    let mut flow = Flow::new();
    let mut ids = Vec::new();
    for k in 0..qr_panel_count(n, ib) {
        qr.step(g, &mut flow, &mut ids, k);
    }
    let r = Arc::new(SharedMatrix::new(Mat::<T>::zeros(n, n)));
    let body = {
        let (a, r) = (qr.a.clone(), r.clone());
        move |acc: &Access<'_>| {
            let av = a.read(acc, 0..n, 0..n);
            let mut rv = r.write(acc, 0..n, 0..n);
            for j in 0..n {
                rv.rb_mut()
                    .col_mut(j)
                    .subrows_mut(0, j + 1)
                    .copy_from(av.col(j).subrows(0, j + 1));
            }
            Ok(())
        }
    };
    let t = flow.add(
        g,
        Task::new(format!("{GEQRF}.r"), with_access(body))
            .stage(GEQRF)
            .cost(0.0, (std::mem::size_of::<T>() * n * n) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(qr.a.id(), 0..n, 0..n))
                    .write(Region::new(r.id(), 0..n, 0..n)),
            ),
    );
    ids.push(t);
    // The tasks were added in one contiguous run, so the exits follow every
    // writer of `a` and of the T factors.
    let done = subgraph_of(g, &ids).exits;
    let reduction = Reduction::fresh();
    Ok(GeqrfStage {
        r: RFactor {
            r,
            task: t,
            reduction,
        },
        reflectors: Q1uReflectors {
            a: qr.a,
            t: qr.tq,
            b: ib,
            done,
            reduction: Some(reduction),
            basis: std::marker::PhantomData,
        },
    })
}

/// Whether the SVD of an `m x n` (`m >= n`) matrix starts with the QR
/// pre-reduction, for the ratio `ratio` (see [`super::SvdOptions::qr_ratio`]).
pub(super) fn use_qr(m: usize, n: usize, ratio: f64) -> bool {
    n >= 2 && (m as f64) >= ratio * n as f64
}
