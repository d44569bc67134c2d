//! [`super::gebd2`] and [`super::org2r`] on `L` matrices of one shape at
//! once, stored interleaved: entry `(i, j)` of every matrix of the group is
//! one `[T; L]`, so each arithmetic step of the reduction is one SIMD
//! operation across the group. (Seed 002's GPU kernels assume no layout of
//! the batch and give each matrix its own thread block; on a CPU core the
//! SIMD lanes are the parallelism left inside one small matrix, hence this
//! layout, built per group from the matrices' own copies.)
//!
//! Why: at `n <= 32` a column of the trailing matrix is a few SIMD registers
//! long, so the unblocked kernels vectorised along columns spend most of
//! their time in loop heads, tails and horizontal sums (a profile of
//! 10,000 32 x 32 SVDs with vectors had `gebd2` plus `org2r` at about 29%
//! of the solve's samples, at about one flop per cycle). Across the group
//! every loop runs at full width whatever the column length. On 400 such
//! matrices (callgrind, one thread, inclusive counts), `gebd2` went from
//! 72 to 35 million instructions and `org2r` (for `Q` and `P`) from 63 to
//! 26 million; packing and unpacking the groups add 6 million. Applying
//! the reflectors two at a time, as the column-vectorised `org2r` does, did
//! not pay here (more instructions, no faster).
//!
//! The element operations are those of `pack` (`[T; L]` as one SIMD
//! value): left to the compiler, the loops over elements were vectorised
//! across elements, one lane per register, with shuffles on every load and
//! store.
//!
//! Results: every lane goes through the same sequence of scalar operations,
//! whatever `L` and whatever the other lanes hold (no operation mixes lanes,
//! and the safe-range fallback of [`larfg_lanes`] is decided per lane), so a
//! matrix's bidiagonal, `Q` and `P` are bitwise the same in a group of four,
//! of two or alone. They differ from those of the column-vectorised kernels
//! (other summation orders), which is why the batched route sends every
//! matrix of a shape through one of the two, never a mix.

use super::pack::{Arith, Portable};
use crate::linalg::householder::larfg_slice;
use crate::Scalar;

/// `$call` with `$ar` bound to the element arithmetic the CPU runs best:
/// [`super::pack::Avx`] where it has AVX, else [`Portable`].
macro_rules! with_arith {
    (|$ar:ident| $call:expr) => {{
        #[cfg(target_arch = "x86_64")]
        if let Some($ar) = super::pack::Avx::detect() {
            return $call;
        }
        let $ar = Portable;
        $call
    }};
}

/// Matrices reduced at once by the batched route: four `f64` fill an AVX2
/// register (eight `f32` would; four is kept for both, so that the grouping
/// and the remainder handling are the same for both precisions).
pub const LANES: usize = 4;

/// The buffers of [`reduce`] for one group, in interleaved storage (`L`
/// entries per element), reused across groups.
#[derive(Debug)]
pub(super) struct LaneWorkspace<T> {
    a: Vec<T>,
    vr: Vec<T>,
    tauq: Vec<T>,
    taup: Vec<T>,
    d: Vec<T>,
    e: Vec<T>,
    q: Vec<T>,
    p: Vec<T>,
    /// One lane's column, for the safe-range fallback of [`larfg_lanes`].
    column: Vec<T>,
}

impl<T> Default for LaneWorkspace<T> {
    fn default() -> Self {
        LaneWorkspace {
            a: Vec::new(),
            vr: Vec::new(),
            tauq: Vec::new(),
            taup: Vec::new(),
            d: Vec::new(),
            e: Vec::new(),
            q: Vec::new(),
            p: Vec::new(),
            column: Vec::new(),
        }
    }
}

/// `len` interleaved elements of `buf` as `[T; L]`, holding whatever the
/// previous group left: every element the kernels read, they have written
/// first (not zeroing saved a `memset` of 4% of the instructions).
fn packed<T: Scalar, const L: usize>(buf: &mut Vec<T>, len: usize) -> &mut [[T; L]] {
    buf.resize(len * L, T::zero());
    &mut buf.as_chunks_mut::<L>().0[..len]
}

