//! QR factorization of a tall panel with its compact-WY factor (LAPACK `dgeqrf`
//! layout + `dlarft`), computed by the recursive column split of Elmroth and
//! Gustavson (LAPACK `dgeqrt3`) down to an unblocked leaf (`dgeqr2`).

use super::{apply_block_reflector_left, larfg, larft};
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, Par};

/// Panels at most this wide are factored column by column (level 2).
/// (8 measured fastest for m = 50000, k in {32, 128}, against 4, 16 and 32.)
const LEAF: usize = 8;

/// QR of the `m x k` panel `a` (any `m`, `k`; `m < k` allowed).
///
/// On return, `a` holds `R` on and above the diagonal and the reflectors `v_j`
/// strictly below it (unit diagonal implicit), as `dgeqrf` leaves them; `tau[j]`
/// is the scalar of `H_j` and `t` (`k x k`) the upper triangular factor with
/// `H_0 ... H_{r-1} = I - V T V^T`, `r = min(m, k)`. Entries `tau[r..k]` and the
/// rows/columns `r..k` of `t` are zero, as is the strictly lower part of `t`.
///
/// Reads and writes `a`; writes `tau[..k]` and all of `t`. Views with a row
/// stride other than 1 are copied to a column-major temporary.
pub fn panel_qr<T: Scalar>(a: MatMut<'_, T>, tau: &mut [T], mut t: MatMut<'_, T>) {
    let (m, k) = (a.nrows(), a.ncols());
    assert!(tau.len() >= k, "panel_qr: tau shorter than the panel width");
    assert!(
        t.nrows() == k && t.ncols() == k,
        "panel_qr: T must be k x k"
    );
    t.fill(T::zero());
    let tau = &mut tau[..k];
    tau.fill(T::zero());
    if a.row_stride() != 1 {
        let mut tmp = a.to_owned();
        panel_qr(tmp.as_mut(), tau, t);
        let mut a = a;
        a.copy_from(tmp.as_ref());
        return;
    }
    let r = m.min(k);
    if r == 0 {
        return;
    }
    let (mut left, right) = a.split_at_col_mut(r);
    qr_rec(
        left.rb_mut(),
        &mut tau[..r],
        t.rb_mut().submatrix_mut(0, 0, r, r),
    );
    if k > r {
        // m < k: bring the remaining columns to R = Q^T A.
        apply_block_reflector_left(left.rb(), t.rb().submatrix(0, 0, r, r), right, true);
    }
}

/// The panel factorisation of the two-stage reductions: [`panel_qr`] of the
/// `m x b` panel, and `V` in explicit form for the tile kernels (which are then
/// plain GEMMs). Stage 1 of both: the EVD's task "panel"
/// ([`crate::linalg::band::sy2sb`]) and the SVD's QR panels and, on the
/// transposed panel, LQ panels ([`crate::linalg::band::ge2gb`]).
///
/// * `panel`: `m x b`, read and written: on return `R` on and above its
///   diagonal, `V` strictly below (unit diagonal implicit), as `dgeqrf` leaves
///   them.
/// * `t`: `b x b`, written with the compact-WY factor `T` of `Q = I - V T V^T`.
/// * `v`: `m x b` workspace, written with `V` in explicit form (zeros above the
///   diagonal, ones on it).
pub fn panel_kernel<T: Scalar>(
    mut panel: MatMut<'_, T>,
    mut t: MatMut<'_, T>,
    mut v: MatMut<'_, T>,
) {
    let (m, b) = (panel.nrows(), panel.ncols());
    assert!(
        v.nrows() == m && v.ncols() == b,
        "panel_kernel: v must be m x b"
    );
    let mut tau = vec![T::zero(); b];
    panel_qr(panel.rb_mut(), &mut tau, t.rb_mut());
    for j in 0..b {
        for i in 0..m {
            v[(i, j)] = if i < j {
                T::zero()
            } else if i == j {
                T::one()
            } else {
                panel[(i, j)]
            };
        }
    }
}

