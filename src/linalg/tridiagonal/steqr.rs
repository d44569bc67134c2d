//! Eigenvalues and eigenvectors of a symmetric tridiagonal matrix by implicit QL/QR
//! with Wilkinson shifts, organised as LAPACK `dsteqr` with `compz = 'V'`.
//!
//! Used for the leaves of the divide-and-conquer tree (as LAPACK `dlaed0` uses `dsteqr`), so it
//! is sequential and deterministic: the same input gives bitwise the same output.
//!
//! Splitting, per-block scaling, the QL-or-QR choice and the total sweep budget
//! are those of [`super::sterf`] (whose helpers this module shares); the sweep
//! itself is the classic implicit QL step with explicit rotations (as in EISPACK
//! `tql2`/`dsteqr`; Golub & Van Loan §8.3.5 for the QR form), because the
//! rotations are needed for the vectors.

use super::sterf::{
    block_end, check_tridiag, first_negligible, hypot_one, max_abs, no_convergence, scale, sym2x2,
    Consts,
};
use crate::error::Error;
use crate::linalg::blas::lasr::{apply_rotation_chain, col_pair, givens, rotate_pair_fused, Chain};
use crate::scalar::Scalar;
use faer::reborrow::ReborrowMut;
use faer::MatMut;

/// Computes all eigenvalues and eigenvectors of the symmetric tridiagonal matrix
/// `T` with diagonal `d` (length `n`) and off-diagonal `e` (length `n - 1`).
///
/// Semantics of LAPACK `dsteqr` with `compz = 'V'`: on entry `z` (`m x n`, any
/// `m`, typically the identity or the orthogonal matrix that reduced a dense
/// matrix to `T`) is overwritten by `z * Q`, where `T = Q diag(d) Q^T`. On exit
/// `d` holds the eigenvalues ascending and the columns of `z` are permuted to
/// match. `z` may be any view; column-major (unit row stride) is the fast path.
///
/// The method is implicit QL (or QR, chosen per unreduced block by which end of
/// its diagonal is larger) with Wilkinson shifts. Up to 64 rows of `z` (unit row
/// stride), each rotation is applied to its column pair of `z` as the chase forms
/// it; otherwise the rotations of one sweep are stored and applied as one chain
/// (LAPACK `dlasr`), with the same bits. At most `30 n` sweeps are spent in total.
///
/// On return `e` is overwritten (workspace). On error `d`, `e` and `z` are
/// unspecified; no partial result is ever reported as a success.
///
/// # Errors
/// * [`Error::Shape`] if `n >= 1` and `e.len() != n - 1`, or `z.ncols() != n`.
/// * [`Error::NonFinite`] if an entry of `d` or `e` is NaN or infinite.
/// * [`Error::NoConvergence`] if the sweep limit is reached (naming how many
///   off-diagonal entries were still nonzero), or an eigenvalue overflows when the
///   block scaling is undone.
pub fn steqr<T: Scalar>(d: &mut [T], e: &mut [T], z: MatMut<'_, T>) -> Result<(), Error> {
    check_args(d, e, z.ncols())?;
    let n = d.len();
    steqr_with_max_iter(d, e, z, 30 * n)
}

/// [`steqr`]'s argument checks, for `z` with `cols` columns.
fn check_args<T: Scalar>(d: &[T], e: &[T], cols: usize) -> Result<(), Error> {
    check_tridiag("steqr", d, e)?;
    if cols != d.len() {
        return Err(Error::Shape(format!(
            "steqr: z has {cols} columns but the tridiagonal matrix has order {}",
            d.len()
        )));
    }
    Ok(())
}

/// [`steqr`] with an explicit cap on the total number of sweeps (the public
/// function uses `30 n`, as `dsteqr` does). Arguments must already be checked.
pub(crate) fn steqr_with_max_iter<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    z: MatMut<'_, T>,
    max_iter: usize,
) -> Result<(), Error> {
    let mut run = QlRun::new(d, e, z, max_iter);
    run_sweeps(&mut run)
}

