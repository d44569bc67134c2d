//! Bulge chasing: symmetric band (half-bandwidth `b`) to tridiagonal, stage 2
//! of the two-stage EVD (Wang et al., "Improving Tridiagonalization Performance
//! on GPU Architectures", PPoPP 2025, §2.4 and Fig. 3; LAPACK `dsytrd_sb2st`).
//!
//! # The task T(s, m)
//!
//! Sweep `s` (`0 <= s < n - 2`) annihilates column `s` below the first
//! subdiagonal and chases the bulge it creates to the bottom of the band in
//! steps `m = 0, 1, ..., M_s - 1` (Wang et al. §2.4 and Fig. 3, made exact here):
//!
//! ```text
//! r0 = s + 1 + m b,  L = min(b, n - r0),  R = [r0, r0 + L),  M_s = ceil((n - 2 - s) / b)
//! ce = s if m == 0 else r0 - b                         (column annihilated)
//! 1. (v, tau, beta) = larfg(A[R, ce]);  A[r0, ce] = beta;  A[r0+1.., ce] = 0
//! 2. m >= 1:  A[R, ce+1 .. r0] <- H A[R, ce+1 .. r0]       (rest of the left block)
//! 3. A[R, R] <- H A[R, R] H                              (lower triangle, symmetric)
//! 4. D = [r0 + L, min(r0 + L + b, n)):  A[D, R] <- A[D, R] H   (creates the next bulge)
//! ```
//!
//! with `H = I - tau v v^T` (LAPACK `dlarfg` convention, `v[0] = 1`). Step 2 with
//! step 1 is LAPACK's type-2 kernel (`dsb2st_kernels`), step 3 is its type-1/3
//! `dlarfy`, step 4 the `dlarfx('Right')` that opens the next type-2 kernel.
//!
//! Every task is a similarity with `H`, so with the tasks numbered in sequential
//! (sweep-by-sweep) order, `T = H_N ... H_1 B H_1 ... H_N`, i.e.
//! **`T = Q2^T B Q2` with `Q2 = H(0,0) H(0,1) ... H(1,0) ...`** (see
//! [`crate::linalg::back_transform::q2`]).
//!
//! # Dependencies
//!
//! Fine DAG (the spin lock of Wang et al. §4.2 made edges, as LAPACK
//! `dsytrd_sb2st` / SLATE `hb2st` with the tail
//! clamp): `(s, m-1) -> (s, m)` and `(s-1, min(m+2, M_{s-1}-1)) -> (s, m)`
//! ([`fine_preds`]). Coarse DAG of super-tasks ([`SweepGrouping`]): G sweeps by a
//! chunk of C skewed steps; both are checked in the tests below by running many
//! random topological orders and comparing bitwise with the sequential order.

use super::chase::{self, SweepShape};
use crate::linalg::blas::simd::Isa;
use crate::linalg::householder;
use crate::matrix::access::Access;
use crate::matrix::band::{BandMut, SymBand};
use crate::matrix::{MatrixId, SharedMatrix};
use crate::Scalar;
use std::ops::Range;

/// Lag between consecutive sweeps, in steps: sweep `s` runs three tasks behind
/// sweep `s - 1` (Wang et al. §4.2: sweep `i + 1` may start once sweep `i`
/// is at its fourth reflector; the rule is tight).
pub use super::chase::SWEEP_LAG;
pub use reflectors::{
    ReflectorLayout, Reflectors, ReflectorsRef, Sb2stReflectors, SharedReflectors, SlotSink,
};

/// Number of sweeps for a matrix of order `n`: `n - 2` for `n >= 3`, else 0.
#[inline]
pub fn num_sweeps(n: usize) -> usize {
    n.saturating_sub(2)
}

/// `M_s`, the number of steps (tasks) of sweep `s`: `ceil((n - 2 - s) / b)`,
/// 0 when the sweep does not exist.
#[inline]
pub fn steps(n: usize, b: usize, s: usize) -> usize {
    if s + 2 >= n {
        0
    } else {
        (n - 2 - s).div_ceil(b)
    }
}

