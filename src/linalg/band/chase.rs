//! Grouping the fine tasks of a bulge-chasing sweep DAG into super-tasks.
//!
//! Both bulge chasings of the crate — the symmetric band to tridiagonal
//! ([`crate::linalg::band::sb2st`]) and one pass of the upper band to bidiagonal
//! ([`crate::linalg::band::gb2bd`]) — have the same fine DAG: sweep `s` has
//! `M_s` steps (non-increasing in `s`), step `m` follows `(s, m - 1)` and, by
//! the three-cycle separation (Ringoot, Alomairy and Edelman, 2025, §IV-A;
//! Wang et al., PPoPP 2025, §4.2, Algorithm 2),
//! `(s - 1, min(m + lag - 1, M_{s-1} - 1))` with `lag = 3`. A fine task
//! does `O(b^2)` work, a few microseconds at small `b`, so at scale the task
//! overhead dominates: [`SweepGrouping`] groups `G` consecutive sweeps and
//! chunks of `C` skewed steps into one super-task, which runs its
//! fine tasks in sweep order.
//!
//! Super-task `(g, c)` runs, for the sweeps `s = gG + r` (`r = 0..G`), the
//! steps `m in [cC - 3r, (c+1)C - 3r) ∩ [0, M_s)`. Its predecessors are
//! `(g, c - 1)` and `(g - 1, min(c + ceil((lag G - 1) / C), lastchunk(g - 1)))`:
//! every fine edge then runs inside one super-task in order or along a chain
//! of super-task edges (checked by brute force in the tests of both users).
//! Chunks `c = 0..=lastchunk(g)` all exist as nodes even when a few are empty
//! (possible for `C < lag`), so the edges never name a missing node.

use std::ops::Range;

/// Lag between consecutive sweeps, in steps, of both bulge chasings: it fixes
/// the skew of the chunks.
pub const SWEEP_LAG: usize = 3;

/// The shape of one sweep DAG: how many sweeps, how many steps each, and the
/// rectangle each fine task touches.
pub trait SweepShape {
    /// Number of sweeps.
    fn num_sweeps(&self) -> usize;
    /// Steps `M_s` of sweep `s` (non-increasing in `s`, consecutive sweeps
    /// differ by at most one).
    fn steps(&self, s: usize) -> usize;
    /// Bounding box `(rows, cols)` of fine task `(s, m)`.
    fn footprint(&self, s: usize, m: usize) -> (Range<usize>, Range<usize>);
}

/// Super-tasks of `group` sweeps by `chunk` skewed steps over a sweep DAG of
/// shape `S` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepGrouping<S> {
    shape: S,
    group: usize,
    chunk: usize,
    lag: usize,
}

impl<S: SweepShape> SweepGrouping<S> {
    /// Grouping of `shape` into `group` (G) sweeps by `chunk` (C) skewed
    /// steps, with the cross-group edge `ceil((lag G - 1) / C)` chunks ahead:
    /// [`SWEEP_LAG`] is correct, another `lag` only serves the tests' negative
    /// controls (same partition, weaker edge). Panics unless `group`, `chunk`
    /// and `lag` are at least 1.
    pub fn with_lag(shape: S, group: usize, chunk: usize, lag: usize) -> Self {
        assert!(
            group >= 1 && chunk >= 1 && lag >= 1,
            "G, C and the lag must be >= 1"
        );
        SweepGrouping {
            shape,
            group,
            chunk,
            lag,
        }
    }

    /// The shape grouped.
    pub fn shape(&self) -> &S {
        &self.shape
    }

    /// Sweeps per group (G).
    pub fn group_size(&self) -> usize {
        self.group
    }

    /// Skewed steps per chunk (C).
    pub fn chunk_size(&self) -> usize {
        self.chunk
    }

    /// Number of groups, `ceil(num_sweeps / G)`.
    pub fn num_groups(&self) -> usize {
        self.shape.num_sweeps().div_ceil(self.group)
    }

