//! The values-only tridiagonal eigensolver as a task: LAPACK `dsterf`'s QL/QR
//! iteration ([`sterf()`]) or the values-only divide and conquer
//! ([`stedc_values()`], faster from a few hundred rows on).

use super::sb2st::Tridiagonal;
use super::TRIDIAG;
use crate::graph::{Footprint, Region, Task, TaskGraph};
use crate::linalg::stedc::values;
use crate::linalg::sterf;
use crate::pipeline::task::{check_owned, with_access, Slot};
use crate::{Result, Scalar};
use parking_lot::Mutex;
use std::sync::Arc;

/// Adds the values-only tridiagonal eigensolver (Pal–Walker–Kahan QL/QR, as
/// LAPACK `dsterf`) on `tri`; the returned slot holds the eigenvalues,
/// ascending, once the task ran.
///
/// Errors: [`crate::Error::InvalidArgument`] for a tridiagonal from another graph.
pub fn sterf<T: Scalar>(g: &mut TaskGraph<'static>, tri: Tridiagonal<T>) -> Result<Slot<T>> {
    values_task(g, tri, "tridiag.sterf", 30.0, sterf::sterf)
}

/// Adds the values-only divide and conquer on `tri`
/// ([`crate::linalg::stedc::values::stedc_values`], leaves of at most
/// `leaf_size` rows, on the task's thread); the returned slot holds the
/// eigenvalues, ascending, once the task ran.
///
/// Errors: [`crate::Error::InvalidArgument`] for a tridiagonal from another graph.
pub fn stedc_values<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: Tridiagonal<T>,
    leaf_size: usize,
) -> Result<Slot<T>> {
    values_task(g, tri, "tridiag.stedc_values", 20.0, move |d, e| {
        values::stedc_values(d, e, leaf_size, None)
    })
}

/// The task of either solver: reads the tridiagonal from the band, runs
/// `solve` on its diagonal and off-diagonal (`flops_per_n2` n^2 flops, the
/// cost the scheduler sees) and releases the values through the slot.
fn values_task<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: Tridiagonal<T>,
    name: &'static str,
    flops_per_n2: f64,
    solve: impl Fn(&mut [T], &mut [T]) -> crate::Result<()> + Send + Sync + 'static,
) -> Result<Slot<T>> {
    check_owned(g, "the tridiagonal", tri.tasks())?;
    let band = tri.band;
    let n = band.n();
    let cell = Arc::new(Mutex::new(None));
    let body = {
        let (band, out) = (band.clone(), cell.clone());
        with_access(move |acc| {
            let view = band.read(acc, 0..n, 0..n);
            let mut d: Vec<T> = (0..n).map(|i| view.get(i, i)).collect();
            let mut e: Vec<T> = (1..n).map(|i| view.get(i, i - 1)).collect();
            solve(&mut d, &mut e)?;
            *out.lock() = Some(d);
            Ok(())
        })
    };
    let task = g.add(
        Task::new(name, body)
            .stage(TRIDIAG)
            .cost(flops_per_n2 * (n * n) as f64, (16 * n) as f64)
            .footprint(Footprint::new().read(Region::new(band.id(), 0..n, 0..n))),
    );
    g.succeed(task, &tri.all_done);
    Ok(Slot { cell, task })
}
