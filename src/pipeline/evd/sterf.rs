//! The values-only tridiagonal eigensolver as tasks: LAPACK `dsterf`'s QL/QR
//! iteration as one task ([`sterf()`]), or the values-only divide and conquer
//! ([`stedc_values()`], faster from a few hundred rows on) as a split task,
//! the two halves of its tree side by side, and the root merge, so that the
//! end of an eigenvalues-only run is not one thread's work alone.

use super::sb2st::Tridiagonal;
use super::STERF;
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph};
use crate::linalg::tridiagonal::stedc::values::{Half, RootMerge, RootSplit};
use crate::linalg::tridiagonal::sterf;
use crate::matrix::access::Access;
use crate::matrix::{MatrixId, SharedBand};
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
    values_task(g, tri, "sterf", 30.0, sterf::sterf)
}

/// Adds the values-only divide and conquer on `tri`
/// ([`crate::linalg::tridiagonal::stedc::values::stedc_values`], leaves of at most
/// `leaf_size` rows) as four tasks, so that the two halves of its tree run
/// side by side: `split` (reads the tridiagonal and cuts the tree at its
/// root, or solves it whole when it splits into several blocks), `left` and
/// `right` (the halves), `root` (the root merge). The eigenvalues are
/// bitwise those of `stedc_values`; the returned slot holds them, ascending,
/// once `root` ran.
///
/// Errors: [`crate::Error::InvalidArgument`] for a tridiagonal from another graph.
pub fn stedc_values<T: Scalar>(
    g: &mut TaskGraph<'static>,
    tri: Tridiagonal<T>,
    leaf_size: usize,
) -> Result<Slot<T>> {
    check_owned(g, "the tridiagonal", tri.tasks())?;
    let band = tri.band;
    let n = band.n();
    // The split's pieces, each taken by the task that works on it. They are
    // declared as rows of a pseudo-matrix (0: the values solved whole, 1 and
    // 2: the halves, 3: the root merge), so that a flow derives the edges.
    type Cell<X> = Arc<Mutex<Option<X>>>;
    let pieces = MatrixId::fresh();
    let piece = |rows: std::ops::Range<usize>| Region::new(pieces, rows, 0..1);
    let mut flow = Flow::new();
    let whole: Cell<Vec<T>> = Arc::new(Mutex::new(None));
    let merge: Cell<RootMerge<T>> = Arc::new(Mutex::new(None));
    let halves: [Cell<Half<T>>; 2] = [Arc::new(Mutex::new(None)), Arc::new(Mutex::new(None))];
    let split = {
        let (band, whole, merge, halves) =
            (band.clone(), whole.clone(), merge.clone(), halves.clone());
        with_access(move |acc| {
            let (d, e) = read_tridiagonal(&band, acc, n);
            match RootSplit::new(d, e, leaf_size)? {
                RootSplit::Solved(values) => *whole.lock() = Some(values),
                RootSplit::Halves([left, right], root) => {
                    *halves[0].lock() = Some(left);
                    *halves[1].lock() = Some(right);
                    *merge.lock() = Some(root);
                }
            }
            Ok(())
        })
    };
    let split = flow.add(
        g,
        Task::new("stedc_values.split", split)
            .stage(STERF)
            .cost((4 * n) as f64, (16 * n) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(band.id(), 0..n, 0..n))
                    .write(piece(0..4)),
            ),
    );
    // Stage 2's tasks are not in this flow: the tridiagonal's handle orders them.
    g.succeed(split, &tri.all_done);
    for (i, (cell, name)) in halves
        .iter()
        .zip(["stedc_values.left", "stedc_values.right"])
        .enumerate()
    {
        let cell = cell.clone();
        let body = with_access(move |_| match cell.lock().as_mut() {
            Some(half) => half.solve(),
            None => Ok(()),
        });
        flow.add(
            g,
            Task::new(name, body)
                .stage(STERF)
                .cost(9.0 * (n * n) as f64, (16 * n) as f64)
                .footprint(Footprint::new().write(piece(1 + i..2 + i))),
        );
    }
    let cell = Arc::new(Mutex::new(None));
    let root = {
        let out = cell.clone();
        with_access(move |_| {
            let values = match whole.lock().take() {
                Some(values) => values,
                None => {
                    let take = |c: &Cell<Half<T>>| c.lock().take();
                    match (merge.lock().take(), take(&halves[0]), take(&halves[1])) {
                        (Some(root), Some(left), Some(right)) => root.merge([left, right])?,
                        _ => return Err(crate::Error::NotRun),
                    }
                }
            };
            *out.lock() = Some(values);
            Ok(())
        })
    };
    let task = flow.add(
        g,
        Task::new("stedc_values.root", root)
            .stage(STERF)
            .cost(2.0 * (n * n) as f64, (16 * n) as f64)
            .footprint(Footprint::new().write(piece(0..4))),
    );
    Ok(Slot::new(g, cell, task))
}

/// The diagonal and off-diagonal of the tridiagonal held by `band`.
fn read_tridiagonal<T: Scalar>(
    band: &SharedBand<T>,
    acc: &Access<'_>,
    n: usize,
) -> (Vec<T>, Vec<T>) {
    let view = band.read(acc, 0..n, 0..n);
    let d: Vec<T> = (0..n).map(|i| view.get(i, i)).collect();
    let e: Vec<T> = (1..n).map(|i| view.get(i, i - 1)).collect();
    (d, e)
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
            let (mut d, mut e) = read_tridiagonal(&band, acc, n);
            solve(&mut d, &mut e)?;
            *out.lock() = Some(d);
            Ok(())
        })
    };
    let task = g.add(
        Task::new(name, body)
            .stage(STERF)
            .cost(flops_per_n2 * (n * n) as f64, (16 * n) as f64)
            .footprint(Footprint::new().read(Region::new(band.id(), 0..n, 0..n))),
    );
    g.succeed(task, &tri.all_done);
    Ok(Slot::new(g, cell, task))
}
