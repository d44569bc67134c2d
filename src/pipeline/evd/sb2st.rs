//! Stage 2 of the EVD as tasks (LAPACK `dsytrd_sb2st`): bulge chasing of the
//! band to tridiagonal, the lag between consecutive sweeps encoded as edges.

use super::sy2sb::Band;
use super::SB2ST;
use crate::graph::{Footprint, Region, RunOutcome, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::band::sb2st::{self, SharedReflectors, SweepGrouping};
use crate::matrix::access::Access;
use crate::matrix::SharedBand;
use crate::pipeline::columns::Reduction;
use crate::pipeline::task::{check_owned, subgraph_of, with_access};
use crate::{Result, Scalar};
use std::ops::Range;
use std::sync::Arc;

/// How the bulge chasing is cut into tasks (the grain both bulge chasings
/// share, [`crate::pipeline::ChaseGrain`]).
pub use crate::pipeline::ChaseGrain as Sb2stGrain;

/// The tridiagonal a reduction produces, for [`super::sterf()`] or
/// [`super::stedc()`]: the band storage whose diagonal and first subdiagonal
/// hold it, and the tasks after which each leading block of its columns is final.
pub struct Tridiagonal<T> {
    pub(super) band: Arc<SharedBand<T>>,
    /// For each sweep `i`, the task running T(i, 0).
    pub(super) column_done: Vec<TaskId>,
    /// Every task the whole tridiagonal waits for (the stage's exits and the band
    /// copies it was fed by).
    pub(super) all_done: Vec<TaskId>,
    /// The reduction it comes from (`None`: given whole).
    pub(super) reduction: Option<Reduction>,
    /// The outcome of the graph that writes it (`None`: given whole).
    pub(super) outcome: Option<RunOutcome>,
}

impl<T: Scalar> Tridiagonal<T> {
    /// A symmetric tridiagonal given whole (diagonal `d`, off-diagonal `e` of
    /// length `d.len() - 1`), for the tridiagonal solvers alone.
    ///
    /// Errors: [`crate::Error::Shape`] for mismatched lengths,
    /// [`crate::Error::NonFinite`] for a non-finite entry.
    pub fn from_vectors(d: &[T], e: &[T]) -> Result<Self> {
        let n = d.len();
        if e.len() != n.saturating_sub(1) {
            return Err(crate::Error::Shape(format!(
                "tridiagonal of order {n} needs {} off-diagonal entries, got {}",
                n.saturating_sub(1),
                e.len()
            )));
        }
        let mut band = crate::matrix::SymBand::zeros(n, 1);
        for (i, &x) in d.iter().enumerate() {
            band.set(i, i, x);
        }
        for (i, &x) in e.iter().enumerate() {
            band.set(i + 1, i, x);
        }
        if let Some(i) = d.iter().chain(e).position(|x| !x.is_finite()) {
            let (row, col) = if i < n { (i, i) } else { (i - n + 1, i - n) };
            return Err(crate::Error::NonFinite {
                row,
                col,
                value: format!("{}", if i < n { d[i] } else { e[i - n] }),
            });
        }
        Ok(Tridiagonal {
            band: Arc::new(SharedBand::new(band)),
            column_done: Vec::new(),
            all_done: Vec::new(),
            reduction: None,
            outcome: None,
        })
    }
}

impl<T> Tridiagonal<T> {
    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.band.n()
    }

    /// The band storage holding the tridiagonal, once the run of the graph
    /// that writes it has succeeded (at once for one given whole);
    /// [`crate::Error::NotRun`] before the run, while it runs, and after a
    /// run that failed or was cancelled or a graph dropped unrun.
    pub fn into_band(self) -> Result<crate::matrix::SymBand<T>>
    where
        T: Scalar,
    {
        if let Some(o) = &self.outcome {
            o.check()?;
        }
        Arc::try_unwrap(self.band)
            .map(SharedBand::into_inner)
            .map_err(|_| crate::Error::NotRun)
    }

    /// The tasks after which band columns `0..end` are final (diagonal and
    /// subdiagonal): the task of T(end - 1, 0) — every task touching column `i`
    /// is T(i, 0) or precedes it (tasks of sweeps `s < i` touch column `i` only
    /// at steps `m <= (i - s - 1) / b + 1 <= 2 (i - s)`, which the lag rule orders
    /// before T(i, 0)) — or every task of the stage for the last columns, which
    /// no sweep starts at.
    pub(super) fn columns_final(&self, end: usize) -> Vec<TaskId> {
        match end.checked_sub(1).and_then(|i| self.column_done.get(i)) {
            Some(&t) => vec![t],
            None => self.all_done.clone(),
        }
    }

    pub(super) fn tasks(&self) -> impl Iterator<Item = &TaskId> {
        self.column_done.iter().chain(&self.all_done)
    }
}

/// The stage-2 reflectors, for [`super::back_transform_q2()`], final once every
/// task in `done` has run.
pub struct Q2Reflectors<T> {
    pub(super) store: Arc<SharedReflectors<T>>,
    pub(super) done: Vec<TaskId>,
    /// The reduction they come from (`None`: of a band given whole).
    pub(super) reduction: Option<Reduction>,
}

