//! Delayed trailing updates: the two-sided update of stage 1 applied once
//! per group of consecutive panels, the way LAPACK `dlatrd` delays the
//! updates of `dsytrd` (Dongarra, Hammarling and Sorensen, "Block reduction
//! of matrices to condensed forms for eigenvalue computations", J. Comput.
//! Appl. Math. 27, 1989, §3).
//!
//! Within a group of `g` panels, panel `k`'s `X_k = A^(k) V_k T_k` is formed
//! from the matrix `A` as the group found it, corrected by the group's earlier
//! panels: `A^(k) = A - sum_{l<k} (V_l W_l^T + W_l V_l^T)`, so
//! `X_k = A V_k T_k - sum_{l<k} [V_l (W_l^T Y) + W_l (V_l^T Y)]` with
//! `Y = V_k T_k` ([`correct_x`]). Only panel `k`'s own columns are brought up
//! to date before its QR ([`update_next_panel`]); the rest of the trailing
//! matrix gets one SYR2K of inner dimension `2 g b` for the whole group
//! (`A -= [V W] [W V]^T` over the group's panels, [`super::syr2k_tile`]).
//! The trailing matrix is read and written once per group instead of once
//! per panel, and the GEMMs are `g` times deeper.
//!
//! # Workspace
//!
//! The group's rows are `[r0, n)` with `r0 = (p0 + 1) b` for its first panel
//! `p0`, and its workspace is `(n - r0) x 3 g b`, laid out
//! `[V_0 .. V_{g-1} | W_0 .. W_{g-1} | V_0 .. V_{g-1}]` with panel `k`'s
//! columns valid from row `k b` (its own first row); a group of one panel is
//! the `[V W V]` layout of [`super::form_w`].

use super::w_from_x;
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::ops::Range;

use BlockStructure::Rectangular as Rect;

/// Tuning of stage 1's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sy2sbTuning {
    /// Panels whose trailing updates are applied together (at least 1). Two
    /// halves the passes over the trailing matrix and doubles the SYR2K's
    /// depth, at `O(m b^2)` extra work per panel (the corrections of
    /// [`correct_x`] and [`update_next_panel`]) and a workspace of
    /// `n x 3 g b` (one, where a group of one used two of `n x 4 b`).
    pub group: usize,
}

impl Default for Sy2sbTuning {
    fn default() -> Self {
        Sy2sbTuning { group: 2 }
    }
}

/// The panels `0..np` cut into consecutive groups of `group` (the last may be
/// shorter).
pub fn panel_groups(np: usize, group: usize) -> Vec<Range<usize>> {
    let g = group.max(1);
    (0..np.div_ceil(g))
        .map(|q| q * g..((q + 1) * g).min(np))
        .collect()
}

/// Brings panel `k >= 1` of a group up to date before its QR (task
/// "lookahead"): `A[p b.., p b..(p+1) b] -= sum_{l<k} (V_l W_l^T + W_l V_l^T)`.
///
/// * `a_cols`: `A[p b..n, p b..(p+1) b]`, read and written; its top `b x b`
///   block is on the diagonal, so only its lower triangle is touched.
/// * `v_prev`, `w_prev`: the group's `V_0..V_{k-1}` and `W_0..W_{k-1}`, rows
///   `p b - r0 = (k - 1) b ..` of the workspace (as many rows as `a_cols`).
pub fn update_next_panel<T: Scalar>(
    a_cols: MatMut<'_, T>,
    v_prev: MatRef<'_, T>,
    w_prev: MatRef<'_, T>,
) {
    let b = a_cols.ncols();
    assert!(
        a_cols.nrows() >= b
            && v_prev.nrows() == a_cols.nrows()
            && w_prev.nrows() == a_cols.nrows()
            && v_prev.ncols() == w_prev.ncols(),
        "update_next_panel: shapes"
    );
    let (mut top, mut below) = a_cols.split_at_row_mut(b);
    let (v_top, w_top) = (v_prev.subrows(0, b), w_prev.subrows(0, b));
    for (x, y) in [(v_prev, w_top), (w_prev, v_top)] {
        tri_matmul(
            top.rb_mut(),
            BlockStructure::TriangularLower,
            Accum::Add,
            x.subrows(0, b),
            Rect,
            y.transpose(),
            Rect,
            -T::one(),
            Par::Seq,
        );
        matmul(
            below.rb_mut(),
            Accum::Add,
            x.subrows(b, x.nrows() - b),
            y.transpose(),
            -T::one(),
            Par::Seq,
        );
    }
}