/// The bidiagonal of each working matrix `ws[l].a` (`mt x nt`, `mt >= nt`,
/// loaded by `load_scaled`) into `ws[l].d`, `ws[l].e`, and with `vectors`
/// its `Q` (`mt x nt`) and `P` (`nt x nt`) into `ws[l].q`, `ws[l].p`: what
/// `bidiagonalise` and `form_q_p` compute, for `L` matrices at once. The
/// group's buffers are those of `ws[0]`.
pub(super) fn reduce<T: Scalar, const L: usize>(
    ws: &mut [&mut super::GebrdWorkspace<T>; L],
    mt: usize,
    nt: usize,
    vectors: bool,
) {
    let mut lw = std::mem::take(&mut ws[0].lanes);
    let LaneWorkspace {
        a,
        vr,
        tauq,
        taup,
        d,
        e,
        q,
        p,
        column,
    } = &mut lw;
    let a = packed::<T, L>(a, mt * nt);
    for (l, x) in ws.iter().enumerate() {
        for (y, &v) in a.iter_mut().zip(&x.a[..mt * nt]) {
            y[l] = v;
        }
    }
    let vr = packed::<T, L>(vr, nt * nt);
    let tauq = packed::<T, L>(tauq, nt);
    let taup = packed::<T, L>(taup, nt);
    let d = packed::<T, L>(d, nt);
    let e = packed::<T, L>(e, nt.saturating_sub(1));
    let mut out = Bidiagonal {
        tauq,
        taup,
        d,
        e,
        vr,
    };
    gebd2_lanes::<T, L>(a, mt, nt, &mut out, column);
    let Bidiagonal {
        tauq,
        taup,
        d,
        e,
        vr,
    } = out;
    for (l, x) in ws.iter_mut().enumerate() {
        unpack(&mut x.d, d, l);
        unpack(&mut x.e, e, l);
    }
    if vectors {
        let q = packed::<T, L>(q, mt * nt);
        org2r_lanes::<T, L>(a, mt, tauq, q, mt, mt, nt);
        // P = G_0 .. G_{n-2}: P[0, 0] = 1 and the trailing block is the
        // org2r of the right reflectors (LAPACK `dorgbr` with `vect = 'P'`).
        let p = packed::<T, L>(p, nt * nt);
        p[..nt].fill([T::zero(); L]);
        p[0] = [T::one(); L];
        for j in 1..nt {
            p[j * nt] = [T::zero(); L];
        }
        if nt > 1 {
            org2r_lanes::<T, L>(&vr[1..], nt, taup, &mut p[nt + 1..], nt, nt - 1, nt - 1);
        }
        for (l, x) in ws.iter_mut().enumerate() {
            unpack(&mut x.q[..mt * nt], q, l);
            unpack(&mut x.p[..nt * nt], p, l);
        }
    }
    ws[0].lanes = lw;
}

/// Lane `l` of `src` into `dst`.
fn unpack<T: Scalar, const L: usize>(dst: &mut [T], src: &[[T; L]], l: usize) {
    for (y, x) in dst.iter_mut().zip(src) {
        *y = x[l];
    }
}

/// `sum_k x_k y_k` per lane, with two partial sums (even and odd `k`) added
/// at the end: two independent chains, in a fixed order.
#[inline(always)]
fn dot<T: Scalar, const L: usize, A: Arith>(ar: A, x: &[[T; L]], y: &[[T; L]]) -> [T; L] {
    let mut s0 = [T::zero(); L];
    let mut s1 = [T::zero(); L];
    let (xp, yp) = (x.chunks_exact(2), y.chunks_exact(2));
    let (xr, yr) = (xp.remainder(), yp.remainder());
    for (a, b) in xp.zip(yp) {
        s0 = ar.add_mul(s0, a[0], b[0]);
        s1 = ar.add_mul(s1, a[1], b[1]);
    }
    if let (Some(a), Some(b)) = (xr.first(), yr.first()) {
        s0 = ar.add_mul(s0, *a, *b);
    }
    ar.add(s0, s1)
}

