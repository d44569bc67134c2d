//! Dense symmetric to band reduction (stage 1 of the two-stage EVD, Wang et
//! al., "Improving Tridiagonalization Performance on GPU Architectures", PPoPP
//! 2025, §2.3; LAPACK `dsytrd_sy2sb`, lower case).
//!
//! # Geometry
//!
//! `A` is `n x n`; only its lower triangle is read or written (the strict upper
//! triangle may hold garbage: diagonal tiles are read and updated on their lower
//! triangle only). With half-bandwidth `b`, panel `p` (for
//! `p < panel_count(n, b)`) is
//!
//! * columns `[p b, p b + b)` ([`panel_cols`]), rows `[(p+1) b, n)` ([`panel_rows`]),
//!   `m_p = n - (p+1) b >= 2` rows (the last panel may have `m_p < b`);
//! * factored as `A[rows, cols] = Q_p R_p` with `Q_p = I - V_p T_p V_p^T`
//!   ([`panel_kernel`]); `R_p` stays on and above the panel's diagonal (it is part
//!   of the band) and `V_p` stays strictly below it, like `dgeqrf`;
//! * followed by the two-sided update of `A22 = A[(p+1)b.., (p+1)b..]`
//!   (Wang et al., PPoPP 2025, §2.3, Eq. (1)):
//!   `X = A22 V T` ([`symm_tile_row`]), `M = T^T V^T X`, `W = X - 1/2 V M`
//!   ([`form_w`]), `A22 -= V W^T + W V^T` ([`syr2k_tile`]).
//!
//! The update is delayed over groups of consecutive panels (module `group`,
//! [`Sy2sbTuning::group`]): each panel's `X` is corrected for the group's
//! earlier panels ([`correct_x`]), its own columns are brought up to date
//! before its QR ([`update_next_panel`]), and the rest of the trailing matrix
//! gets one SYR2K per group, of inner dimension `2 g b`.
//!
//! After all panels, `B = Q1^T A Q1` with `Q1 = Q_0 Q_1 ... Q_{P-1}` is the band
//! `|i - j| <= b` of `A`'s lower triangle ([`extract_band`]); everything strictly
//! below the band holds the `V_p`.
//!
//! # Tiles
//!
//! The trailing update is split on the global tile grid of size `nb` (a multiple
//! of `b`): [`trailing_blocks`] gives the row (= column) blocks of `A22`, i.e. the
//! grid blocks clipped to `[(p+1) b, n)`. The kernels take exactly the views
//! their task reads or writes, and the vectors `V` (explicit, with its zeros and
//! unit diagonal) and `X`/`W` live in per-panel workspaces indexed by
//! `row - (p+1) b`: `V` in an `m_p x b` one, `X`/`W` in the middle of an
//! `m_p x 3b` one laid out `[V W V]` by [`form_w`], so that every SYR2K tile
//! reads its `[V_i W_i]` and `[W_j V_j]` as views of it.

use crate::linalg::householder::panel_qr::panel_kernel;
use crate::matrix::SymBand;
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::ops::Range;

mod group;
pub use group::{correct_x, form_w_in_group, panel_groups, update_next_panel, Sy2sbTuning};

use BlockStructure::Rectangular as Rect;

/// Number of panels of the reduction of an `n x n` matrix to half-bandwidth `b`:
/// the `p` with `(p+1) b <= n - 2` (a one-row panel has nothing to annihilate).
pub fn panel_count(n: usize, b: usize) -> usize {
    assert!(b >= 1, "bandwidth must be at least 1");
    if n < 2 {
        0
    } else {
        (n - 2) / b
    }
}

/// Columns of panel `p`: `[p b, (p+1) b)`.
pub fn panel_cols(b: usize, p: usize) -> Range<usize> {
    p * b..(p + 1) * b
}

/// Rows of panel `p` (and rows/columns of its trailing matrix `A22`): `[(p+1) b, n)`.
pub fn panel_rows(n: usize, b: usize, p: usize) -> Range<usize> {
    (p + 1) * b..n
}

/// The row blocks (equally the column blocks) of panel `p`'s trailing matrix:
/// the global grid blocks `[k nb, (k+1) nb)` clipped to `[(p+1) b, n)`, in order.
/// Since `nb` is a multiple of `b`, every block except possibly the last has a
/// length that is a multiple of `b`.
pub fn trailing_blocks(n: usize, b: usize, p: usize, nb: usize) -> Vec<Range<usize>> {
    assert!(
        nb >= b && nb.is_multiple_of(b),
        "tile size nb must be a multiple of b"
    );
    let mut out = Vec::new();
    let mut start = (p + 1) * b;
    while start < n {
        let end = ((start / nb + 1) * nb).min(n);
        out.push(start..end);
        start = end;
    }
    out
}