impl<T: Scalar> Q2Reflectors<T> {
    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.store.layout().n()
    }

    /// Half-bandwidth of the band they reduced.
    pub fn b(&self) -> usize {
        self.store.layout().b()
    }

    /// The reduction they come from.
    pub fn reduction(&self) -> Option<Reduction> {
        self.reduction
    }
}

/// What stage 2 leaves behind.
pub struct Sb2stStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// The tridiagonal.
    pub tridiagonal: Tridiagonal<T>,
    /// The reflectors, when they were asked for.
    pub reflectors: Option<Q2Reflectors<T>>,
}

/// Adds stage 2 (sb2st): bulge chasing of `band` to tridiagonal, each task
/// ordered after the band copies that produce its columns. At the fine grain,
/// one task per (sweep, step), with the lag of three tasks between
/// consecutive sweeps (Haidar, Ltaief and Dongarra, "Parallel reduction
/// to condensed forms for symmetric eigenvalue problems using aggregated
/// fine-grained and memory-aware kernels", SC'11: task (s, m) follows
/// `(s, m-1)` and `(s-1, min(m+2, last(s-1)))`); at the grouped grain,
/// super-tasks with edges from the same rule ([`SweepGrouping`]). With
/// `store_reflectors`, every reflector is kept for the Q2 back-transformation.
///
/// Errors: [`crate::Error::InvalidArgument`] for a band from another graph or a
/// zero group size.
pub fn sb2st<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: Band<T>,
    grain: Sb2stGrain,
    store_reflectors: bool,
) -> Result<Sb2stStage<T>> {
    check_owned(g, "the band", band.feed.iter().map(|(_, t)| t))?;
    if let Sb2stGrain::Grouped { sweeps, steps } = grain {
        if sweeps == 0 || steps == 0 {
            return Err(crate::Error::InvalidArgument(format!(
                "sb2st: groups of {sweeps} sweeps x {steps} steps"
            )));
        }
    }
    let Band {
        band,
        b,
        feed,
        reduction,
    } = band;
    let n = band.n();
    let chase = Chase {
        reflectors: store_reflectors.then(|| Arc::new(SharedReflectors::new(n, b))),
        band,
        b,
        feed,
        step_cost: (12 * b * b) as f64,
        step_bytes: (3 * b * b * std::mem::size_of::<T>()) as f64,
    };
    let (ids, column_done) = match grain {
        Sb2stGrain::Fine => chase.add_fine(g),
        Sb2stGrain::Grouped { sweeps, steps } => chase.add_grouped(g, sweeps, steps),
    };
    let Chase {
        band,
        feed,
        reflectors,
        ..
    } = chase;
    let sub = subgraph_of(g, &ids);
    let mut all_done = sub.exits.clone();
    all_done.extend(feed.iter().map(|&(_, t)| t));
    Ok(Sb2stStage {
        reflectors: reflectors.map(|store| Q2Reflectors {
            store,
            done: sub.exits.clone(),
            reduction,
        }),
        tridiagonal: Tridiagonal {
            band,
            column_done: column_done
                .into_iter()
                .map(|t| t.expect("every sweep has a step 0"))
                .collect(),
            all_done,
            reduction,
            outcome: Some(g.outcome()),
        },
        sub,
    })
}

/// Stage 2 while it is being built.
struct Chase<T> {
    band: Arc<SharedBand<T>>,
    b: usize,
    /// The band copies that produce its columns (stage 1's handle).
    feed: Vec<(Range<usize>, TaskId)>,
    reflectors: Option<Arc<SharedReflectors<T>>>,
    step_cost: f64,
    step_bytes: f64,
}

/// The tasks of the stage in order, and per sweep the task running its step 0.
type ChaseTasks = (Vec<TaskId>, Vec<Option<TaskId>>);

