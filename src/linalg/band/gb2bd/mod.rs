//! Upper band to upper bidiagonal by bulge chasing with bandwidth tiling: stage
//! 2 of the SVD (Ringoot, Alomairy and Edelman, "Accelerating Bidiagonalization
//! of Banded Matrices through Memory-Aware Bulge-Chasing on GPUs", 2025, arXiv
//! 2510.12705; "seed 000" below).
//!
//! # Passes
//!
//! The bandwidth is removed in passes `b -> b'` ([`Pass`]), `d = b - b'`
//! superdiagonals at a time, until `b' = 1` (seed 000 §IV, Algorithm 1). [`schedule`] gives
//! the default `b -> max(b - TW, 1) -> ... -> 1` with the inner tile width `TW`
//! of one 128-byte cache line ([`tile_width`]: 16 for f64, 32 for f32; seed 000
//! §VI-B); `TW >= b - 1` is a single pass. [`schedule_with`] accepts any
//! schedule function whose passes end at 1.
//!
//! # The task (pass, sweep r, step s)
//!
//! 0-based version of seed 000's geometry (§IV, Algorithm 1, lines 7-8; its
//! 1-based `R` is `r + 1`).
//! Sweep `r` (`0 <= r < n - 1 - b'`, [`num_sweeps`]) reduces row `r` to
//! bandwidth `b'` and chases the bulge it creates down the band in steps
//! `s = 0, 1, ...` while `c_s <= n - 2` ([`steps`]):
//!
//! ```text
//! c_s = r + b' + s b                 pivot column
//! r_s = r (s = 0),  c_s - b (s >= 1) pivot row (r_s = c_{s-1} for s >= 1)
//! (a) right reflector H_R from the row  A[r_s, c_s .. c_s+d]      (length <= d+1)
//!     A[r_s .. c_s+d, c_s .. c_s+d] <- A[...] H_R
//!     A[r_s, c_s] = beta,  A[r_s, c_s+1 .. c_s+d] = 0
//! (b) left reflector H_L from the column  A[c_s .. c_s+d, c_s]    (length <= d+1)
//!     A[c_s .. c_s+d, c_s .. c_s+b+d] <- H_L A[...]
//!     A[c_s, c_s] = beta',  A[c_s+1 .. c_s+d, c_s] = 0
//! ```
//!
//! (all ranges inclusive and clipped at `n - 1`). Step 0 annihilates the `d`
//! outer band entries of row `r`; step `s >= 1` annihilates the `d` entries
//! the previous step's left reflector pushed beyond the band in row `r_s`. Only
//! the first row and column of each bulge is annihilated; the rest is deferred
//! to the later sweeps (seed 000 §IV, "deferred bulges"). Reflectors follow
//! LAPACK `dlarfg` (`H = I - tau v v^T`, `v[0] = 1`); an all-zero tail gives
//! `tau = 0` and the reflector is skipped (never NaN).
//!
//! Every task is an orthogonal equivalence `A <- H_L A H_R`, so with the tasks
//! in sequential order (pass, sweep, step ascending) the bidiagonal is
//! `B = Q2_U^T A Q2_V` with `Q2_U = prod H_L`, `Q2_V = prod H_R` in that order
//! (see [`reflectors`]).
//!
//! # Storage
//!
//! [`UpperBand`]: column-major LAPACK-style band storage with `ku` rows above
//! the diagonal and `kl` below; a pass `b -> b'` needs `ku >= b + d` (the
//! deferred fill reaches `b + d` superdiagonals) and `kl >= d` (the fill a
//! right reflector creates below the diagonal, seed 000 §V): the default
//! schedule needs `b + 2 TW + 1` rows per column, as seed 000 §V says.
//!
//! # Dependencies
//!
//! Within a pass: `(r, s-1) -> (r, s)` and the three-cycle separation of seed
//! 000 §IV-A, `(r-1, min(s+2, last(r-1))) -> (r, s)` ([`fine_preds`], lag
//! [`SWEEP_LAG`] = 3). Tasks the rule leaves unordered have disjoint
//! footprints ([`task_footprint`]), so every topological order gives bitwise
//! the same band and reflectors (checked in the tests, with lag 2 in the final
//! pass as the negative control: it races on the pivot entry). Between passes,
//! [`pass_pred`] gives the one task of each earlier pass a task must follow,
//! so a later pass starts on the columns an earlier one has finished (a full
//! barrier is also valid: [`last_task`] of a pass follows all its tasks and
//! `(0, 0)` precedes all tasks of the next). The grouped grain
//! ([`grouping`]) uses the EVD's super-task construction
//! ([`crate::linalg::band::chase`]): the in-pass rule has the same shape.

mod band;
pub mod grouping;
mod kernel;
pub mod reflectors;
pub mod storage;

pub use band::{GbBandMut, GbBandRef, SharedUpperBand, UpperBand};
#[cfg_attr(not(test), allow(unused_imports))]
pub(crate) use kernel::gb2bd_serial;
pub use kernel::{chase_step, run_pass};
pub use reflectors::{
    apply_q2u, apply_q2vt, Gb2bdReflectors, PassReflectors, PassSide, PassSlots,
    SharedGb2bdReflectors,
};