/// Where task T(s, m) works, in dense coordinates (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskGeom {
    /// First row of the reflector, `s + 1 + m b`.
    pub r0: usize,
    /// Reflector length `L = min(b, n - r0)` (at least 2).
    pub len: usize,
    /// Column annihilated: `s` for `m = 0`, else `r0 - b`.
    pub ce: usize,
    /// Number of rows below the diagonal block updated from the right
    /// (`|D|`, 0 at the bottom of the matrix).
    pub below: usize,
}

impl TaskGeom {
    /// Rows touched: `[r0, r0 + L + |D|)`.
    pub fn rows(&self) -> Range<usize> {
        self.r0..self.r0 + self.len + self.below
    }

    /// Columns touched: `[ce, r0 + L)`.
    pub fn cols(&self) -> Range<usize> {
        self.ce..self.r0 + self.len
    }
}

/// Geometry of task T(s, m). Panics if the task does not exist
/// (`s >= n - 2` or `m >= M_s`).
#[inline]
pub fn task_geom(n: usize, b: usize, s: usize, m: usize) -> TaskGeom {
    assert!(b >= 1, "bandwidth must be at least 1");
    assert!(
        m < steps(n, b, s),
        "task T({s}, {m}) does not exist for n = {n}, b = {b}"
    );
    let r0 = s + 1 + m * b;
    let len = b.min(n - r0);
    let ce = if m == 0 { s } else { r0 - b };
    let below = b.min(n - r0 - len);
    TaskGeom { r0, len, ce, below }
}

/// Footprint of T(s, m) as `(rows, cols)` in dense lower coordinates: rows
/// `[r0, min(r0 + 2b, n))`, columns `[ce, r0 + L)`. Every entry the task reads or
/// writes is in this rectangle (the task reads and writes all it touches).
/// It differs from the unclipped `[r0 - b, r0 + b)` only by clipping: for `m = 0`
/// the columns start at `s`, and they end at `n`.
pub fn task_footprint(n: usize, b: usize, s: usize, m: usize) -> (Range<usize>, Range<usize>) {
    let g = task_geom(n, b, s, m);
    (g.rows(), g.cols())
}

/// Predecessors of T(s, m) in the fine DAG: `(s, m-1)` and
/// `(s-1, min(m+2, M_{s-1}-1))` when they exist (module docs).
pub fn fine_preds(n: usize, b: usize, s: usize, m: usize) -> [Option<(usize, usize)>; 2] {
    fine_preds_lag(n, b, s, m, SWEEP_LAG)
}

fn fine_preds_lag(
    n: usize,
    b: usize,
    s: usize,
    m: usize,
    lag: usize,
) -> [Option<(usize, usize)>; 2] {
    let same = (m >= 1).then(|| (s, m - 1));
    let prev = (s >= 1).then(|| (s - 1, (m + lag - 1).min(steps(n, b, s - 1) - 1)));
    [same, prev]
}

// ---------------------------------------------------------------------------
// Grouped super-tasks
// ---------------------------------------------------------------------------

/// The shape of the sweep DAG of an order-`n`, half-bandwidth-`b` band, for
/// the coarse task graph of bulge chasing ([`SweepGrouping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sb2stShape {
    n: usize,
    b: usize,
}

impl SweepShape for Sb2stShape {
    fn num_sweeps(&self) -> usize {
        num_sweeps(self.n)
    }

    fn steps(&self, s: usize) -> usize {
        steps(self.n, self.b, s)
    }

    fn footprint(&self, s: usize, m: usize) -> (Range<usize>, Range<usize>) {
        task_footprint(self.n, self.b, s, m)
    }
}

/// Super-tasks of G sweeps by C skewed steps ([`crate::linalg::band::chase`]).
/// Super-tasks the grouped DAG leaves unordered have disjoint footprint boxes
/// (checked in the tests), so one rectangle per super-task is a valid
/// footprint for race checking.
pub type SweepGrouping = chase::SweepGrouping<Sb2stShape>;

impl SweepGrouping {
    /// Grouping of the sweeps of an order-`n`, half-bandwidth-`b` band into
    /// groups of `group` (G) sweeps and chunks of `chunk` (C) skewed steps.
    pub fn new(n: usize, b: usize, group: usize, chunk: usize) -> Self {
        assert!(b >= 1, "b must be >= 1");
        Self::with_lag(Sb2stShape { n, b }, group, chunk, SWEEP_LAG)
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.shape().n
    }