/// The compact-WY factors of stage 1: `Q1 = Q_0 ... Q_{P-1}`,
/// `Q_p = I - V_p T_p V_p^T`.
///
/// `T_p` (`b x b`, upper triangular, `tau_j` on its diagonal) is held here; `V_p`
/// lives in the reduced matrix, strictly below the diagonal of the block
/// `A[panel_rows(n, b, p), panel_cols(b, p)]` ([`Sy2sbFactors::v`]).
#[derive(Clone, Debug)]
pub struct Sy2sbFactors<T> {
    n: usize,
    b: usize,
    t: Vec<Mat<T>>,
}

impl<T: Scalar> Sy2sbFactors<T> {
    /// Assembles the factors of a reduction of order `n`, bandwidth `b`, from the
    /// `T_p` in panel order (for a task graph that computed them itself).
    pub fn new(n: usize, b: usize, t: Vec<Mat<T>>) -> Self {
        assert_eq!(t.len(), panel_count(n, b), "one T factor per panel");
        assert!(t.iter().all(|t| t.nrows() == b && t.ncols() == b));
        Sy2sbFactors { n, b, t }
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Half-bandwidth.
    pub fn b(&self) -> usize {
        self.b
    }

    /// Number of panels (= number of block reflectors).
    pub fn panels(&self) -> usize {
        self.t.len()
    }

    /// `T_p` (`b x b`, upper triangular).
    pub fn t(&self, p: usize) -> MatRef<'_, T> {
        self.t[p].as_ref()
    }

    /// `V_p` as a view into the reduced matrix `a`: the `m_p x b` block
    /// `a[panel_rows, panel_cols]`, read strictly below its diagonal only (unit
    /// diagonal implicit, see [`crate::linalg::householder`]).
    pub fn v<'a>(&self, a: MatRef<'a, T>, p: usize) -> MatRef<'a, T> {
        let rows = panel_rows(self.n, self.b, p);
        let cols = panel_cols(self.b, p);
        a.submatrix(rows.start, cols.start, rows.len(), cols.len())
    }
}

/// One row block of `X = A22 V T` (task "symm", row block `i` of
/// [`trailing_blocks`]; a SYMM that reads only the lower triangle of `A22`).
///
/// Let the block be global rows `[s, e)`, `r0 = (p+1) b`, `i0 = s - r0`,
/// `li = e - s`, and `m = n - r0`.
///
/// * `a_row`: `A[s..e, r0..e]` (`li x (i0 + li)`), read: the tiles left of the
///   diagonal and the diagonal tile, whose strict upper triangle is not read.
/// * `a_col`: `A[e..n, s..e]` (`(m - i0 - li) x li`), read: the tiles below the
///   diagonal tile, used transposed.
/// * `v`: the explicit `V_p` workspace, all `m x b` of it, read.
/// * `t`: `T_p`, read (upper triangle).
/// * `x_i`: rows `[i0, i0 + li)` of the `m x b` `X` workspace, written.
pub fn symm_tile_row<T: Scalar>(
    a_row: MatRef<'_, T>,
    a_col: MatRef<'_, T>,
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    x_i: MatMut<'_, T>,
) {
    let li = x_i.nrows();
    let (m, b) = (v.nrows(), v.ncols());
    assert!(
        a_row.nrows() == li && a_row.ncols() >= li,
        "symm_tile_row: a_row shape"
    );
    let i0 = a_row.ncols() - li;
    assert!(
        a_col.ncols() == li && i0 + li + a_col.nrows() == m,
        "symm_tile_row: a_col shape"
    );
    assert!(x_i.ncols() == b && t.nrows() == b && t.ncols() == b);
    if li == 0 {
        return;
    }
    let mut acc = Mat::<T>::zeros(li, b);
    if i0 > 0 {
        matmul(
            acc.as_mut(),
            Accum::Replace,
            a_row.subcols(0, i0),
            v.subrows(0, i0),
            T::one(),
            Par::Seq,
        );
    }
    // Diagonal tile: A_ii V_i = L V_i + (strict L)^T V_i with L its lower triangle.
    let a_ii = a_row.subcols(i0, li);
    let v_i = v.subrows(i0, li);
    tri_matmul(
        acc.as_mut(),
        Rect,
        Accum::Add,
        a_ii,
        BlockStructure::TriangularLower,
        v_i,
        Rect,
        T::one(),
        Par::Seq,
    );
    tri_matmul(
        acc.as_mut(),
        Rect,
        Accum::Add,
        a_ii.transpose(),
        BlockStructure::StrictTriangularUpper,
        v_i,
        Rect,
        T::one(),
        Par::Seq,
    );
    if a_col.nrows() > 0 {
        // `A_col^T V_below` as the transpose of `V_below^T A_col`: with the
        // tiles as a column-major right-hand side, faer's GEMM streams them
        // against the narrow `V^T`; as a transposed left-hand side it packs
        // them first. On the Xeon (model 167), one thread, in cache: 64-67
        // against 36-44 GFLOP/s at these shapes; in the whole sy2sb at
        // n = 2048, f64, about 7% less time on one thread, no change seen on
        // two threads or in f32.
        let mut acc_t = Mat::<T>::zeros(b, li);
        matmul(
            acc_t.as_mut(),
            Accum::Replace,
            v.subrows(i0 + li, a_col.nrows()).transpose(),
            a_col,
            T::one(),
            Par::Seq,
        );
        for j in 0..b {
            for i in 0..li {
                acc[(i, j)] += acc_t[(j, i)];
            }
        }
    }
    tri_matmul(
        x_i,
        Rect,
        Accum::Replace,
        acc.as_ref(),
        Rect,
        t,
        BlockStructure::TriangularUpper,
        T::one(),
        Par::Seq,
    );
}