    /// Sweeps of group `g` (the last group may be short).
    pub fn sweeps(&self, g: usize) -> Range<usize> {
        let ns = self.shape.num_sweeps();
        (g * self.group).min(ns)..((g + 1) * self.group).min(ns)
    }

    /// `lastchunk(g) = max_r ceil((M_{gG+r} + 3r) / C) - 1`.
    pub fn last_chunk(&self, g: usize) -> usize {
        let first = g * self.group;
        self.sweeps(g)
            .map(|s| (self.shape.steps(s) + SWEEP_LAG * (s - first)).div_ceil(self.chunk) - 1)
            .max()
            .expect("group has no sweeps")
    }

    /// Number of super-tasks (chunks) of group `g`.
    pub fn num_chunks(&self, g: usize) -> usize {
        self.last_chunk(g) + 1
    }

    /// Total number of super-tasks.
    pub fn num_tasks(&self) -> usize {
        (0..self.num_groups()).map(|g| self.num_chunks(g)).sum()
    }

    /// `ceil((lag G - 1) / C)`: how many chunks group `g - 1` must be ahead.
    pub fn chunk_lag(&self) -> usize {
        (self.lag * self.group - 1).div_ceil(self.chunk)
    }

    /// Steps of sweep `s` (which must belong to group `g`) run by super-task `(g, c)`.
    pub fn steps_in(&self, g: usize, c: usize, s: usize) -> Range<usize> {
        let r = s - g * self.group;
        let ms = self.shape.steps(s);
        let hi = ((c + 1) * self.chunk).saturating_sub(SWEEP_LAG * r).min(ms);
        let lo = (c * self.chunk).saturating_sub(SWEEP_LAG * r).min(hi);
        lo..hi
    }

    /// The super-task `(g, c)` that runs fine task `(s, m)`.
    pub fn locate(&self, s: usize, m: usize) -> (usize, usize) {
        let g = s / self.group;
        (g, (m + SWEEP_LAG * (s - g * self.group)) / self.chunk)
    }

    /// The fine tasks `(s, m)` of super-task `(g, c)`, in execution order.
    pub fn tasks(&self, g: usize, c: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.sweeps(g)
            .flat_map(move |s| self.steps_in(g, c, s).map(move |m| (s, m)))
    }

    /// Predecessors of super-task `(g, c)`: `(g, c-1)` and
    /// `(g-1, min(c + chunk_lag, lastchunk(g-1)))` when they exist.
    pub fn preds(&self, g: usize, c: usize) -> [Option<(usize, usize)>; 2] {
        let same = (c >= 1).then(|| (g, c - 1));
        let prev = (g >= 1).then(|| (g - 1, (c + self.chunk_lag()).min(self.last_chunk(g - 1))));
        [same, prev]
    }

    /// Bounding box `(rows, cols)` of the footprints of the fine tasks of
    /// `(g, c)`, `None` for an empty super-task.
    pub fn footprint(&self, g: usize, c: usize) -> Option<(Range<usize>, Range<usize>)> {
        let mut acc: Option<(Range<usize>, Range<usize>)> = None;
        for s in self.sweeps(g) {
            let ms = self.steps_in(g, c, s);
            if ms.is_empty() {
                continue;
            }
            let (r_first, c_first) = self.shape.footprint(s, ms.start);
            let (r_last, c_last) = self.shape.footprint(s, ms.end - 1);
            let rows = r_first.start.min(r_last.start)..r_first.end.max(r_last.end);
            let cols = c_first.start.min(c_last.start)..c_first.end.max(c_last.end);
            acc = Some(match acc {
                None => (rows, cols),
                Some((r, c)) => (
                    r.start.min(rows.start)..r.end.max(rows.end),
                    c.start.min(cols.start)..c.end.max(cols.end),
                ),
            });
        }
        acc
    }
}