simd_dispatch! {
    /// Every sweep of `run`, compiled for the CPU's FMA (the rotations
    /// applied in the chase use `mul_add`).
    fn run_sweeps / run_sweeps_simd / run_sweeps_body (run: &mut QlRun<'_, T>) -> Result<(), Error>
}

#[inline(always)]
fn run_sweeps_body<T: Scalar>(run: &mut QlRun<'_, T>) -> Result<(), Error> {
    while let Some(mut sweep) = run.next_sweep()? {
        while run.step(&mut sweep) {}
        run.finish_sweep(&sweep);
    }
    Ok(())
}

/// Two independent [`steqr`]s (the sibling leaves of a divide and conquer)
/// with their sweeps chased side by side: each step of a chase is a chain of
/// a square root and divisions that leaves the core mostly idle, and the
/// other problem's step fills it. Each problem gets bitwise what [`steqr`]
/// gives it alone (the same operations in the same order); the sweep budget
/// is each problem's own (`30 n`).
///
/// # Errors
/// As [`steqr`], for either problem (the first problem's error first).
pub fn steqr_pair<T: Scalar>(
    (d1, e1, z1): (&mut [T], &mut [T], MatMut<'_, T>),
    (d2, e2, z2): (&mut [T], &mut [T], MatMut<'_, T>),
) -> Result<(), Error> {
    check_args(d1, e1, z1.ncols())?;
    check_args(d2, e2, z2.ncols())?;
    let (n1, n2) = (d1.len(), d2.len());
    let mut a = QlRun::new(d1, e1, z1, 30 * n1);
    let mut b = QlRun::new(d2, e2, z2, 30 * n2);
    run_sweep_pairs(&mut a, &mut b)
}

simd_dispatch! {
    /// Every sweep of `a` and `b`, side by side ([`steqr_pair`]).
    fn run_sweep_pairs / run_sweep_pairs_simd / run_sweep_pairs_body (
        a: &mut QlRun<'_, T>,
        b: &mut QlRun<'_, T>
    ) -> Result<(), Error>
}

#[inline(always)]
fn run_sweep_pairs_body<T: Scalar>(
    a: &mut QlRun<'_, T>,
    b: &mut QlRun<'_, T>,
) -> Result<(), Error> {
    loop {
        match (a.next_sweep()?, b.next_sweep()?) {
            (None, None) => return Ok(()),
            (Some(mut x), None) => {
                while a.step(&mut x) {}
                a.finish_sweep(&x);
            }
            (None, Some(mut y)) => {
                while b.step(&mut y) {}
                b.finish_sweep(&y);
            }
            (Some(mut x), Some(mut y)) => {
                // Non-short-circuiting: both chases advance in each round.
                while a.step(&mut x) | b.step(&mut y) {}
                a.finish_sweep(&x);
                b.finish_sweep(&y);
            }
        }
    }
}

/// Up to this many rows of `z`, each rotation of a chase is applied to `z`
/// as soon as it is formed. A step of the chase waits on a square root and
/// divisions; the two columns' update is independent of the next step and
/// runs in their shadow, where the chain after the sweep
/// ([`QlRun::finish_sweep`]) adds its time to the chase's. Both give the
/// same bits (the same fused operations per entry, in the same order).
/// Taller `z` keeps the chain, which loads and stores each column once per
/// sweep, not twice.
const ROTATE_NOW_ROWS: usize = 64;

/// One QL/QR problem advanced sweep by sweep (the loop of LAPACK `dsteqr`):
/// [`QlRun::next_sweep`] deflates and splits until a sweep is due and sets
/// up its chase, [`QlRun::step`] chases one row, [`QlRun::finish_sweep`]
/// closes the sweep and applies its rotations to the vectors. Indices are
/// absolute (into the whole `d`, `e` and the columns of `z`).
struct QlRun<'a, T: Scalar> {
    d: &'a mut [T],
    e: &'a mut [T],
    z: MatMut<'a, T>,
    c: Consts<T>,
    /// Rotations of the current sweep, in the order they were generated.
    rots: Vec<(T, T)>,
    /// Whether each rotation is applied to `z` as the chase generates it
    /// ([`ROTATE_NOW_ROWS`]) rather than kept for one chain per sweep.
    rotate_now: bool,
    sweeps: usize,
    max_iter: usize,
    /// First row of the next unreduced block.
    next: usize,
    /// The block being solved, if any.
    block: Option<Block<T>>,
    /// Set once the eigenvalues are checked and sorted.
    done: bool,
}

/// An unreduced block `first..=last`, scaled by `anorm -> target` when
/// `target` is set, deflated above row `l` (QL deflates at the top).
#[derive(Clone, Copy)]
struct Block<T> {
    first: usize,
    last: usize,
    l: usize,
    anorm: T,
    target: Option<T>,
}

/// The state of one implicit QL sweep over rows `l..=m`, chased from the
/// bottom: the next step works on rows `i - 1` and `i`.
struct Sweep<T> {
    l: usize,
    m: usize,
    i: usize,
    g: T,
    s: T,
    cc: T,
    p: T,
}

impl<'a, T: Scalar> QlRun<'a, T> {
    fn new(d: &'a mut [T], e: &'a mut [T], z: MatMut<'a, T>, max_iter: usize) -> Self {
        let n = d.len();
        let rotate_now = z.row_stride() == 1 && z.nrows() <= ROTATE_NOW_ROWS;
        QlRun {
            d,
            e,
            z,
            c: Consts::new(),
            // Kept only for the chain after each sweep.
            rots: Vec::with_capacity(if rotate_now { 0 } else { n.saturating_sub(1) }),
            rotate_now,
            sweeps: 0,
            max_iter,
            next: 0,
            block: None,
            done: n <= 1,
        }
    }

    /// Deflates, splits and opens blocks until a sweep is due, and returns
    /// its chase set up (Wilkinson shift); `None` once every eigenvalue has
    /// converged (they are then sorted ascending, `z`'s columns with them).
    fn next_sweep(&mut self) -> Result<Option<Sweep<T>>, Error> {
        while !self.done {
            let Some(mut blk) = self.block else {
                self.open_block()?;
                continue;
            };
            let (d, e) = (&mut *self.d, &mut *self.e);
            if blk.l > blk.last {
                if let Some(t) = blk.target {
                    // e is workspace on return (only its zero pattern matters,
                    // for the error count), so it is left scaled.
                    scale(&mut d[blk.first..=blk.last], t, blk.anorm);
                }
                self.block = None;
                continue;
            }
            let (l, last) = (blk.l, blk.last);
            // Smallest m >= l with a negligible e_m: e_m^2 <= eps^2 |d_m d_m+1|
            // (plus SAFE_MIN so zero diagonal neighbours cannot stall it; far
            // below eps^2 times the scaled block norm). The block is scaled, so
            // the squares neither overflow nor lose a non-negligible e to
            // underflow.
            let eps2 = self.c.eps2;
            let m = first_negligible(l, last, |m| {
                let t = e[m];
                t * t <= eps2 * d[m].abs() * d[m + 1].abs() + T::SAFE_MIN
            });
            if m < last {
                e[m] = T::zero();
            }
            if m == l {
                blk.l += 1;
                self.block = Some(blk);
                continue;
            }
            if m == l + 1 {
                let (a, b, cs, sn) = sym2x2(d[l], e[l], d[l + 1]);
                d[l] = a;
                d[l + 1] = b;
                e[l] = T::zero();
                col_pair(self.z.as_mut(), l, l + 1, |x, y| rotate(x, y, cs, sn));
                blk.l += 2;
                self.block = Some(blk);
                continue;
            }
            if self.sweeps >= self.max_iter {
                return Err(no_convergence("steqr", e, self.max_iter));
            }
            self.sweeps += 1;
            // Wilkinson shift sigma (eigenvalue of the leading 2x2 nearer
            // d_l); g = d_m - sigma starts the implicit sweep.
            let two = T::of(2.0);
            let p = d[l];
            let g = (d[l + 1] - p) / (two * e[l]);
            let r = hypot_one(g);
            let g = d[m] - p + e[l] / (g + r.copysign(g));
            self.rots.clear();
            return Ok(Some(Sweep {
                l,
                m,
                i: m,
                g,
                s: T::one(),
                cc: T::one(),
                p: T::zero(),
            }));
        }
        Ok(None)
    }

    /// Opens the next unreduced block (scaled, and reversed when its top end
    /// is the larger: QR on the block is QL on the reversed block, and with
    /// `P` the reversal, `T = P T' P` and `z Q = (z P) Q'`), or, past the
    /// last one, checks and sorts the eigenvalues.
    fn open_block(&mut self) -> Result<(), Error> {
        let n = self.d.len();
        if self.next >= n {
            return self.finish();
        }
        let first = self.next;
        let last = block_end(self.d, self.e, first);
        self.next = last + 1;
        if last == first {
            return Ok(());
        }
        let blk_d = &mut self.d[first..=last];
        let blk_e = &mut self.e[first..last];
        let anorm = max_abs(blk_d).max(max_abs(blk_e));
        if anorm == T::zero() {
            return Ok(());
        }
        let target = self.c.scale_target(anorm);
        if let Some(t) = target {
            scale(blk_d, anorm, t);
            scale(blk_e, anorm, t);
        }
        let nb = last - first + 1;
        if blk_d[nb - 1].abs() < blk_d[0].abs() {
            blk_d.reverse();
            blk_e.reverse();
            let mut zb = self.z.as_mut().subcols_mut(first, nb);
            for k in 0..nb / 2 {
                col_pair(zb.as_mut(), k, nb - 1 - k, |x, y| x.swap_with_slice(y));
            }
        }
        self.block = Some(Block {
            first,
            last,
            l: first,
            anorm,
            target,
        });
        Ok(())
    }

    /// One step of the chase from the bottom of the active block (m) up to
    /// l; `false` (and nothing done) once the chase has reached l. The
    /// rotation in plane (i, i+1) is kept for the vectors: columns i, i+1 of
    /// z become (c z_i - s z_i+1, s z_i + c z_i+1).
    #[inline(always)]
    fn step(&mut self, w: &mut Sweep<T>) -> bool {
        if w.i == w.l {
            return false;
        }
        w.i -= 1;
        let i = w.i;
        let (d, e) = (&mut *self.d, &mut *self.e);
        let f = w.s * e[i];
        let b = w.cc * e[i];
        let (cn, sn, r) = givens(w.g, f);
        w.cc = cn;
        w.s = sn;
        if i + 1 != w.m {
            e[i + 1] = r;
        }
        let g = d[i + 1] - w.p;
        let r = (d[i] - g) * w.s + T::of(2.0) * w.cc * b;
        w.p = w.s * r;
        d[i + 1] = g + w.p;
        w.g = w.cc * r - b;
        if self.rotate_now {
            // Column i + 1, as left by the rotation before, is the chain's
            // carried column: the chain's operations in the chain's order,
            // while this step's divisions are still in flight.
            let (x, y) = self.z.rb_mut().two_cols_mut(i + 1, i);
            rotate_pair_fused(
                x.try_as_col_major_mut()
                    .expect("unit row stride")
                    .as_slice_mut(),
                y.try_as_col_major_mut()
                    .expect("unit row stride")
                    .as_slice_mut(),
                w.cc,
                w.s,
            );
        } else {
            self.rots.push((w.cc, w.s));
        }
        true
    }

    /// Closes a chased sweep and applies its rotations in the order they were
    /// generated, as one chain (LAPACK `dlasr`): rotation (i, i + 1) takes
    /// column i + 1 as left by rotation (i + 1, i + 2), so the chain runs
    /// backward from column m. Per entry `z_i+1 := s z_i + c z_i+1` and
    /// `z_i := c z_i - s z_i+1`, the arithmetic of `rotate`.
    fn finish_sweep(&mut self, w: &Sweep<T>) {
        self.d[w.l] -= w.p;
        self.e[w.l] = w.g;
        apply_rotation_chain(self.z.as_mut(), w.m, Chain::Backward, &self.rots);
    }

    /// Checks the unscaled eigenvalues and sorts them ascending, `z`'s
    /// columns with them (selection sort: at most n - 1 column swaps, and
    /// deterministic).
    fn finish(&mut self) -> Result<(), Error> {
        self.done = true;
        let n = self.d.len();
        let d = &mut *self.d;
        if let Some(i) = d.iter().position(|x| !x.is_finite()) {
            return Err(Error::NoConvergence {
                stage: "steqr",
                detail: format!(
                    "eigenvalue {i} overflowed when the block scaling was undone (input too close to the overflow threshold)"
                ),
            });
        }
        for i in 0..n - 1 {
            let mut k = i;
            for j in i + 1..n {
                if d[j] < d[k] {
                    k = j;
                }
            }
            if k != i {
                d.swap(i, k);
                col_pair(self.z.as_mut(), i, k, |x, y| x.swap_with_slice(y));
            }
        }
        Ok(())
    }
}

/// `(x, y) <- (c x - s y, s x + c y)`, elementwise.
#[inline]
fn rotate<T: Scalar>(x: &mut [T], y: &mut [T], c: T, s: T) {
    for (a, b) in x.iter_mut().zip(y.iter_mut()) {
        let (u, v) = (*a, *b);
        *a = c * u - s * v;
        *b = s * u + c * v;
    }
}

#[cfg(test)]
mod tests;