/// Turns `X = A22 V T` into `W = X - 1/2 V (T^T V^T X)` in place (task "form_w";
/// needs all of `X`, `O(m b^2)` work) and lays out the panel's `[V W V]`.
///
/// * `vwv`: the `m x 3b` workspace: columns `b..2b` hold `X` on entry and `W`
///   on return; columns `0..b` and `2b..3b` are written with `V`, so that
///   [`syr2k_tile`] takes `[V_i W_i]` (columns `0..2b`) and `[W_j V_j]`
///   (columns `b..3b`) as views instead of packing them per tile.
/// * `v`: the explicit `V_p` workspace (`m x b`), read.
/// * `t`: `T_p`, read (upper triangle).
pub fn form_w<T: Scalar>(mut vwv: MatMut<'_, T>, v: MatRef<'_, T>, t: MatRef<'_, T>) {
    let (m, b) = (v.nrows(), v.ncols());
    assert!(
        vwv.nrows() == m && vwv.ncols() == 3 * b,
        "form_w: the workspace must be m x 3b"
    );
    if m == 0 || b == 0 {
        return;
    }
    w_from_x(vwv.rb_mut().subcols_mut(b, b), v, t);
    vwv.rb_mut().subcols_mut(0, b).copy_from(v);
    vwv.rb_mut().subcols_mut(2 * b, b).copy_from(v);
}

/// `X := X - 1/2 V (T^T V^T X)` in place (`x`, `v`: `m x b`; `t` upper
/// triangular): `W` of Wang et al., PPoPP 2025, Eq. (1).
fn w_from_x<T: Scalar>(x: MatMut<'_, T>, v: MatRef<'_, T>, t: MatRef<'_, T>) {
    let b = v.ncols();
    let mut p = Mat::<T>::zeros(b, b);
    matmul(
        p.as_mut(),
        Accum::Replace,
        v.transpose(),
        x.rb(),
        T::one(),
        Par::Seq,
    );
    let mut mm = Mat::<T>::zeros(b, b);
    tri_matmul(
        mm.as_mut(),
        Rect,
        Accum::Replace,
        t.transpose(),
        BlockStructure::TriangularLower,
        p.as_ref(),
        Rect,
        T::one(),
        Par::Seq,
    );
    matmul(x, Accum::Add, v, mm.as_ref(), T::of(-0.5), Par::Seq);
}

/// Two-sided update of one lower tile `A_ij -= V_i W_j^T + W_i V_j^T` (task
/// "syr2k", row block `i` >= column block `j` of [`trailing_blocks`]), as one
/// GEMM of inner dimension `2b`: `A_ij -= [V_i W_i] [W_j V_j]^T`. `C` is read
/// and written once, and the wider inner dimension runs closer to the GEMM
/// peak than two products of inner dimension `b`.
///
/// * `a_ij`: the tile `A[rows_i, rows_j]`, read and written. If `diagonal`
///   (`i == j`), only its lower triangle (with the diagonal) is read and written.
/// * `vw_i`: `[V_i W_i]`, rows `rows_i - r0` of columns `0..2b` of [`form_w`]'s
///   `[V W V]` workspace, read.
/// * `wv_j`: `[W_j V_j]`, rows `rows_j - r0` of its columns `b..3b`, read.
pub fn syr2k_tile<T: Scalar>(
    mut a_ij: MatMut<'_, T>,
    vw_i: MatRef<'_, T>,
    wv_j: MatRef<'_, T>,
    diagonal: bool,
) {
    assert!(vw_i.nrows() == a_ij.nrows() && wv_j.nrows() == a_ij.ncols());
    assert_eq!(
        vw_i.ncols(),
        wv_j.ncols(),
        "syr2k_tile: [V W] and [W V] widths"
    );
    if diagonal {
        assert_eq!(a_ij.nrows(), a_ij.ncols(), "diagonal tile must be square");
        tri_matmul(
            a_ij.rb_mut(),
            BlockStructure::TriangularLower,
            Accum::Add,
            vw_i,
            Rect,
            wv_j.transpose(),
            Rect,
            -T::one(),
            Par::Seq,
        );
    } else {
        matmul(
            a_ij.rb_mut(),
            Accum::Add,
            vw_i,
            wv_j.transpose(),
            -T::one(),
            Par::Seq,
        );
    }
}