use crate::{Error, Result, Scalar};
use std::ops::Range;

/// Lag between consecutive sweeps, in steps: sweep `r` step `s` may run with
/// sweep `r - 1` step `s + 3` (seed 000 §IV-A, "three-cycle separation").
pub use crate::linalg::band::chase::SWEEP_LAG;

/// One bandwidth-reduction pass `b -> b'` (seed 000 §IV, Algorithm 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Upper bandwidth at the start of the pass.
    pub b: usize,
    /// Upper bandwidth at its end (`1 <= b' < b`).
    pub b_new: usize,
}

impl Pass {
    /// The pass `b -> b_new`; an error unless `1 <= b_new < b`.
    pub fn new(b: usize, b_new: usize) -> Result<Self> {
        if b_new == 0 || b_new >= b {
            return Err(Error::InvalidArgument(format!(
                "a gb2bd pass must go from b to b' with 1 <= b' < b, got {b} -> {b_new}"
            )));
        }
        Ok(Pass { b, b_new })
    }

    /// Superdiagonals removed, `d = b - b'`; reflectors have length `d + 1`.
    #[inline]
    pub fn d(&self) -> usize {
        self.b - self.b_new
    }
}

/// Inner tile width of seed 000: one 128-byte cache line of `T` (16 for f64,
/// 32 for f32).
pub fn tile_width<T: Scalar>() -> usize {
    (128 / std::mem::size_of::<T>()).max(1)
}

/// The default schedule `b -> max(b - tw, 1) -> ... -> 1` (empty for `b <= 1`).
pub fn schedule(b: usize, tw: usize) -> Vec<Pass> {
    let tw = tw.max(1);
    schedule_with(b, |x| x.saturating_sub(tw).max(1)).expect("b - tw is a valid step")
}

/// The schedule `b -> next(b) -> next(next(b)) -> ... -> 1`; an error if some
/// `next(x)` is not in `[1, x)` (every schedule that reaches 1 is valid, for
/// example `next = |_| 1` is a single pass).
pub fn schedule_with(b: usize, mut next: impl FnMut(usize) -> usize) -> Result<Vec<Pass>> {
    let mut out = Vec::new();
    let mut cur = b;
    while cur > 1 {
        let p = Pass::new(cur, next(cur))?;
        cur = p.b_new;
        out.push(p);
    }
    Ok(out)
}

/// Band storage `(ku, kl)` the passes need: `ku = max(b, max_p (b_p + d_p))`,
/// `kl = max_p d_p` (see [`UpperBand`]). For an empty schedule, `(b, 0)`.
pub fn storage_offsets(b: usize, passes: &[Pass]) -> (usize, usize) {
    let ku = passes.iter().map(|p| p.b + p.d()).fold(b, usize::max);
    let kl = passes.iter().map(Pass::d).max().unwrap_or(0);
    (ku, kl)
}

/// Number of sweeps of a pass on an order-`n` band: `max(n - 1 - b', 0)`.
#[inline]
pub fn num_sweeps(n: usize, pass: Pass) -> usize {
    n.saturating_sub(1 + pass.b_new)
}

/// Number of steps of sweep `r`: the `s` with `r + b' + s b <= n - 2`
/// (0 if the sweep does not exist). Non-increasing in `r`, and consecutive
/// sweeps differ by at most one step.
#[inline]
pub fn steps(n: usize, pass: Pass, r: usize) -> usize {
    if r + pass.b_new + 2 > n {
        0
    } else {
        (n - 2 - r - pass.b_new) / pass.b + 1
    }
}

/// Where task `(r, s)` works (0-based, ends exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gb2bdTaskGeom {
    /// Pivot row of the right reflector, `r_s`.
    pub row: usize,
    /// Pivot column `c_s`; also the pivot row and column of the left reflector.
    pub col: usize,
    /// Length of both reflectors, `min(d + 1, n - c_s)` (at least 2).
    pub len: usize,
    /// End of the columns the left reflector updates, `min(c_s + b + d + 1, n)`.
    pub left_end: usize,
}

impl Gb2bdTaskGeom {
    /// Rows the right reflector updates, `[r_s, c_s + len)`.
    pub fn right_rows(&self) -> Range<usize> {
        self.row..self.col + self.len
    }

    /// Columns of the right reflector (= rows of the left one), `[c_s, c_s + len)`.
    pub fn span(&self) -> Range<usize> {
        self.col..self.col + self.len
    }

    /// Columns the left reflector updates, `[c_s, left_end)`.
    pub fn left_cols(&self) -> Range<usize> {
        self.col..self.left_end
    }
}

