//! The Q1 back-transformation of the EVD (Wang et al., PPoPP 2025, §4.3): the stage-1 panel
//! block reflectors `Q_p = I - V_p T_p V_p^T` applied to the eigenvectors, LAPACK
//! `dormqr` (side L, no transpose) on the `V_p` that [`crate::linalg::band::sy2sb`] left
//! below the band.

use crate::linalg::band::sy2sb::{panel_rows, Sy2sbFactors};
use crate::linalg::householder::{apply_block_reflector_left, larft};
use crate::Scalar;
use faer::reborrow::*;
use faer::{Mat, MatMut, MatRef};
use std::ops::Range;

/// `C := Q1 C` (back-transformation, Wang et al., PPoPP 2025, §4.3): applies the panel block
/// reflectors `Q_{P-1}`, ..., `Q_0` in that order (LAPACK `dormqr`, side L, no
/// transpose). Columns of `C` are independent, so a task may pass any column
/// block of the full `C` (see [`apply_q1_left_cols`]).
///
/// * `a_with_vs`: the reduced matrix; read only strictly below the band, at the
///   `V_p` blocks ([`Sy2sbFactors::v`]). The band itself is not read.
/// * `c`: `n x ncols`, read and written.
pub fn apply_q1_left<T: Scalar>(
    a_with_vs: MatRef<'_, T>,
    factors: &Sy2sbFactors<T>,
    mut c: MatMut<'_, T>,
) {
    let n = factors.n();
    assert!(
        a_with_vs.nrows() == n && a_with_vs.ncols() == n,
        "apply_q1_left: a must be n x n"
    );
    assert_eq!(c.nrows(), n, "apply_q1_left: C must have n rows");
    for p in (0..factors.panels()).rev() {
        let r0 = panel_rows(n, factors.b(), p).start;
        apply_block_reflector_left(
            factors.v(a_with_vs, p),
            factors.t(p),
            c.rb_mut().subrows_mut(r0, n - r0),
            false,
        );
    }
}

/// The part of [`apply_q1_left`] for panels `panels` (in reverse order), with
/// their `V_p` given one after the other in `vs`, each the `(n - (p + 1) b) x b`
/// block [`Sy2sbFactors::v`] views, column-major, and the `T_p` side by side in
/// `t` (`b x (P b)`, panel `p` in columns `p b..(p + 1) b`): an out-of-core run
/// reads the `V_p` back from disk a range of panels at a time. Applying the
/// ranges from the last panel down is bitwise [`apply_q1_left`] (the same
/// products on the same values).
pub fn apply_q1_panels<T: Scalar>(
    vs: &[T],
    panels: Range<usize>,
    t: MatRef<'_, T>,
    mut c: MatMut<'_, T>,
) {
    let (n, b) = (c.nrows(), t.nrows());
    let offsets = panel_offsets(n, b, panels.clone());
    assert!(
        vs.len() >= *offsets.last().expect("at least 0") && t.ncols() >= panels.end * b,
        "apply_q1_panels: {} values and {} T columns for panels {panels:?}",
        vs.len(),
        t.ncols()
    );
    for (i, p) in panels.clone().enumerate().rev() {
        let r0 = panel_rows(n, b, p).start;
        let v = MatRef::from_column_major_slice(&vs[offsets[i]..offsets[i + 1]], n - r0, b);
        apply_block_reflector_left(
            v,
            t.subcols(p * b, b),
            c.rb_mut().subrows_mut(r0, n - r0),
            false,
        );
    }
}

/// Offsets of the `V_p` of `panels`, one after the other (see
/// [`apply_q1_panels`]), and their total length last.
pub fn panel_offsets(n: usize, b: usize, panels: Range<usize>) -> Vec<usize> {
    let mut out = Vec::with_capacity(panels.len() + 1);
    let mut acc = 0;
    out.push(0);
    for p in panels {
        acc += (n - panel_rows(n, b, p).start) * b;
        out.push(acc);
    }
    out
}

/// `C[:, cols] := Q1 C[:, cols]`: [`apply_q1_left`] on one column block (one task
/// of a column-split back-transformation; writes only those columns).
pub fn apply_q1_left_cols<T: Scalar>(
    a_with_vs: MatRef<'_, T>,
    factors: &Sy2sbFactors<T>,
    c: MatMut<'_, T>,
    cols: Range<usize>,
) {
    let nrows = c.nrows();
    apply_q1_left(
        a_with_vs,
        factors,
        c.submatrix_mut(0, cols.start, nrows, cols.len()),
    );
}