impl<T: Scalar> Chase<T> {
    /// One task per (sweep, step), with the edges of the lag rule
    /// ([`sb2st::fine_preds`]), and after the band copies of its columns
    /// (stage 1's handle). Explicit, not derived from the windows by a
    /// [`Flow`](crate::graph::Flow): a window meets the leftovers of many
    /// earlier windows, and the derived edges, each implied by the rule's
    /// two, made the whole vectors graph at n = 1000 hold 484,064 edges for
    /// 8,681 tasks (11,215 for 1,561 at the grouped grain).
    fn add_fine(&self, g: &mut TaskGraph<'static>) -> ChaseTasks {
        let (n, b) = (self.band.n(), self.b);
        let ns = sb2st::num_sweeps(n);
        let (mut ids, mut column_done) = (Vec::new(), vec![None; ns]);
        // Index in `ids` of each sweep's step 0.
        let mut first = Vec::with_capacity(ns);
        for (s, done) in column_done.iter_mut().enumerate() {
            first.push(ids.len());
            for m in 0..sb2st::steps(n, b, s) {
                let (rows, cols) = sb2st::task_footprint(n, b, s, m);
                let body = {
                    let (band, refl) = (self.band.clone(), self.reflectors.clone());
                    let (rows, cols) = (rows.clone(), cols.clone());
                    move |acc: &Access<'_>| {
                        let mut view = band.write(acc, rows, cols);
                        let mut slots = refl.as_ref().map(|r| r.writer(acc));
                        let out = slots.as_mut().map(|sl| {
                            use sb2st::SlotSink;
                            sl.slot_mut(s, m)
                        });
                        sb2st::chase_step(&mut view, b, s, m, out);
                        Ok(())
                    }
                };
                let producers = band_producers(&self.feed, &cols);
                let mut fp = Footprint::new().write(Region::new(self.band.id(), rows, cols));
                if let Some(r) = &self.reflectors {
                    fp = fp.write(Region::new(
                        r.id(),
                        r.layout().sweep_slots(s, m..m + 1),
                        0..1,
                    ));
                }
                let t = g.add(
                    Task::new(format!("sb2st.sweep[{s}].step[{m}]"), with_access(body))
                        .stage(SB2ST)
                        .cost(self.step_cost, self.step_bytes)
                        .footprint(fp),
                );
                g.succeed(t, &producers);
                for (ps, pm) in sb2st::fine_preds(n, b, s, m).into_iter().flatten() {
                    g.edge(ids[first[ps] + pm], t);
                }
                if m == 0 {
                    *done = Some(t);
                }
                ids.push(t);
            }
        }
        (ids, column_done)
    }

    /// Super-tasks of `sweeps` sweeps by `steps` skewed steps, with the edges of
    /// [`SweepGrouping::preds`]: explicit, because a super-task's footprint is
    /// the bounding window of its steps, wider than what it touches, and edges
    /// derived from it would order super-tasks the lag rule leaves concurrent.
    fn add_grouped(&self, g: &mut TaskGraph<'static>, sweeps: usize, steps: usize) -> ChaseTasks {
        let (n, b) = (self.band.n(), self.b);
        let grouping = Arc::new(SweepGrouping::new(n, b, sweeps, steps));
        let mut first = Vec::with_capacity(grouping.num_groups());
        let (mut ids, mut column_done) = (Vec::new(), vec![None; sb2st::num_sweeps(n)]);
        for gi in 0..grouping.num_groups() {
            first.push(ids.len());
            for c in 0..grouping.num_chunks(gi) {
                let t = self.add_super_task(g, &grouping, gi, c);
                for (pg, pc) in grouping.preds(gi, c).into_iter().flatten() {
                    g.edge(ids[first[pg] + pc], t);
                }
                for (s, _) in grouping.tasks(gi, c).filter(|&(_, m)| m == 0) {
                    column_done[s] = Some(t);
                }
                ids.push(t);
            }
        }
        (ids, column_done)
    }

    /// Chunk `c` of group `gi`, after the band copies of its window.
    fn add_super_task(
        &self,
        g: &mut TaskGraph<'static>,
        grouping: &Arc<SweepGrouping>,
        gi: usize,
        c: usize,
    ) -> TaskId {
        let steps = grouping.tasks(gi, c).count();
        let window = grouping.footprint(gi, c);
        let body = {
            let (band, refl, grouping) =
                (self.band.clone(), self.reflectors.clone(), grouping.clone());
            let window = window.clone();
            move |acc: &Access<'_>| {
                let Some((rows, cols)) = window else {
                    return Ok(());
                };
                let mut view = band.write(acc, rows, cols);
                let mut slots = refl.as_ref().map(|r| r.writer(acc));
                sb2st::run_super_task(
                    &mut view,
                    &grouping,
                    gi,
                    c,
                    slots.as_mut().map(|s| s as &mut dyn sb2st::SlotSink<T>),
                );
                Ok(())
            }
        };
        let mut fp = Footprint::new();
        let mut producers = Vec::new();
        if let Some((rows, cols)) = window {
            producers = band_producers(&self.feed, &cols);
            fp = fp.write(Region::new(self.band.id(), rows, cols));
        }
        if let Some(r) = &self.reflectors {
            for s in grouping.sweeps(gi) {
                let st = grouping.steps_in(gi, c, s);
                fp = fp.write(Region::new(r.id(), r.layout().sweep_slots(s, st), 0..1));
            }
        }
        let t = g.add(
            Task::new(format!("sb2st.group[{gi}].chunk[{c}]"), with_access(body))
                .stage(SB2ST)
                .cost(
                    self.step_cost * steps as f64,
                    self.step_bytes * steps as f64,
                )
                .footprint(fp),
        );
        g.succeed(t, &producers);
        t
    }
}

/// The tasks of `feed` that write band columns overlapping `cols`.
fn band_producers(feed: &[(Range<usize>, TaskId)], cols: &Range<usize>) -> Vec<TaskId> {
    feed.iter()
        .filter(|(c, _)| c.start < cols.end && cols.start < c.end)
        .map(|&(_, t)| t)
        .collect()
}