/// Recursive QR of `a` (`m x n`, `m >= n`, row stride 1), building `T` as it goes:
/// `T = [[T11, -T11 (V1^T V2) T22], [0, T22]]` (dgeqrt3; the T-form of the WY merge,
/// Wang et al., PPoPP 2025, §2.1).
fn qr_rec<T: Scalar>(mut a: MatMut<'_, T>, tau: &mut [T], t: MatMut<'_, T>) {
    let (m, n) = (a.nrows(), a.ncols());
    debug_assert!(m >= n);
    if n <= LEAF {
        qr_leaf(a.rb_mut(), tau);
        larft(a.rb(), tau, t);
        return;
    }
    let n1 = n / 2;
    let n2 = n - n1;
    let (tau1, tau2) = tau.split_at_mut(n1);
    let (mut t11, mut t12, mut t21, mut t22) = t.split_at_mut(n1, n1);
    t21.fill(T::zero());
    let (mut left, mut right) = a.split_at_col_mut(n1);
    qr_rec(left.rb_mut(), tau1, t11.rb_mut());
    apply_block_reflector_left(left.rb(), t11.rb(), right.rb_mut(), true);
    let v2 = right.rb_mut().submatrix_mut(n1, 0, m - n1, n2);
    qr_rec(v2, tau2, t22.rb_mut());

    // S = V1[n1..]^T V2, where V2 = right[n1.., :] is unit lower trapezoidal and
    // V1[n1..] is a dense block (strictly below V1's triangle).
    let v1b = left.rb().submatrix(n1, 0, m - n1, n1);
    let v2 = right.rb().submatrix(n1, 0, m - n1, n2);
    let mut s = Mat::<T>::zeros(n1, n2);
    tri_matmul(
        s.as_mut(),
        BlockStructure::Rectangular,
        Accum::Replace,
        v1b.submatrix(0, 0, n2, n1).transpose(),
        BlockStructure::Rectangular,
        v2.submatrix(0, 0, n2, n2),
        BlockStructure::UnitTriangularLower,
        T::one(),
        Par::Seq,
    );
    if m - n1 > n2 {
        matmul(
            s.as_mut(),
            Accum::Add,
            v1b.submatrix(n2, 0, m - n1 - n2, n1).transpose(),
            v2.submatrix(n2, 0, m - n1 - n2, n2),
            T::one(),
            Par::Seq,
        );
    }
    // T12 = -T11 S T22.
    let mut u = Mat::<T>::zeros(n1, n2);
    tri_matmul(
        u.as_mut(),
        BlockStructure::Rectangular,
        Accum::Replace,
        t11.rb(),
        BlockStructure::TriangularUpper,
        s.as_ref(),
        BlockStructure::Rectangular,
        T::one(),
        Par::Seq,
    );
    tri_matmul(
        t12.rb_mut(),
        BlockStructure::Rectangular,
        Accum::Replace,
        u.as_ref(),
        BlockStructure::Rectangular,
        t22.rb(),
        BlockStructure::TriangularUpper,
        -T::one(),
        Par::Seq,
    );
}