/// [`larfg_slice`] on each lane of `(alpha, x)`: on return `alpha` holds
/// `beta`, `x` the reflector tails, and the `tau` are returned.
///
/// Where the tail's sum of squares is at least `SAFE_MIN / EPS`, no square
/// that underflowed can matter and `beta = -sign(alpha) sqrt(alpha^2 +
/// sum)` is formed directly (the working matrices are scaled so that their
/// largest entry is in `[1, 2)`, so nothing overflows). Any other lane (a
/// zero or tiny tail) is handed to [`larfg_slice`], with its zero-tail and
/// rescaling rules. The decision and the arithmetic depend on the lane's
/// values only.
#[inline(always)]
fn larfg_lanes<T: Scalar, const L: usize, A: Arith>(
    ar: A,
    alpha: &mut [T; L],
    x: &mut [[T; L]],
    column: &mut Vec<T>,
) -> [T; L] {
    let mut tau = [T::zero(); L];
    if x.is_empty() {
        return tau;
    }
    let sum = dot(ar, x, x);
    let safe = T::SAFE_MIN / T::EPS;
    let mut scale = [T::one(); L];
    for l in 0..L {
        let a = alpha[l];
        if sum[l] >= safe {
            let h = (a * a + sum[l]).sqrt();
            let beta = if a >= T::zero() { -h } else { h };
            tau[l] = (beta - a) / beta;
            scale[l] = T::one() / (a - beta);
            alpha[l] = beta;
        } else {
            column.clear();
            column.extend(x.iter().map(|v| v[l]));
            tau[l] = larfg_slice(&mut alpha[l], column);
            for (v, &c) in x.iter_mut().zip(column.iter()) {
                v[l] = c;
            }
        }
    }
    // The fallback lanes are multiplied by one: unchanged.
    for v in x.iter_mut() {
        *v = ar.mul(*v, scale);
    }
    tau
}

/// `Z := H Z` per lane, `H = I - tau v v^T`, `v = (1, v_tail)`: `z` holds
/// `ncols` columns of `v_tail.len() + 1` rows, column `j` from `z[j ldz]`.
/// Two columns per pass, so that four dot-product chains are in flight.
#[inline(always)]
fn larf_left_lanes<T: Scalar, const L: usize, A: Arith>(
    ar: A,
    tau: &[T; L],
    v_tail: &[[T; L]],
    z: &mut [[T; L]],
    ldz: usize,
    ncols: usize,
) {
    let rows = v_tail.len() + 1;
    let mut j = 0;
    while j + 1 < ncols {
        let (c0, c1) = z[j * ldz..].split_at_mut(ldz);
        let (c0, c1) = (&mut c0[..rows], &mut c1[..rows]);
        let s0 = dot(ar, &c0[1..], v_tail);
        let s1 = dot(ar, &c1[1..], v_tail);
        reflect_column(ar, tau, v_tail, c0, s0);
        reflect_column(ar, tau, v_tail, c1, s1);
        j += 2;
    }
    if j < ncols {
        let c = &mut z[j * ldz..j * ldz + rows];
        let s = dot(ar, &c[1..], v_tail);
        reflect_column(ar, tau, v_tail, c, s);
    }
}

/// `c := c - tau v (c^T v)` per lane, `v = (1, v_tail)`, with `s` the
/// tail's part of `c^T v` (a function, not a closure, so that it is
/// compiled with the instruction set of the kernel that inlines it).
#[inline(always)]
fn reflect_column<T: Scalar, const L: usize, A: Arith>(
    ar: A,
    tau: &[T; L],
    v_tail: &[[T; L]],
    c: &mut [[T; L]],
    s: [T; L],
) {
    let (c0, rest) = c.split_first_mut().expect("rows >= 1");
    let t = ar.mul(*tau, ar.add(*c0, s));
    *c0 = ar.sub(*c0, t);
    for (x, v) in rest.iter_mut().zip(v_tail) {
        *x = ar.sub_mul(*x, t, *v);
    }
}

