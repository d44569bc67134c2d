//! The SVD through ScaLAPACK's `p?gesvd` (bidiagonal reduction, implicit QR
//! on the bidiagonal, back-transformations; "ScaLAPACK Users' Guide", §3.2.4),
//! on the block-cyclic layout of [`super::layout`].

use super::ffi;
use super::grid::Grid;
use super::layout::Layout;
use super::Engine;
use crate::{Error, Result};
use std::ffi::c_int;

/// A ScaLAPACK array descriptor (`DESC`, 9 integers) built by `descinit`.
pub(crate) fn descriptor(grid: &Grid<'_>, layout: &Layout) -> Result<[c_int; 9]> {
    let mut desc = [0 as c_int; 9];
    let (m, n) = (layout.rows.n as c_int, layout.cols.n as c_int);
    let nb = layout.rows.nb as c_int;
    let lld = layout.lld() as c_int;
    let zero: c_int = 0;
    let mut info: c_int = 0;
    // SAFETY: `desc` holds 9 integers; every other argument points to one
    // integer; the context is live.
    unsafe {
        ffi::descinit_(
            desc.as_mut_ptr(),
            &m,
            &n,
            &nb,
            &nb,
            &zero,
            &zero,
            &grid.ctxt,
            &lld,
            &mut info,
        )
    };
    if info != 0 {
        return Err(Error::InvalidArgument(format!(
            "ScaLAPACK descinit failed: argument {} is invalid (info {info})",
            -info
        )));
    }
    Ok(desc)
}

/// Singular values (descending, on every rank) and, with `vectors`, this
/// rank's shares of the thin `U` (`m x k`) and `V^T` (`k x n`), `k = min(m, n)`,
/// in the layouts `lu` and `lvt`. `a` is this rank's share of `A` (layout
/// `la`) and is destroyed.
#[allow(clippy::type_complexity)]
pub fn svd<T: Engine>(
    grid: &Grid<'_>,
    la: &Layout,
    lu: &Layout,
    lvt: &Layout,
    a: &mut [T],
    vectors: bool,
) -> Result<(Vec<T>, Option<(Vec<T>, Vec<T>)>)> {
    let (m, n) = (la.rows.n, la.cols.n);
    let k = m.min(n);
    let descs = (|| {
        Ok((
            descriptor(grid, la)?,
            descriptor(grid, lu)?,
            descriptor(grid, lvt)?,
        ))
    })();
    let (da, du, dvt) = grid.agree(descs)?;
    let mut s = vec![T::of(0.0); k.max(1)];
    let (mut u, mut vt) = if vectors {
        (
            vec![T::of(0.0); lu.local_elems()],
            vec![T::of(0.0); lvt.local_elems()],
        )
    } else {
        (vec![T::of(0.0); 1], vec![T::of(0.0); 1])
    };
    let job: u8 = if vectors { b'V' } else { b'N' };
    let (mi, ni, one) = (m as c_int, n as c_int, 1 as c_int);
    let mut info: c_int = 0;
    // Workspace query (lwork = -1): the size comes back in work[0].
    let mut query = [T::of(0.0); 1];
    let lwork: c_int = -1;
    // SAFETY: a workspace query reads the descriptors and writes work[0] and
    // info only; all pointers are valid for what they describe (`u`, `vt` are
    // not referenced with job 'N'). Collective; every rank reaches it.
    unsafe {
        T::pgesvd(
            job,
            job,
            mi,
            ni,
            a.as_mut_ptr(),
            one,
            &da,
            s.as_mut_ptr(),
            u.as_mut_ptr(),
            &du,
            vt.as_mut_ptr(),
            &dvt,
            query.as_mut_ptr(),
            lwork,
            &mut info,
        )
    };
    let queried = if info == 0 {
        Ok(query[0].f64().max(1.0) as usize)
    } else {
        Err(gesvd_error(T::PGESVD, info, "workspace query"))
    };
    let lwork = grid.agree(queried)?;
    let mut work = vec![T::of(0.0); lwork];
    // SAFETY: as above, with `work` of the queried length; `a` holds this rank's
    // share of the m x n matrix, `u`/`vt` theirs of m x k and k x n, `s` k.
    unsafe {
        T::pgesvd(
            job,
            job,
            mi,
            ni,
            a.as_mut_ptr(),
            one,
            &da,
            s.as_mut_ptr(),
            u.as_mut_ptr(),
            &du,
            vt.as_mut_ptr(),
            &dvt,
            work.as_mut_ptr(),
            lwork as c_int,
            &mut info,
        )
    };
    let solved = if info == 0 {
        Ok(())
    } else {
        Err(gesvd_error(T::PGESVD, info, "solve"))
    };
    grid.agree(solved)?;
    s.truncate(k);
    Ok((s, vectors.then_some((u, vt))))
}

/// `info` of `p?gesvd` as an [`Error`] naming the call.
fn gesvd_error(call: &str, info: c_int, phase: &str) -> Error {
    if info < 0 {
        Error::InvalidArgument(format!(
            "ScaLAPACK {call} ({phase}): argument {} is invalid (info {info})",
            -info
        ))
    } else {
        Error::NoConvergence {
            stage: "ScaLAPACK p?gesvd",
            detail: format!(
                "{call} ({phase}) returned info {info} (the bidiagonal QR did not converge, \
                 or the singular values differ across ranks)"
            ),
        }
    }
}