/// `X -= V_prev (W_prev^T Y) + W_prev (V_prev^T Y)` with `Y = V T`: turns
/// `X = A V T` for the matrix as the group found it into `X` for the matrix
/// after the group's earlier panels (all views on panel `k`'s rows).
///
/// * `x`: `m_p x b`, read and written; `v`: `m_p x b`, explicit `V_k`; `t`:
///   `T_k` (upper triangle read).
/// * `v_prev`, `w_prev`: `m_p x (k b)`, the earlier panels' `V` and `W`.
pub fn correct_x<T: Scalar>(
    mut x: MatMut<'_, T>,
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    v_prev: MatRef<'_, T>,
    w_prev: MatRef<'_, T>,
) {
    let (m, b, kb) = (v.nrows(), v.ncols(), v_prev.ncols());
    assert!(
        x.nrows() == m && x.ncols() == b && v_prev.nrows() == m && w_prev.nrows() == m,
        "correct_x: shapes"
    );
    let mut y = Mat::<T>::zeros(m, b);
    tri_matmul(
        y.as_mut(),
        Rect,
        Accum::Replace,
        v,
        Rect,
        t,
        BlockStructure::TriangularUpper,
        T::one(),
        Par::Seq,
    );
    let mut c = Mat::<T>::zeros(kb, b);
    for (left, right) in [(v_prev, w_prev), (w_prev, v_prev)] {
        matmul(
            c.as_mut(),
            Accum::Replace,
            right.transpose(),
            y.as_ref(),
            T::one(),
            Par::Seq,
        );
        matmul(
            x.rb_mut(),
            Accum::Add,
            left,
            c.as_ref(),
            -T::one(),
            Par::Seq,
        );
    }
}

/// [`super::form_w`] for panel `k` of a group of `g` (task "form_w"): corrects
/// `X_k` for the group's earlier panels ([`correct_x`]), turns it into `W_k`
/// in place and writes `V_k` into the workspace's first and third parts.
///
/// * `ws`: rows `k b..` of the group's `(n - r0) x 3 g b` workspace (see the
///   module doc), panel `k`'s rows: read: `V_l`, `W_l` (`l < k`); read and
///   written: `X_k` (columns `g b + k b ..`); written: `V_k`'s two copies.
/// * `v`: the explicit `V_k` (as many rows as `ws`); `t`: `T_k`.
pub fn form_w_in_group<T: Scalar>(
    ws: MatMut<'_, T>,
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    g: usize,
    k: usize,
) {
    let b = v.ncols();
    let (gb, kb) = (g * b, k * b);
    assert!(
        k < g && ws.ncols() == 3 * gb && ws.nrows() == v.nrows(),
        "form_w_in_group: the workspace must be m x 3 g b"
    );
    let m = v.nrows();
    if m == 0 || b == 0 {
        return;
    }
    let (mut vs, rest) = ws.split_at_col_mut(gb);
    let (mut ws_w, mut vs2) = rest.split_at_col_mut(gb);
    {
        let (w_prev, mut x) = ws_w.rb_mut().split_at_col_mut(kb);
        let mut x = x.rb_mut().subcols_mut(0, b);
        if k > 0 {
            correct_x(x.rb_mut(), v, t, vs.rb().subcols(0, kb), w_prev.rb());
        }
        w_from_x(x, v, t);
    }
    vs.rb_mut().subcols_mut(kb, b).copy_from(v);
    vs2.rb_mut().subcols_mut(kb, b).copy_from(v);
}
