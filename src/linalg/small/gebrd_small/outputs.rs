//! The ends of [`super::small_svd`]'s routes: the bidiagonal's values or SVD,
//! unscaled, and the vectors written out.

use super::load::{copy_col_major, Scaled};
use super::{dc, GebrdWorkspace};
use crate::linalg::bidiagonal::bdsdc::BdsdcParams;
use crate::linalg::bidiagonal::dqds;
use crate::{Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::reborrow::*;
use faer::{Accum, MatMut, MatRef, Par};

/// The end of the divide-and-conquer route, once `ws` holds the bidiagonal
/// and `Q`, `P`: the bidiagonal's SVD, then `U` and `V^T` from two GEMMs.
pub(super) fn dc_outputs<T: Scalar>(
    ws: &mut GebrdWorkspace<T>,
    sc: &Scaled<T>,
    values: &mut [T],
    u: &mut [T],
    vt: &mut [T],
) -> Result<()> {
    let (mt, nt) = (sc.mt, sc.nt);
    let (m, n) = sc.shape();
    assert_eq!(u.len(), m * nt, "small_svd: u must be m x min(m, n)");
    assert_eq!(vt.len(), nt * n, "small_svd: vt must be min(m, n) x n");
    let q = MatRef::from_column_major_slice(&ws.q[..], mt, nt);
    let p = MatRef::from_column_major_slice(&ws.p[..], nt, nt);
    let unscale = |values: &mut [T]| sc.unscale(values);
    let (ub, vb) = bidiagonal_dc(
        &mut ws.d, &ws.e, &mut ws.ub, &mut ws.vb, &mut ws.w, values, unscale,
    )?;
    // B = (Q U_b) S (P V_b)^T.
    let (lf, lb, rf, rb) = if sc.transposed {
        (p, vb.rb(), q, ub.rb())
    } else {
        (q, ub.rb(), p, vb.rb())
    };
    let one = T::one();
    let um = MatMut::from_column_major_slice_mut(u, m, nt);
    matmul(um, Accum::Replace, lf, lb, one, Par::Seq);
    let vm = MatMut::from_column_major_slice_mut(vt, nt, n);
    matmul(
        vm,
        Accum::Replace,
        rb.transpose(),
        rf.transpose(),
        one,
        Par::Seq,
    );
    Ok(())
}

/// After the bidiagonal QR (`B = Q S P^T` in `ws`): the values, unscaled,
/// and the vectors. Not transposed: `U = Q`, `V^T = P^T`; transposed
/// (`A = B^T`): `U = P`, `V^T = Q^T`.
pub(super) fn write_qr_outputs<T: Scalar>(
    ws: &GebrdWorkspace<T>,
    sc: &Scaled<T>,
    values: &mut [T],
    u: &mut [T],
    vt: &mut [T],
) {
    let (mt, nt) = (sc.mt, sc.nt);
    values.copy_from_slice(&ws.d);
    sc.unscale(values);
    let q = MatRef::from_column_major_slice(&ws.q[..], mt, nt);
    let p = MatRef::from_column_major_slice(&ws.p[..], nt, nt);
    let (uf, vf) = if sc.transposed { (p, q) } else { (q, p) };
    let (m, n) = sc.shape();
    assert_eq!(u.len(), m * nt, "small_svd: u must be m x min(m, n)");
    assert_eq!(vt.len(), nt * n, "small_svd: vt must be min(m, n) x n");
    copy_col_major(uf, u);
    copy_col_major(vf.transpose(), vt);
}

/// Singular values only: dqds on the bidiagonal `(d, e)`, unscaled into
/// `values`.
pub(super) fn values_by_dqds<T: Scalar>(
    d: &[T],
    e: &[T],
    values: &mut [T],
    unscale: impl Fn(&mut [T]),
) -> Result<()> {
    let s = dqds::singular_values(d, e)?;
    values.copy_from_slice(&s);
    unscale(values);
    Ok(())
}

/// The bidiagonal `(d, e)`'s SVD by divide and conquer: the values, unscaled,
/// into `values`, and its vectors as `nt x nt` views of `ub`, `vb`.
pub(super) fn bidiagonal_dc<'a, T: Scalar>(
    d: &mut [T],
    e: &[T],
    ub: &'a mut [T],
    vb: &'a mut [T],
    w: &mut [T],
    values: &mut [T],
    unscale: impl Fn(&mut [T]),
) -> Result<(MatMut<'a, T>, MatMut<'a, T>)> {
    let nt = d.len();
    let mut ub = MatMut::from_column_major_slice_mut(&mut ub[..nt * nt], nt, nt);
    let mut vb = MatMut::from_column_major_slice_mut(&mut vb[..nt * nt], nt, nt);
    dc::bd_dc(d, e, ub.rb_mut(), vb.rb_mut(), w, &BdsdcParams::default())?;
    values.copy_from_slice(d);
    unscale(values);
    Ok((ub, vb))
}
