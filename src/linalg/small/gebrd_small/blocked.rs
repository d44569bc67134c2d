//! The blocked route of [`super::small_svd`] (LAPACK `dgesdd`'s order),
//! from [`super::BLOCKED_FROM`] columns.

use super::{bidiagonal_dc, values_by_dqds, GebrdWorkspace};
use crate::{Result, Scalar};
use faer::reborrow::*;
use faer::MatMut;

/// The blocked route of [`super::small_svd`] (from [`super::BLOCKED_FROM`]): `dgebrd`, then
/// dqds (values) or the bidiagonal divide and conquer followed by the two
/// halves of `dormbr`, `U_B := Q [U_b; 0]` and `V_B := P V_b`, so that
/// `B = U_B S V_B^T` for the (scaled) working matrix `B = ws.a`.
pub(super) fn blocked_svd<T: Scalar>(
    ws: &mut GebrdWorkspace<T>,
    mt: usize,
    nt: usize,
    transposed: bool,
    values: &mut [T],
    vectors: Option<(&mut [T], &mut [T])>,
    unscale: impl Fn(&mut [T]),
) -> Result<()> {
    use crate::linalg::bidiagonal::gebrd::{gebrd, ormbr_p_on, ormbr_q_on, GEBRD_BLOCK};
    use crate::linalg::par::Fork;
    let mut b = MatMut::from_column_major_slice_mut(&mut ws.a[..], mt, nt);
    gebrd(
        b.rb_mut(),
        GEBRD_BLOCK,
        &mut ws.d,
        &mut ws.e,
        &mut ws.tauq,
        &mut ws.taup,
    );
    let Some((u, vt)) = vectors else {
        return values_by_dqds(&ws.d, &ws.e, values, unscale);
    };
    ws.ub.resize(nt * nt, T::zero());
    ws.vb.resize(nt * nt, T::zero());
    let (ub, mut vb) = bidiagonal_dc(
        &mut ws.d, &ws.e, &mut ws.ub, &mut ws.vb, &mut ws.w, values, unscale,
    )?;
    let mut left = MatMut::from_column_major_slice_mut(&mut ws.q[..], mt, nt);
    left.rb_mut().subrows_mut(0, nt).copy_from(ub.rb());
    left.rb_mut().subrows_mut(nt, mt - nt).fill(T::zero());
    let infallible = "no runtime, no run to fail";
    ormbr_q_on(b.rb(), &ws.tauq, left.rb_mut(), GEBRD_BLOCK, Fork::Seq).expect(infallible);
    ormbr_p_on(b.rb(), &ws.taup, vb.rb_mut(), GEBRD_BLOCK, Fork::Seq).expect(infallible);
    // B = L S R^T with L = left (mt x nt), R = vb (nt x nt). Not transposed:
    // U = L, V^T = R^T; transposed (A = B^T): U = R, V^T = L^T.
    let (m, n) = if transposed { (nt, mt) } else { (mt, nt) };
    assert_eq!(u.len(), m * nt, "small_svd: u must be m x min(m, n)");
    assert_eq!(vt.len(), nt * n, "small_svd: vt must be min(m, n) x n");
    let (l, r) = if transposed {
        (vb.rb(), left.rb())
    } else {
        (left.rb(), vb.rb())
    };
    MatMut::from_column_major_slice_mut(u, m, nt).copy_from(l);
    MatMut::from_column_major_slice_mut(vt, nt, n).copy_from(r.transpose());
    Ok(())
}