/// Unblocked Householder QR (LAPACK `dgeqr2`) of `a` (`m x n`, `m >= n`):
/// one `larfg` per column, then `A[j.., j+1..] -= tau v (v^T A[j.., j+1..])` as a
/// GEMV and a rank-1 update (faer matmul, sequential). As in `dgeqr2`, `v[0] = 1` is
/// stored in place of `beta` while the reflector is applied.
fn qr_leaf<T: Scalar>(mut a: MatMut<'_, T>, tau: &mut [T]) {
    let (m, n) = (a.nrows(), a.ncols());
    let mut w = Mat::<T>::zeros(1, n);
    for (j, tau_j) in tau.iter_mut().enumerate().take(n) {
        let (left, right) = a.rb_mut().split_at_col_mut(j + 1);
        let mut vcol = left.col_mut(j).subrows_mut(j, m - j);
        let mut alpha = vcol[0];
        let tj = larfg(&mut alpha, vcol.rb_mut().subrows_mut(1, m - j - 1));
        *tau_j = tj;
        let nc = n - j - 1;
        if tj != T::zero() && nc > 0 {
            vcol[0] = T::one();
            let v = vcol.rb().as_mat();
            let mut c = right.subrows_mut(j, m - j);
            let mut wj = w.as_mut().subcols_mut(0, nc);
            matmul(
                wj.rb_mut(),
                Accum::Replace,
                v.transpose(),
                c.rb(),
                T::one(),
                Par::Seq,
            );
            matmul(c.rb_mut(), Accum::Add, v, wj.rb(), -tj, Par::Seq);
        }
        vcol[0] = alpha;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::householder::testutil::*;
    use faer::MatRef;

    /// Returns (||A - QR||_F / (max(m,1) ||A||_F eps), ||Q^T Q - I||_F / (max(m,1) eps),
    /// ||T - larft(V)||_F / ||T||_F / eps).
    fn case<T: Scalar>(m: usize, k: usize, rng: &mut Rng) -> (f64, f64, f64) {
        let a0 = random::<T>(m, k, rng);
        let mut a = a0.clone();
        let mut tau = vec![T::nan(); k + 2];
        let mut t = Mat::<T>::from_fn(k, k, |_, _| T::nan());
        panel_qr(a.as_mut(), &mut tau, t.as_mut());
        let r = m.min(k);
        assert!(tau[r..k].iter().all(|&x| x == T::zero()));
        assert!(tau[k].is_nan(), "wrote past tau[..k]");
        for j in 0..k {
            assert_eq!(t[(j, j)], tau[j], "diag(T) must be tau");
            for i in j + 1..k {
                assert_eq!(t[(i, j)], T::zero());
            }
        }
        // Q explicit = (I - V T V^T) I.
        let mut q = Mat::<T>::identity(m, m);
        apply_block_reflector_left(a.as_ref(), t.as_ref(), q.as_mut(), false);
        let qf = to_f64(q.as_ref());
        let rf = Mat::<f64>::from_fn(m, k, |i, j| if i <= j { a[(i, j)].f64() } else { 0.0 });
        let a0f = to_f64(a0.as_ref());
        let eps = T::EPS.f64();
        let mm = m.max(1) as f64;
        let anorm = fro(a0f.as_ref()).max(1e-300);
        let res = fro((&qf * &rf - &a0f).as_ref()) / (mm * anorm * eps);
        let orth = orth_err(qf.as_ref()) / (mm * eps);
        let mut t2 = Mat::<T>::zeros(k, k);
        larft(a.as_ref(), &tau, t2.as_mut());
        let tf = to_f64(t.as_ref());
        let tdiff = fro((to_f64(t2.as_ref()) - &tf).as_ref()) / fro(tf.as_ref()).max(1e-300) / eps;
        (res, orth, tdiff)
    }

    #[test]
    fn panel_qr_residual_and_orthogonality() {
        let mut rng = Rng::new(3);
        let mut worst = [[0.0f64; 3]; 2];
        for m in [0, 1, 2, 5, 16, 17, 33, 100, 300, 1000] {
            for k in [0, 1, 3, 16, 17, 40, 128] {
                let r = case::<f64>(m, k, &mut rng);
                let s = case::<f32>(m, k, &mut rng);
                for (w, v) in worst.iter_mut().zip([r, s]) {
                    w[0] = w[0].max(v.0);
                    w[1] = w[1].max(v.1);
                    w[2] = w[2].max(v.2);
                }
            }
        }
        eprintln!(
            "panel_qr worst [residual, orthogonality, T vs larft]: f64 {:?}, f32 {:?}",
            worst[0], worst[1]
        );
        for w in worst {
            assert!(w[0] < 30.0 && w[1] < 30.0, "{w:?}");
            assert!(w[2] < 1e3, "recursive T differs from larft: {w:?}");
        }
    }

    #[test]
    fn panel_qr_strided_view() {
        // A row-major (transposed) view goes through the copy path.
        let mut rng = Rng::new(4);
        let a0 = random::<f64>(40, 70, &mut rng);
        let mut at = a0.clone();
        let mut a = a0.transpose().to_owned();
        let mut tau = vec![0.0; 40];
        let mut t = Mat::<f64>::zeros(40, 40);
        let mut tau2 = tau.clone();
        let mut t2 = t.clone();
        panel_qr(a.as_mut(), &mut tau, t.as_mut());
        panel_qr(at.as_mut().transpose_mut(), &mut tau2, t2.as_mut());
        let view: MatRef<'_, f64> = at.as_ref().transpose();
        assert_eq!(tau, tau2);
        assert!((view - a.as_ref()).norm_l2() == 0.0);
    }
}