/// Rows per block of [`larf_right_lanes`]: eight elements of `w` stay in
/// registers (eight of the sixteen AVX2 registers).
const RIGHT_ROWS: usize = 8;

/// `Y := Y H` per lane, `H = I - tau v v^T`, `v = (1, v_tail)`: `y` holds
/// `v_tail.len() + 1` columns of `k` rows, column `j` from `y[j ldy]`.
/// By blocks of [`RIGHT_ROWS`] rows: the block's `w = Y v` (column by
/// column, in registers), then `Y -= tau w v^T` on the block while it is in
/// L1. Each entry sees the operations of the column-by-column order.
#[inline(always)]
fn larf_right_lanes<T: Scalar, const L: usize, A: Arith>(
    ar: A,
    tau: &[T; L],
    v_tail: &[[T; L]],
    y: &mut [[T; L]],
    ldy: usize,
    k: usize,
) {
    let mut r0 = 0;
    while r0 + RIGHT_ROWS <= k {
        reflect_rows::<T, L, A, RIGHT_ROWS>(ar, tau, v_tail, y, ldy, r0);
        r0 += RIGHT_ROWS;
    }
    for r in r0..k {
        reflect_rows::<T, L, A, 1>(ar, tau, v_tail, y, ldy, r);
    }
}

/// [`larf_right_lanes`] on rows `r0..r0 + R`.
#[inline(always)]
fn reflect_rows<T: Scalar, const L: usize, A: Arith, const R: usize>(
    ar: A,
    tau: &[T; L],
    v_tail: &[[T; L]],
    y: &mut [[T; L]],
    ldy: usize,
    r0: usize,
) {
    let mut w: [[T; L]; R] = y[r0..r0 + R].try_into().expect("R rows");
    for (j, v) in v_tail.iter().enumerate() {
        let c = &y[(j + 1) * ldy + r0..(j + 1) * ldy + r0 + R];
        for (s, x) in w.iter_mut().zip(c) {
            *s = ar.add_mul(*s, *v, *x);
        }
    }
    for (x, s) in y[r0..r0 + R].iter_mut().zip(&w) {
        *x = ar.sub_mul(*x, *tau, *s);
    }
    for (j, v) in v_tail.iter().enumerate() {
        let t = ar.mul(*tau, *v);
        let c = &mut y[(j + 1) * ldy + r0..(j + 1) * ldy + r0 + R];
        for (x, s) in c.iter_mut().zip(&w) {
            *x = ar.sub_mul(*x, t, *s);
        }
    }
}

simd_dispatch! {
    /// [`super::gebd2`] per lane on the interleaved `a` (`m x n`, `m >= n`,
    /// column-major), into `out`: diagonal `d`, superdiagonal `e`, left
    /// reflectors in `a` below the diagonal with `tauq`, right reflector
    /// `i`'s tail in `vr[i n + i + 2..]` (`vr` is `n x n`) with `taup`
    /// (`taup[n - 1] = 0`). `column` is the fallback's scratch.
    fn gebd2_lanes / gebd2_lanes_dispatch / gebd2_lanes_body <const L: usize> (
        a: &mut [[T; L]],
        m: usize,
        n: usize,
        out: &mut Bidiagonal<'_, T, L>,
        column: &mut Vec<T>
    )
}

/// What [`gebd2_lanes`] writes besides the reflectors' left tails in `a`
/// (interleaved, `L` lanes per element).
struct Bidiagonal<'a, T, const L: usize> {
    tauq: &'a mut [[T; L]],
    taup: &'a mut [[T; L]],
    d: &'a mut [[T; L]],
    e: &'a mut [[T; L]],
    vr: &'a mut [[T; L]],
}

#[inline(always)]
fn gebd2_lanes_body<T: Scalar, const L: usize>(
    a: &mut [[T; L]],
    m: usize,
    n: usize,
    out: &mut Bidiagonal<'_, T, L>,
    column: &mut Vec<T>,
) {
    with_arith!(|ar| gebd2_with(ar, a, m, n, out, column))
}