/// Sequential reference driver: reduces the symmetric `a` (lower triangle read) to
/// half-bandwidth `b` with the default [`Sy2sbTuning`] (what the task graph
/// computes), see [`sy2sb_reference_grouped`].
pub fn sy2sb_reference<T: Scalar>(a: MatMut<'_, T>, b: usize, nb: usize) -> Sy2sbFactors<T> {
    sy2sb_reference_grouped(a, b, nb, Sy2sbTuning::default().group)
}

/// Sequential reference driver with the trailing updates delayed over groups
/// of `group` panels (module `group`): calls [`update_next_panel`],
/// [`panel_kernel`], [`symm_tile_row`] and [`form_w_in_group`] panel by
/// panel (symm rows in order), then [`syr2k_tile`] on the tiles of the group's
/// last panel's [`trailing_blocks`] (tile size `nb`, a multiple of `b`),
/// column by column.
///
/// On return the band of `a` holds `B` (read it with [`extract_band`]) and the
/// `V_p` are strictly below it. `n <= b + 1` is already a band: nothing is done.
pub fn sy2sb_reference_grouped<T: Scalar>(
    mut a: MatMut<'_, T>,
    b: usize,
    nb: usize,
    group: usize,
) -> Sy2sbFactors<T> {
    let n = a.nrows();
    assert_eq!(n, a.ncols(), "sy2sb: matrix must be square");
    assert!(
        b >= 1 && nb >= b && nb.is_multiple_of(b),
        "sy2sb: need b >= 1 and nb a multiple of b"
    );
    let np = panel_count(n, b);
    let mut v_ws = Mat::<T>::zeros(n, b);
    let mut x_ws = Mat::<T>::zeros(n, 3 * b * group.max(1));
    let mut ts = Vec::with_capacity(np);
    for panels in panel_groups(np, group) {
        let (g, r0) = (panels.len(), (panels.start + 1) * b);
        let mut ws = x_ws.as_mut().submatrix_mut(0, 0, n - r0, 3 * g * b);
        for (k, p) in panels.clone().enumerate() {
            let (rp, kb) = ((p + 1) * b, k * b);
            let m = n - rp;
            if k > 0 {
                let rows = n - p * b;
                update_next_panel(
                    a.rb_mut().submatrix_mut(p * b, p * b, rows, b),
                    ws.rb().submatrix(kb - b, 0, rows, kb),
                    ws.rb().submatrix(kb - b, g * b, rows, kb),
                );
            }
            let mut t = Mat::<T>::zeros(b, b);
            let mut v = v_ws.as_mut().subrows_mut(0, m);
            panel_kernel(
                a.rb_mut().submatrix_mut(rp, p * b, m, b),
                t.as_mut(),
                v.rb_mut(),
            );
            for blk in &trailing_blocks(n, b, p, nb) {
                let (i0, li) = (blk.start - rp, blk.len());
                symm_tile_row(
                    a.rb().submatrix(blk.start, rp, li, i0 + li),
                    a.rb().submatrix(blk.end, blk.start, n - blk.end, li),
                    v.rb(),
                    t.as_ref(),
                    ws.rb_mut().submatrix_mut(kb + i0, g * b + kb, li, b),
                );
            }
            form_w_in_group(ws.rb_mut().subrows_mut(kb, m), v.rb(), t.as_ref(), g, k);
            ts.push(t);
        }
        let last = panels.end - 1;
        let blocks = trailing_blocks(n, b, last, nb);
        for (jb, cb) in blocks.iter().enumerate() {
            for rb in &blocks[jb..] {
                let (i0, j0) = (rb.start - r0, cb.start - r0);
                syr2k_tile(
                    a.rb_mut()
                        .submatrix_mut(rb.start, cb.start, rb.len(), cb.len()),
                    ws.rb().submatrix(i0, 0, rb.len(), 2 * g * b),
                    ws.rb().submatrix(j0, g * b, cb.len(), 2 * g * b),
                    rb == cb,
                );
            }
        }
    }
    Sy2sbFactors { n, b, t: ts }
}

/// The band `B` (`|i - j| <= b`) of the reduced matrix, every other entry zero
/// (the `V_p` below the band are not copied).
pub fn extract_band<T: Scalar>(a: MatRef<'_, T>, b: usize) -> SymBand<T> {
    SymBand::from_dense_lower(a, b)
}

#[cfg(test)]
mod tests;