/// Forms `Q1` explicitly (`n x n`): [`apply_q1_left`] to the identity, skipping the
/// columns each `Q_p` leaves unchanged (like LAPACK `dorgqr`: before `Q_p` is
/// applied the product is the identity outside `[(p+1) b, n)^2`).
pub fn form_q1<T: Scalar>(a_with_vs: MatRef<'_, T>, factors: &Sy2sbFactors<T>) -> Mat<T> {
    let n = factors.n();
    let mut q = Mat::<T>::identity(n, n);
    for p in (0..factors.panels()).rev() {
        let r0 = panel_rows(n, factors.b(), p).start;
        apply_block_reflector_left(
            factors.v(a_with_vs, p),
            factors.t(p),
            q.as_mut().submatrix_mut(r0, r0, n - r0, n - r0),
            false,
        );
    }
    q
}

/// Merged block reflectors of `Q1` for a faster back-transformation (the merge
/// of Wang et al., PPoPP 2025, §4.3 and §5.3, in `T` form): `group` consecutive
/// panels `Q_s ... Q_{s+g-1}` as one `I - V_G T_G V_G^T` with inner dimension
/// `g b` instead of `b`.
///
/// No copy of `V` is needed: with the panel geometry above, the `V_p` of
/// consecutive panels line up on one diagonal, so `V_G` is the `dgeqrf`-layout view
/// `a[(s+1) b.., s b..(s+g) b]` (read strictly below its diagonal). `T_G` is
/// rebuilt by [`larft`] from the `tau`s on the diagonals of the `T_p`
/// (`O(m (g b)^2)` per group).
#[derive(Clone, Debug)]
pub struct Q1Blocks<T> {
    n: usize,
    /// (first panel, number of panels) per block, in panel order.
    groups: Vec<(usize, usize)>,
    b: usize,
    t: Vec<Mat<T>>,
}

impl<T: Scalar> Q1Blocks<T> {
    /// Builds the merged `T_G` for groups of `group` panels (the last group may be
    /// smaller). Reads `factors` and, strictly below the band, `a_with_vs`.
    pub fn new(a_with_vs: MatRef<'_, T>, factors: &Sy2sbFactors<T>, group: usize) -> Self {
        assert!(group >= 1, "group must be at least 1");
        let (n, b) = (factors.n(), factors.b());
        let np = factors.panels();
        let mut groups = Vec::new();
        let mut t = Vec::new();
        let mut s = 0;
        while s < np {
            let g = group.min(np - s);
            let w = g * b;
            let mut tau = Vec::with_capacity(w);
            for p in s..s + g {
                let tp = factors.t(p);
                tau.extend((0..b).map(|j| tp[(j, j)]));
            }
            let v = Self::view(n, b, a_with_vs, s, g);
            let mut tg = Mat::<T>::zeros(w, w);
            larft(v, &tau, tg.as_mut());
            groups.push((s, g));
            t.push(tg);
            s += g;
        }
        Q1Blocks { n, groups, b, t }
    }

    fn view<'a>(n: usize, b: usize, a: MatRef<'a, T>, s: usize, g: usize) -> MatRef<'a, T> {
        let r0 = (s + 1) * b;
        a.submatrix(r0, s * b, n - r0, g * b)
    }

    /// Number of merged blocks.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether there is no block (`Q1 = I`).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// `C := Q1 C`, merged blocks in reverse order. Reads `a_with_vs` strictly
    /// below the band; reads and writes `c` (`n x ncols`; any column block of a
    /// larger `C` may be passed, columns are independent).
    pub fn apply_left(&self, a_with_vs: MatRef<'_, T>, mut c: MatMut<'_, T>) {
        let n = self.n;
        assert_eq!(c.nrows(), n, "Q1Blocks::apply_left: C must have n rows");
        for (k, &(s, g)) in self.groups.iter().enumerate().rev() {
            let r0 = (s + 1) * self.b;
            apply_block_reflector_left(
                Self::view(n, self.b, a_with_vs, s, g),
                self.t[k].as_ref(),
                c.rb_mut().subrows_mut(r0, n - r0),
                false,
            );
        }
    }
}
