//! The symmetric matrix-vector product of the reduction (`dsymv`, lower), the
//! memory-bound half of `dsytrd`'s flops (Dongarra, Hammarling, Sorensen
//! 1989: each panel column needs `A22 v` against the not yet updated trailing
//! matrix).
//!
//! One pass over the lower triangle, **four columns at a time**: columns
//! `c..c + 4` give four dots (their parts below row `c + 3` times `v`) and
//! one fused four-column axpy into the rows below, so each entry of `A` is
//! read once and `v` and `w` once per four columns (at small and mid n the
//! BLAS-2 rate of this product is what decides against LAPACK, whose `dlatrd`
//! panels make one `dsymv` per column). The 4 x 4 diagonal blocks are done in scalar code.
//!
//! The inner loop is [`crate::linalg::blas::blas2`]'s fused multiply-add kernel
//! (AVX-512 or AVX2 + FMA intrinsics, the same bits on every version).
//!
//! From [`SYMV_SPLIT_MIN`] rows on the product is computed as two partial
//! products over fixed column blocks (columns `0..c` and `c..`, the first with
//! a little more than half the entries), summed in that order: the split depends only on the order, so the
//! result is bitwise the same whether the blocks run in turn or in parallel
//! on [`Splits`].

use super::col;
use crate::error::Error;
use crate::linalg::blas::blas2::dots_axpys;
use crate::linalg::blas::simd::Isa;
use crate::linalg::par::Splits;
use crate::Scalar;
use faer::MatRef;

/// Columns per pass of [`symv_cols`].
const COLS: usize = 4;

/// Smallest order whose product [`symv_lower_on`] computes as two column
/// blocks (in parallel on [`Splits`] with a helper). Measured with `sytrd` on
/// two threads (Intel Xeon, AVX-512, f64): from 256 on the split gains (n =
/// 384: 3.5 against 4.0 ms; 512: 7.0 against 9.3 ms), below it nothing.
pub const SYMV_SPLIT_MIN: usize = 256;

/// The first block's share of the triangle's entries. Above one half: the
/// second block has twice as many (shorter) column groups, each with its fixed
/// cost (the diagonal block, four horizontal sums), and the helper that runs
/// it starts a little later; at 0.5 the caller waited for it (`sytrd` at
/// n = 512 on two threads: 7.3-7.6 against 6.9 ms at 0.55).
const FIRST_BLOCK_SHARE: f64 = 0.55;

simd_dispatch! {
    /// `w[..m] := (the columns c0..c1 of A) v` for the `m x m` symmetric `A`
    /// whose lower triangle `a` holds (unit row stride), i.e. the entries
    /// `A[r, c]` and `A[c, r]` with `c` in `c0..c1` and `r >= c`; `c1 - c0` a
    /// multiple of [`COLS`] or `c1 = m`. Compiled for the CPU's vector
    /// extensions so that the scalar fused multiply-adds of the diagonal
    /// blocks are single instructions, not library calls.
    fn symv_cols / symv_cols_simd / symv_cols_body (isa: Option<Isa>, a: MatRef<'_, T>, c0: usize, c1: usize, v: &[T], w: &mut [T])
}

#[inline(always)]
fn symv_cols_body<T: Scalar>(
    isa: Option<Isa>,
    a: MatRef<'_, T>,
    c0: usize,
    c1: usize,
    v: &[T],
    w: &mut [T],
) {
    let m = a.nrows();
    let (v, w) = (&v[..m], &mut w[..m]);
    w.fill(T::zero());
    let mut c = c0;
    while c + COLS <= c1 {
        // Columns c..c + 4 from row c: their 4 x 4 diagonal block, then the
        // rows below it.
        let k: [&[T]; COLS] = std::array::from_fn(|j| col(a, c + j, c));
        let vc: [T; COLS] = std::array::from_fn(|j| v[c + j]);
        let below = k.map(|kj| &kj[COLS..]);
        let s = dots_axpys(isa, below, &v[c + COLS..], &mut w[c + COLS..], vc);
        for i in 0..COLS {
            let mut x = w[c + i];
            for (j, &vj) in vc.iter().enumerate() {
                // A[c + i, c + j] from the lower triangle.
                let aij = if i >= j { k[j][i] } else { k[i][j] };
                x = aij.mul_add(vj, x);
            }
            w[c + i] = x + s[i];
        }
        c += COLS;
    }
    // The last m - c < 4 columns (c1 = m): their lower triangle.
    for j in c..c1 {
        let kj = col(a, j, j);
        let mut x = kj[0].mul_add(v[j], w[j]);
        for (r, &arj) in kj.iter().enumerate().skip(1) {
            x = arj.mul_add(v[j + r], x);
            w[j + r] = arj.mul_add(v[j], w[j + r]);
        }
        w[j] = x;
    }
}

/// `w := A v` for the `m x m` symmetric `A` whose lower triangle `a` holds
/// (unit row stride, `v` and `w` of `m` entries at least), in two blocks on
/// `team` from [`SYMV_SPLIT_MIN`] rows on (module docs); `scratch` holds the
/// second block's partial product (resized as needed).
///
/// # Errors
/// Only a panic in a block ([`Splits::join`]).
pub fn symv_lower_on<T: Scalar>(
    a: MatRef<'_, T>,
    v: &[T],
    w: &mut [T],
    scratch: &mut Vec<T>,
    team: Splits<'_>,
) -> Result<(), Error> {
    let m = a.nrows();
    debug_assert!(a.ncols() == m && v.len() >= m && w.len() >= m);
    let isa = Isa::detect();
    if m < SYMV_SPLIT_MIN {
        symv_cols(isa, a, 0, m, v, w);
        return Ok(());
    }
    // Columns 0..c hold c m - c^2 / 2 entries, a share f of the triangle for
    // c = m (1 - sqrt(1 - f)); a multiple of four so that both blocks are cut
    // into the same column groups as one pass.
    let c =
        (((m as f64) * (1.0 - (1.0 - FIRST_BLOCK_SHARE).sqrt())).round() as usize) & !(COLS - 1);
    if scratch.len() < m {
        scratch.resize(m, T::zero());
    }
    let (w, p) = (&mut w[..m], &mut scratch[..m]);
    {
        let (w, p) = (&mut *w, &mut *p);
        team.join(
            move || {
                symv_cols(isa, a, 0, c, v, w);
                Ok(())
            },
            move || {
                symv_cols(isa, a, c, m, v, p);
                Ok(())
            },
        )?;
    }
    // The second block adds nothing above row c.
    for (x, &y) in w[c..].iter_mut().zip(&p[c..]) {
        *x += y;
    }
    Ok(())
}

/// [`symv_lower_on`] on the calling thread, with a scratch of its own.
pub fn symv_lower<T: Scalar>(a: MatRef<'_, T>, v: &[T], w: &mut [T]) {
    let mut scratch = Vec::new();
    symv_lower_on(a, v, w, &mut scratch, Splits::Seq).expect("a serial team, no run to fail");
}