/// [`gebd2_lanes`] with the element arithmetic `ar`.
#[inline(always)]
fn gebd2_with<T: Scalar, const L: usize, A: Arith>(
    ar: A,
    a: &mut [[T; L]],
    m: usize,
    n: usize,
    out: &mut Bidiagonal<'_, T, L>,
    column: &mut Vec<T>,
) {
    let Bidiagonal {
        tauq,
        taup,
        d,
        e,
        vr,
    } = out;
    assert!(m >= n && a.len() >= m * n && vr.len() >= n * n);
    for i in 0..n {
        // Left reflector: annihilate a[i+1.., i], then update columns i+1..
        // (rows i..), which start at right[i].
        let (left, right) = a.split_at_mut((i + 1) * m);
        let (alpha, tail) = left[i * m + i..].split_first_mut().expect("i < m");
        tauq[i] = larfg_lanes(ar, alpha, tail, column);
        d[i] = *alpha;
        if i + 1 == n {
            taup[i] = [T::zero(); L];
            break;
        }
        larf_left_lanes(ar, &tauq[i], tail, &mut right[i..], m, n - i - 1);
        // Right reflector on row i, columns i+1..; its tail goes to column i
        // of vr (a row of `a` is strided).
        let mut alpha = a[(i + 1) * m + i];
        let vt = &mut vr[i * n + i + 2..(i + 1) * n];
        for (k, x) in vt.iter_mut().enumerate() {
            *x = a[(i + 2 + k) * m + i];
        }
        taup[i] = larfg_lanes(ar, &mut alpha, vt, column);
        e[i] = alpha;
        let trail = &mut a[(i + 1) * m + i + 1..];
        larf_right_lanes(ar, &taup[i], vt, trail, m, m - i - 1);
    }
}

simd_dispatch! {
    /// [`super::org2r`] per lane: `Q = H_0 .. H_{k-1}` (its first `k`
    /// columns, `r` rows) into `q` (column `j` from `q[j ldq]`); reflector
    /// `j` has `v[0] = 1` at row `j` and its tail in `v[j ldv + j + 1..j ldv
    /// + r]`. Backward accumulation.
    fn org2r_lanes / org2r_lanes_dispatch / org2r_lanes_body <const L: usize> (
        v: &[[T; L]],
        ldv: usize,
        tau: &[[T; L]],
        q: &mut [[T; L]],
        ldq: usize,
        r: usize,
        k: usize
    )
}

#[inline(always)]
fn org2r_lanes_body<T: Scalar, const L: usize>(
    v: &[[T; L]],
    ldv: usize,
    tau: &[[T; L]],
    q: &mut [[T; L]],
    ldq: usize,
    r: usize,
    k: usize,
) {
    with_arith!(|ar| org2r_with(ar, v, ldv, tau, q, ldq, r, k))
}

/// [`org2r_lanes`] with the element arithmetic `ar`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn org2r_with<T: Scalar, const L: usize, A: Arith>(
    ar: A,
    v: &[[T; L]],
    ldv: usize,
    tau: &[[T; L]],
    q: &mut [[T; L]],
    ldq: usize,
    r: usize,
    k: usize,
) {
    for j in (0..k).rev() {
        let tail = &v[j * ldv + j + 1..j * ldv + r];
        if j + 1 < k {
            larf_left_lanes(
                ar,
                &tau[j],
                tail,
                &mut q[(j + 1) * ldq + j..],
                ldq,
                k - j - 1,
            );
        }
        // Column j of Q is H_j e_j: zero above row j.
        let c = &mut q[j * ldq..j * ldq + r];
        c[..j].fill([T::zero(); L]);
        for l in 0..L {
            c[j][l] = T::one() - tau[j][l];
        }
        let minus_tau = tau[j].map(|t| -t);
        for (x, y) in c[j + 1..].iter_mut().zip(tail) {
            *x = ar.mul(minus_tau, *y);
        }
    }
}