/// Geometry of task `(r, s)` of `pass`. Panics if it does not exist.
#[inline]
pub fn task_geom(n: usize, pass: Pass, r: usize, s: usize) -> Gb2bdTaskGeom {
    assert!(
        s < steps(n, pass, r),
        "gb2bd task ({r}, {s}) does not exist for n = {n}, pass {pass:?}"
    );
    let col = r + pass.b_new + s * pass.b;
    let row = if s == 0 { r } else { col - pass.b };
    let len = (pass.d() + 1).min(n - col);
    let left_end = (col + pass.b + pass.d() + 1).min(n);
    Gb2bdTaskGeom {
        row,
        col,
        len,
        left_end,
    }
}

/// The two rectangles `(rows, cols)` task `(r, s)` reads and writes: the right
/// reflector's `right_rows x span` and the left reflector's `span x left_cols`.
pub fn task_regions(n: usize, pass: Pass, r: usize, s: usize) -> [(Range<usize>, Range<usize>); 2] {
    let g = task_geom(n, pass, r, s);
    [(g.right_rows(), g.span()), (g.span(), g.left_cols())]
}

/// Footprint of task `(r, s)`: the bounding box `rows [r_s, c_s + len) x cols
/// [c_s, left_end)` of its two [`task_regions`] (one rectangle, as the graph's
/// footprints are). Boxes of tasks [`fine_preds`] leaves unordered are
/// disjoint: for sweeps `k` apart the later task ends `k (2b - 1) - d` columns
/// before the earlier one starts (tested).
pub fn task_footprint(n: usize, pass: Pass, r: usize, s: usize) -> (Range<usize>, Range<usize>) {
    let g = task_geom(n, pass, r, s);
    (g.row..g.col + g.len, g.col..g.left_end)
}

/// Predecessors of task `(r, s)` within its pass: `(r, s-1)` and
/// `(r-1, min(s + 2, last(r-1)))` when they exist (lag [`SWEEP_LAG`]).
pub fn fine_preds(n: usize, pass: Pass, r: usize, s: usize) -> [Option<(usize, usize)>; 2] {
    fine_preds_lag(n, pass, r, s, SWEEP_LAG)
}

/// [`fine_preds`] with another lag (the tests' negative control uses 2).
pub(crate) fn fine_preds_lag(
    n: usize,
    pass: Pass,
    r: usize,
    s: usize,
    lag: usize,
) -> [Option<(usize, usize)>; 2] {
    let same = (s >= 1).then(|| (r, s - 1));
    let prev = (r >= 1).then(|| (r - 1, (s + lag - 1).min(steps(n, pass, r - 1) - 1)));
    [same, prev]
}

/// The one task of an `earlier` pass that task `(r, s)` of a `later` pass
/// must follow (`None` if no task of the earlier pass needs to precede it),
/// so that passes overlap: a later pass starts on the columns an earlier pass
/// has finished.
///
/// Let the later task's footprint end at row `R1` and column `C1`
/// (exclusive). Every earlier task whose footprint overlaps it starts before
/// both ends, `r_s' < R1` and `c_s' < C1`; the rule orders *all* such tasks
/// before it (a superset, so it is safe). Per sweep `r'` of the earlier pass
/// these are the steps `s' <= s_max(r') = min(floor((C1 - 1 - r' - b') / b),
/// floor((R1 - 1 + b - r' - b') / b), last(r'))` (step 0 needs `r' < R1` and
/// `r' + b' < C1`), and `s_max(r' - 1) <= s_max(r') + 1 <= s_max(r') + 2`, so
/// through the [`fine_preds`] edge `(r', x) <- (r'-1, x+2)` the task
/// `(r*, s_max(r*))` of the last such sweep `r*` implies them all. Add this
/// edge for every earlier pass (checked by brute force in the tests: unordered
/// tasks of the whole multi-pass DAG have disjoint footprints and random
/// topological orders give bitwise the same result).
pub fn pass_pred(
    n: usize,
    earlier: Pass,
    later: Pass,
    r: usize,
    s: usize,
) -> Option<(usize, usize)> {
    let (rows, cols) = task_footprint(n, later, r, s);
    let (r1, c1) = (rows.end, cols.end);
    let ns = num_sweeps(n, earlier);
    // Last sweep whose step 0 starts before both ends: r' < R1, r' + b' < C1.
    let limit = r1.min(c1.checked_sub(earlier.b_new)?);
    let rs = limit.min(ns).checked_sub(1)?;
    let (b, bn) = (earlier.b, earlier.b_new);
    let by_col = (c1 - 1 - rs - bn) / b;
    // Step s' >= 1 has r_s' = c_s' - b < R1, i.e. s' b < R1 + b - r' - b'.
    let by_row = (r1 + b - 1 - rs - bn) / b;
    let last = steps(n, earlier, rs) - 1;
    Some((rs, by_col.min(by_row).min(last)))
}

/// The last task of a pass, `(last sweep, its last step)`: it follows every
/// other task of the pass in the [`fine_preds`] DAG (so an edge from it to the
/// next pass's `(0, 0)` orders the passes). `None` for a pass with no task.
pub fn last_task(n: usize, pass: Pass) -> Option<(usize, usize)> {
    let ns = num_sweeps(n, pass);
    (ns > 0).then(|| (ns - 1, steps(n, pass, ns - 1) - 1))
}

#[cfg(test)]
pub(crate) mod tests;
