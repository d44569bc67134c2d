//! The singular values of the bidiagonal as a task (LAPACK `dlasq1`): dqds,
//! which computes them to high relative accuracy ([`crate::linalg::bidiagonal::dqds`]).

use super::gb2bd::Bidiagonal;
use super::BDSDC;
use crate::graph::{Footprint, Region, Task, TaskGraph};
use crate::pipeline::task::{check_owned, with_access, Slot};
use crate::{Result, Scalar};
use parking_lot::Mutex;
use std::sync::Arc;

/// Adds the task computing the singular values of `bd` (descending) into the
/// returned slot, by dqds ([`crate::linalg::bidiagonal::dqds::singular_values`]).
///
/// Errors: [`crate::Error::InvalidArgument`] for a bidiagonal from another graph.
pub fn singular_values<T: Scalar>(
    g: &mut TaskGraph<'static>,
    bd: Bidiagonal<T>,
) -> Result<Slot<T>> {
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
            *out.lock() = Some(crate::linalg::bidiagonal::dqds::singular_values(&d, &e)?);
            Ok(())
        })
    };
    let task = g.add(
        Task::new("dqds", body)
            .stage(BDSDC)
            .cost((120 * n * n) as f64, (32 * n) as f64)
            .footprint(Footprint::new().read(Region::new(band.id(), 0..n, 0..n))),
    );
    // The stage's one task declares its data (the footprint above); there is
    // no earlier task of this stage to derive an edge from, and stage 2's
    // tasks are not in a flow of this stage: the bidiagonal's handle orders
    // them.
    g.succeed(task, &bd.all_done);
    Ok(Slot::new(g, cell, task))
}