    /// Half-bandwidth.
    pub fn b(&self) -> usize {
        self.shape().b
    }
}

/// Runs super-task `(g, c)` of `grouping` on `band`: its tasks T(s, m) in order,
/// storing each reflector in `store` when given.
pub fn run_super_task<T: Scalar>(
    band: &mut BandMut<'_, T>,
    grouping: &SweepGrouping,
    g: usize,
    c: usize,
    mut store: Option<&mut dyn SlotSink<T>>,
) {
    for (s, m) in grouping.tasks(g, c) {
        let out = store.as_mut().map(|st| st.slot_mut(s, m));
        chase_step(band, grouping.b(), s, m, out);
    }
}

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// `dlarfg` on a slice: the crate's [`householder::larfg`] (LAPACK convention:
/// `v[0] = 1` implicit, `beta = -sign(alpha) ||(alpha, x)||`, `tau = 0` for a zero
/// tail, `dlarfg`'s safe-minimum rescaling). On return `alpha = beta` and
/// `x = v[1..]`; returns `tau`.
#[inline]
fn larfg<T: Scalar>(alpha: &mut T, x: &mut [T]) -> T {
    householder::larfg(alpha, faer::ColMut::from_slice_mut(x))
}

/// `a . b` over the common length, four partial sums (fixed order, so results
/// are reproducible).
#[inline(always)]
fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let ca = a.chunks_exact(4);
    let cb = b.chunks_exact(4);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut acc = [T::zero(); 4];
    for (x, y) in ca.zip(cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (&x, &y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// `y += a x` over the common length.
#[inline(always)]
fn axpy<T: Scalar>(y: &mut [T], a: T, x: &[T]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// Small vectors on the stack for `b <= STACK`, else on the heap.
const STACK: usize = 128;

simd_dispatch! {
    /// Task T(s, m) of the module docs on `band` (lower storage with
    /// `ldab >= 2b`): builds the reflector annihilating `A[r0+1.., ce]`, applies it
    /// from the left to the rest of the left block, two-sidedly to the diagonal
    /// block and from the right to the block below (creating the next bulge).
    /// When `out` is given, `[tau, v_1, ..., v_{L-1}]` is written to `out[..L]`.
    ///
    /// Touches exactly the rectangle [`task_footprint`]`(n, b, s, m)` (lower part).
    ///
    /// Compiled for AVX-512 or AVX2 when the CPU has them (its dot products and
    /// `axpy`s vectorise; the crate's baseline is SSE2), with the same results.
    pub fn chase_step / chase_step_simd / chase_step_body (
        band: &mut BandMut<'_, T>,
        b: usize,
        s: usize,
        m: usize,
        out: Option<&mut [T]>
    )
}

#[inline(always)]
fn chase_step_body<T: Scalar>(
    band: &mut BandMut<'_, T>,
    b: usize,
    s: usize,
    m: usize,
    out: Option<&mut [T]>,
) {
    let n = band.n();
    assert!(
        2 * b <= band.ldab(),
        "band storage has ldab = {} < 2b = {}",
        band.ldab(),
        2 * b
    );
    let TaskGeom { r0, len, ce, below } = task_geom(n, b, s, m);

    let mut v_stack = [T::zero(); STACK];
    let mut w_stack = [T::zero(); STACK];
    let mut v_heap;
    let mut w_heap;
    let (v, w) = if b <= STACK {
        (&mut v_stack[..len], &mut w_stack[..len.max(below)])
    } else {
        v_heap = vec![T::zero(); len];
        w_heap = vec![T::zero(); len.max(below)];
        (&mut v_heap[..], &mut w_heap[..])
    };

    // 1. Reflector from A[R, ce] (LAPACK dlarfg); zero the annihilated entries.
    let tau = {
        let col = band.col_mut(r0, ce, len);
        let (a0, x) = col.split_first_mut().expect("len >= 2");
        let tau = larfg(a0, x);
        v[0] = T::one();
        v[1..].copy_from_slice(x);
        x.fill(T::zero());
        tau
    };
    if let Some(out) = out {
        out[0] = tau;
        out[1..len].copy_from_slice(&v[1..]);
    }
    if tau == T::zero() {
        // H = I: steps 2-4 would not change anything (LAPACK dlarfx skips too).
        return;
    }
    // Steps 2-4 on the register-blocked kernel where the block fits it
    // (module `apply`, the same bits on every CPU); the loops below do the
    // rest (`b <= 4` or `b > 64` in f64, `b <= 8` or `b > 128` in f32, and the
    // last short steps of a sweep).
    if apply::apply_reflector(Isa::detect(), band, (r0, len, ce, below), v, tau) {
        return;
    }

    // 2. Left application to the rest of the left block, columns (ce, r0)
    //    (empty for m = 0): col -= tau (v^T col) v.
    for c in ce + 1..r0 {
        let col = band.col_mut(r0, c, len);
        let t = tau * dot(v, col);
        axpy(col, -t, v);
    }

    // 3. Two-sided update of the diagonal block (LAPACK dlarfy, lower):
    //    p = tau B v, w = p - (tau/2)(p^T v) v, B -= v w^T + w v^T.
    let p = &mut w[..len];
    p.fill(T::zero());
    for j in 0..len {
        let col = band.col_mut(r0 + j, r0 + j, len - j);
        let (d, rest) = col.split_first().expect("nonempty");
        let vj = v[j];
        p[j] += *d * vj + dot(rest, &v[j + 1..]);
        axpy(&mut p[j + 1..], vj, rest);
    }
    p.iter_mut().for_each(|x| *x *= tau);
    let half = T::of(0.5);
    let alpha = -(half * tau * dot(p, v));
    axpy(p, alpha, v);
    for j in 0..len {
        let col = band.col_mut(r0 + j, r0 + j, len - j);
        let (vj, wj) = (v[j], p[j]);
        for ((a, &vi), &wi) in col.iter_mut().zip(&v[j..]).zip(&p[j..]) {
            *a -= vi * wj + wi * vj;
        }
    }

    // 4. Right application to the block below, rows D = [r0+L, r0+L+|D|):
    //    y = A[D, R] v, A[D, R] -= tau y v^T. Creates the next bulge.
    if below > 0 {
        let y = &mut w[..below];
        y.fill(T::zero());
        for (j, &vj) in v.iter().enumerate() {
            let col = band.col_mut(r0 + len, r0 + j, below);
            axpy(y, vj, col);
        }
        for (j, &vj) in v.iter().enumerate() {
            let col = band.col_mut(r0 + len, r0 + j, below);
            axpy(col, -(tau * vj), y);
        }
    }
}

/// Sequential bulge chasing (module docs): runs every T(s, m), sweep by sweep.
/// On return the band holds the tridiagonal (diagonal and first subdiagonal)
/// and every other stored entry is exactly zero. With `store`, the reflectors
/// are saved so that `T = Q2^T B Q2` (see [`crate::linalg::back_transform::q2`]).
///
/// `b` is the half-bandwidth of the input (entries with `r - c > b` must be
/// zero) and the storage must have `ldab >= 2b`.
pub fn sb2st_reference<T: Scalar>(
    band: &mut SymBand<T>,
    b: usize,
    store: Option<&mut Sb2stReflectors<T>>,
) {
    let n = band.n();
    assert!(b >= 1, "bandwidth must be at least 1");
    assert!(
        2 * b <= band.ldab(),
        "band storage has ldab = {} < 2b = {}",
        band.ldab(),
        2 * b
    );
    debug_assert!(band.bandwidth_used() <= b, "band is wider than b = {b}");
    let mut slots = store.inspect(|st| {
        assert!(
            st.n() == n && st.b() == b,
            "reflector storage is for another (n, b)"
        );
    });
    let mut view = band.as_band_mut();
    for s in 0..num_sweeps(n) {
        for m in 0..steps(n, b, s) {
            let out = slots.as_mut().map(|st| st.slot_mut(s, m));
            chase_step(&mut view, b, s, m, out);
        }
    }
}

mod apply;
mod lanes;
mod reflectors;
#[cfg(test)]
pub(crate) mod tests;
