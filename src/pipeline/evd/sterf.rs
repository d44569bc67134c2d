//! The values-only tridiagonal eigensolver as a task (LAPACK `dsterf`).

use super::sb2st::Tridiagonal;
use super::TRIDIAG;
use crate::graph::{Footprint, Region, Task, TaskGraph};
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
            sterf::sterf(&mut d, &mut e)?;
            *out.lock() = Some(d);
            Ok(())
        })
    };
    let task = g.add(
        Task::new("tridiag.sterf", body)
            .stage(TRIDIAG)
            .cost((30 * n * n) as f64, (16 * n) as f64)
            .footprint(Footprint::new().read(Region::new(band.id(), 0..n, 0..n))),
    );
    g.succeed(task, &tri.all_done);
    Ok(Slot { cell, task })
}
