//! The singular values of the bidiagonal as a task: the eigenvalues of its
//! Golub–Kahan tridiagonal by the EVD's values-only solver
//! ([`crate::linalg::sterf`]).
//!
//! This stands in for dqds (LAPACK `dlasq1`, being written separately), which
//! computes the singular values of a bidiagonal to high *relative* accuracy;
//! the route here is accurate to `O(eps ||B||)` in absolute terms only, which
//! is what the pipeline's tests check.

use super::gb2bd::Bidiagonal;
use super::BDSVD;
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::sterf::sterf;
use crate::pipeline::task::{check_owned, with_access};
use crate::{Error, Result, Scalar};
use parking_lot::Mutex;
use std::sync::Arc;

/// Where the graph leaves the singular values: empty until the task that
/// fills it has run successfully.
pub struct ValuesSlot<T> {
    pub(super) cell: Arc<Mutex<Option<Vec<T>>>>,
    pub(super) task: TaskId,
}

impl<T: Clone> ValuesSlot<T> {
    /// The values, once the graph ran successfully; [`Error::NotRun`] before
    /// (or after a run that failed before the task).
    pub fn get(&self) -> Result<Vec<T>> {
        self.cell.lock().clone().ok_or(Error::NotRun)
    }

    /// The task that fills the slot.
    pub fn task(&self) -> TaskId {
        self.task
    }
}

/// Singular values of the upper bidiagonal `B` (diagonal `d`, superdiagonal
/// `e`), descending: the `n` largest eigenvalues of the `2n x 2n` Golub–Kahan
/// tridiagonal with zero diagonal and off-diagonal `d_0, e_0, d_1, e_1, ...,
/// d_{n-1}`, whose eigenvalues are `±sigma_i` (Golub & Kahan 1965; LAPACK
/// `dbdsvdx` uses the same matrix). Magnitudes are taken so a zero singular
/// value computed as `-0` or a tiny negative reads as its absolute value.
pub fn bidiagonal_singular_values<T: Scalar>(d: &[T], e: &[T]) -> Result<Vec<T>> {
    let n = d.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut diag = vec![T::zero(); 2 * n];
    let mut off = Vec::with_capacity(2 * n - 1);
    for i in 0..n {
        off.push(d[i]);
        if i + 1 < n {
            off.push(e[i]);
        }
    }
    sterf(&mut diag, &mut off)?;
    let mut s: Vec<T> = diag[n..].iter().map(|x| x.abs()).collect();
    s.sort_by(|x, y| y.partial_cmp(x).expect("finite singular values"));
    Ok(s)
}

/// Adds the task computing the singular values of `bd` (descending) into the
/// returned slot ([`bidiagonal_singular_values`]; a placeholder for dqds).
///
/// Errors: [`Error::InvalidArgument`] for a bidiagonal from another graph.
pub fn singular_values<T: Scalar>(
    g: &mut TaskGraph<'static>,
    bd: Bidiagonal<T>,
) -> Result<ValuesSlot<T>> {
    check_owned(g, "the bidiagonal", &bd.all_done)?;
    let band = bd.band;
    let n = band.n();
    let cell = Arc::new(Mutex::new(None));
    let body = {
        let (band, out) = (band.clone(), cell.clone());
        with_access(move |acc| {
            let mut view = band.read(acc, 0..n, 0..n);
            let d: Vec<T> = (0..n).map(|i| view.get(i, i)).collect();
            let e: Vec<T> = (1..n).map(|i| view.get(i - 1, i)).collect();
            *out.lock() = Some(bidiagonal_singular_values(&d, &e)?);
            Ok(())
        })
    };
    let task = g.add(
        Task::new("bdsvd.gk_sterf", body)
            .stage(BDSVD)
            .cost((120 * n * n) as f64, (32 * n) as f64)
            .footprint(Footprint::new().read(Region::new(band.id(), 0..n, 0..n))),
    );
    g.succeed(task, &bd.all_done);
    Ok(ValuesSlot { cell, task })
}
