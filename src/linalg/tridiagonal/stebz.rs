//! Selected eigenvalues of a symmetric tridiagonal matrix by bisection with
//! Sturm counts, in the manner of LAPACK `dstebz` (Kahan's bisection; Parlett,
//! *The Symmetric Eigenvalue Problem*, §3.3, and Demmel, *Applied Numerical
//! Linear Algebra*, §5.3.4).
//!
//! `T = tridiag(e, d, e)`. The Sturm count `count(x)` is the number of
//! negative pivots of the `LDL^T` factorisation of `T - x I`, which is the
//! number of eigenvalues below `x` (Sylvester's law of inertia). Pivots smaller
//! in magnitude than `pivmin = safmin * max(1, max e_i^2)` are replaced by
//! `-pivmin`, as `dstebz` does, so the recurrence never divides by zero and
//! the count stays monotone in `x`.
//!
//! Bisection runs on a *canonical* tree of intervals: the root is the widened
//! Gershgorin interval `[gl, gu]` and every split is at the midpoint, so the
//! interval that finally holds eigenvalue `j` depends only on `(d, e)`, not on
//! which other eigenvalues are sought. A range of indices can therefore be cut
//! into sub-ranges solved by separate tasks, in any order and on any thread,
//! and the results are bitwise those of one call on the whole range.
//!
//! The matrix is split where an off-diagonal is negligible, by `dstebz`'s
//! criterion `e_i^2 <= ulp^2 |d_i d_{i+1}| + safmin` ([`split_offdiagonal`]):
//! the squared off-diagonal is set to zero there, so the Sturm count of the
//! whole is the sum of the blocks' counts. An eigenvalue of a 1 x 1 block is
//! its diagonal entry, exactly, as in `dstebz`: diagonal and block-diagonal
//! input and the zero matrix give exact eigenvalues (a zero eigenvalue of a
//! positive semidefinite matrix cannot come out as a tiny negative number).
//! Where a converged interval holds eigenvalues of several blocks, each
//! block's are refined to the block's own tolerance (`dstebz` bisects each
//! block with its own Gershgorin norm); this depends only on the interval,
//! so the canonical tree's guarantee still holds.

use crate::error::Error;
use crate::scalar::Scalar;
use std::ops::Range;

/// The data every Sturm count needs: the diagonal, the squared off-diagonal,
/// the pivot floor and the widened Gershgorin interval.
#[derive(Clone, Debug)]
pub struct Sturm<T> {
    d: Vec<T>,
    e2: Vec<T>,
    pivmin: T,
    lo: T,
    hi: T,
    tnorm: T,
    /// The blocks between negligible off-diagonals, with their Gershgorin
    /// norms; one block when nothing splits.
    blocks: Vec<(Range<usize>, T)>,
}

/// `e` with the entries that are negligible by `dstebz`'s criterion
/// (`e_i^2 <= ulp^2 |d_i d_{i+1}| + safmin`, `ulp` the machine precision
/// `T::EPS`) set to zero: the tridiagonal splits into independent blocks
/// there. Inverse iteration ([`super::stein`]) splits the same way, so both
/// see the same blocks.
pub fn split_offdiagonal<T: Scalar>(d: &[T], e: &[T]) -> Vec<T> {
    let ulp = T::EPS;
    e.iter()
        .enumerate()
        .map(|(i, &x)| {
            // (ulp |d_i|) (ulp |d_i+1|): the product cannot overflow.
            let floor = (ulp * d[i].abs()) * (ulp * d[i + 1].abs()) + T::SAFE_MIN;
            if x * x < floor {
                T::zero()
            } else {
                x
            }
        })
        .collect()
}

impl<T: Scalar> Sturm<T> {
    /// Prepares the counts of the tridiagonal with diagonal `d` (length `n`) and
    /// off-diagonal `e` (length `n - 1`).
    ///
    /// Errors: [`Error::Shape`] for mismatched lengths, [`Error::NonFinite`]
    /// for a NaN or infinite entry.
    pub fn new(d: &[T], e: &[T]) -> Result<Self, Error> {
        let n = d.len();
        if n > 0 && e.len() != n - 1 {
            return Err(Error::Shape(format!(
                "stebz: tridiagonal of order {n} needs {} off-diagonal entries, got {}",
                n - 1,
                e.len()
            )));
        }
        let e = &e[..n.saturating_sub(1)];
        if let Some(i) = d.iter().chain(e).position(|x| !x.is_finite()) {
            let (row, col) = if i < n { (i, i) } else { (i - n + 1, i - n) };
            let value = if i < n { d[i] } else { e[i - n] };
            return Err(Error::NonFinite {
                row,
                col,
                value: format!("{value}"),
            });
        }
        let split = split_offdiagonal(d, e);
        let e2: Vec<T> = split.iter().map(|&x| x * x).collect();
        let emax2 = e2.iter().fold(T::one(), |m, &x| m.max(x));
        let pivmin = T::SAFE_MIN * emax2;
        let mut blocks = Vec::new();
        let mut start = 0;
        for i in 0..n {
            if i + 1 == n || split[i] == T::zero() {
                let norm = gershgorin_norm(&d[start..=i], &split[start..i]);
                blocks.push((start..i + 1, norm));
                start = i + 1;
            }
        }
        // Gershgorin discs (dstebz): every eigenvalue lies in [gl, gu].
        let (gl, gu) = gershgorin_interval(d, e);
        let tnorm = gl.abs().max(gu.abs());
        // Widened as dstebz does (FUDGE = 2.1), so rounding in the counts cannot
        // put an eigenvalue outside the root interval.
        let ulp = T::EPS + T::EPS;
        let fudge = T::of(2.1);
        let nn = T::of(n as f64);
        let widen = fudge * tnorm * ulp * nn + fudge * (pivmin + pivmin);
        Ok(Sturm {
            d: d.to_vec(),
            e2,
            pivmin,
            lo: gl - widen,
            hi: gu + widen,
            tnorm,
            blocks,
        })
    }

    /// The blocks of the split matrix (row ranges), in order.
    pub fn blocks(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.blocks.iter().map(|(r, _)| r.clone())
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.d.len()
    }

    /// The widened Gershgorin interval `[lo, hi]` that holds every eigenvalue.
    pub fn bounds(&self) -> (T, T) {
        (self.lo, self.hi)
    }

    /// `max(|gl|, |gu|)` of the Gershgorin bounds: a bound on `||T||_2`.
    pub fn norm(&self) -> T {
        self.tnorm
    }

    /// The number of eigenvalues below `x` (0 at or below the root interval,
    /// `n` at or above it; `x` must not be NaN).
    pub fn count(&self, x: T) -> usize {
        let n = self.n();
        if n == 0 || x <= self.lo {
            return 0;
        }
        if x >= self.hi {
            return n;
        }
        let mut q = self.d[0] - x;
        let mut c = 0;
        for i in 0..n {
            if i > 0 {
                q = self.d[i] - x - self.e2[i - 1] / q;
            }
            if q.abs() <= self.pivmin {
                q = -self.pivmin;
            }
            if q < T::zero() {
                c += 1;
            }
        }
        c
    }

    /// The number of eigenvalues below `x` of each block, clamped outside the
    /// root interval as [`Sturm::count`] is (the counts add up to it).
    fn block_counts(&self, x: T) -> Vec<usize> {
        self.blocks
            .iter()
            .map(|(r, _)| {
                if x <= self.lo {
                    0
                } else if x >= self.hi {
                    r.len()
                } else {
                    self.count_rows(r.clone(), x)
                }
            })
            .collect()
    }

    /// The Sturm count of rows `r` alone (a block: the recurrence starts
    /// afresh at its first row, as it does in [`Sturm::count`] after a split).
    fn count_rows(&self, r: Range<usize>, x: T) -> usize {
        let mut c = 0;
        let mut q = T::one();
        for i in r.clone() {
            q = if i == r.start {
                self.d[i] - x
            } else {
                self.d[i] - x - self.e2[i - 1] / q
            };
            if q.abs() <= self.pivmin {
                q = -self.pivmin;
            }
            if q < T::zero() {
                c += 1;
            }
        }
        c
    }

    /// The eigenvalues in the converged interval `[a, b]` that holds those of
    /// indices `ca..cb`, ascending: its midpoint for each when the matrix does
    /// not split; otherwise each block's own, the diagonal entry of a 1 x 1
    /// block exactly, those of larger blocks bisected
    /// further to the block's tolerance. A function of the interval alone.
    fn leaf_values(&self, a: T, b: T, ca: usize, cb: usize, atol: T) -> Vec<T> {
        let m = cb - ca;
        let mid = (a + b) * T::of(0.5);
        if self.blocks.len() == 1 {
            return vec![mid; m];
        }
        let (ka, kb) = (self.block_counts(a), self.block_counts(b));
        let mut vals = Vec::with_capacity(m);
        for (i, (r, norm)) in self.blocks.iter().enumerate() {
            let (lo, hi) = (ka[i], kb[i].max(ka[i]));
            if lo == hi {
                continue;
            }
            if r.len() == 1 {
                // Not clamped into [a, b]: a pivot within `pivmin` of zero
                // counts as negative, so `d` may lie up to `pivmin` above
                // `b` (an exact zero in the interval just below it).
                vals.push(self.d[r.start]);
            } else {
                let tol = if atol > T::zero() {
                    atol
                } else {
                    (T::EPS + T::EPS) * *norm
                };
                self.bisect_block(r.clone(), (a, b, lo, hi), tol, &mut vals);
            }
        }
        vals.sort_by(|x, y| x.partial_cmp(y).expect("finite eigenvalues"));
        // The blocks' counts add up to the whole's; should rounding ever make
        // them disagree, the interval's midpoint fills in (or the surplus
        // goes), so the interval still yields exactly its `m` values.
        vals.resize(m, mid);
        vals
    }

    /// Bisects block `r` inside the interval `(a, b, ca, cb)` (block counts)
    /// until its pieces are narrower than `max(tol, pivmin, 2 ulp |x|)`,
    /// appending each piece's midpoint once per eigenvalue in it.
    fn bisect_block(&self, r: Range<usize>, root: (T, T, usize, usize), tol: T, out: &mut Vec<T>) {
        let rtol = T::of(4.0) * T::EPS;
        let mut stack = vec![root];
        // Each halving at least halves the width; the floor `pivmin > 0`
        // bounds the depth, and the midpoint test stops at adjacent floats.
        while let Some((a, b, ca, cb)) = stack.pop() {
            let mid = (a + b) * T::of(0.5);
            let t = tol.max(self.pivmin).max(rtol * a.abs().max(b.abs()));
            if b - a <= t || mid <= a || mid >= b {
                out.extend(std::iter::repeat_n(mid, cb - ca));
                continue;
            }
            let cm = self.count_rows(r.clone(), mid).clamp(ca, cb);
            if cb > cm {
                stack.push((mid, b, cm, cb));
            }
            if cm > ca {
                stack.push((a, mid, ca, cm));
            }
        }
    }

    /// [`Sturm::count`] at up to [`LANES`] points in one pass over the matrix.
    fn count_lanes(&self, xs: &[T]) -> [usize; LANES] {
        let n = self.n();
        let m = xs.len();
        let mut c = [0usize; LANES];
        if n == 0 {
            return c;
        }
        let mut q = [T::zero(); LANES];
        let mut x = [T::zero(); LANES];
        x[..m].copy_from_slice(xs);
        // Points outside the root interval are clamped like `count` does
        // after the loop; inside it every lane runs the same recurrence.
        for i in 0..n {
            let (di, e2) = (self.d[i], if i > 0 { self.e2[i - 1] } else { T::zero() });
            for l in 0..LANES {
                let mut t = if i > 0 {
                    di - x[l] - e2 / q[l]
                } else {
                    di - x[l]
                };
                if t.abs() <= self.pivmin {
                    t = -self.pivmin;
                }
                c[l] += (t < T::zero()) as usize;
                q[l] = t;
            }
        }
        for l in 0..m {
            if xs[l] <= self.lo {
                c[l] = 0;
            } else if xs[l] >= self.hi {
                c[l] = n;
            }
        }
        c
    }

    /// The indices `lo..hi` of the eigenvalues in the half-open value range
    /// `[vl, vu)` by Sturm counts (`count(vl)..count(vu)`). Infinite bounds are
    /// allowed.
    ///
    /// Errors: [`Error::InvalidArgument`] for a NaN bound or `vl > vu`.
    pub fn index_range(&self, vl: T, vu: T) -> Result<Range<usize>, Error> {
        if vl.is_nan() || vu.is_nan() || vl > vu {
            return Err(Error::InvalidArgument(format!(
                "eigenvalue range [{vl}, {vu}): bounds must be numbers with lower <= upper"
            )));
        }
        let (a, b) = (self.count(vl), self.count(vu));
        Ok(a..b.max(a))
    }

    /// Eigenvalues `idx` (0-based, ascending order) by bisection, ascending.
    /// `abstol <= 0` takes LAPACK's default absolute tolerance `ulp * ||T||`;
    /// an interval is converged when narrower than
    /// `max(abstol, pivmin, 2 ulp max(|a|, |b|))` (dstebz's `ATOLI`, `PIVMIN`,
    /// `RTOLI`) and its eigenvalues are reported as its midpoint.
    ///
    /// Errors: [`Error::InvalidArgument`] when `idx` is not inside `0..n`,
    /// [`Error::NoConvergence`] when an interval is still too wide after the
    /// `log2((||T|| + pivmin) / pivmin) + 2` halvings dstebz allows (only
    /// possible with non-finite arithmetic).
    pub fn bisect(&self, idx: Range<usize>, abstol: T) -> Result<Vec<T>, Error> {
        let n = self.n();
        if idx.start > idx.end || idx.end > n {
            return Err(Error::InvalidArgument(format!(
                "stebz: eigenvalue indices {}..{} outside 0..{n}",
                idx.start, idx.end
            )));
        }
        let mut out = vec![T::zero(); idx.len()];
        if idx.is_empty() {
            return Ok(out);
        }
        if n == 1 {
            // The 1 x 1 eigenvalue is the entry itself.
            out[0] = self.d[0];
            return Ok(out);
        }
        let ulp = T::EPS + T::EPS;
        let atol = if abstol > T::zero() {
            abstol
        } else {
            ulp * self.tnorm
        };
        let rtol = ulp + ulp;
        // dstebz's limit log2((||T|| + pivmin) / pivmin) + 2, taken from the
        // root interval's actual width so that it also covers T = 0.
        let floor = atol.max(self.pivmin);
        let itmax = ((self.hi - self.lo) / floor)
            .log2()
            .ceil()
            .to_usize()
            .unwrap_or(usize::MAX - 3)
            .saturating_add(3);
        // (a, b, count(a), count(b), depth); depth-first, left part first.
        // Up to LANES intervals are split per pass, their Sturm counts
        // interleaved so the divisions' latencies overlap (as dlaebz works on
        // many intervals at once); the tree, and so the result, is the same.
        let mut stack = vec![(self.lo, self.hi, 0usize, n, 0usize)];
        let mut batch = Vec::with_capacity(LANES);
        while !stack.is_empty() {
            batch.clear();
            while batch.len() < LANES {
                let Some((a, b, ca, cb, depth)) = stack.pop() else {
                    break;
                };
                let lo = ca.max(idx.start);
                let hi = cb.min(idx.end);
                if lo >= hi {
                    continue;
                }
                let tol = atol.max(self.pivmin).max(rtol * a.abs().max(b.abs()));
                let mid = (a + b) * T::of(0.5);
                if b - a <= tol || mid <= a || mid >= b {
                    let vals = self.leaf_values(a, b, ca, cb, abstol);
                    out[lo - idx.start..hi - idx.start].copy_from_slice(&vals[lo - ca..hi - ca]);
                    continue;
                }
                if depth >= itmax || !mid.is_finite() {
                    return Err(Error::NoConvergence {
                        stage: "stebz",
                        detail: format!(
                            "bisection interval [{a}, {b}] for eigenvalues {lo}..{hi} still wider than {tol} after {depth} halvings"
                        ),
                    });
                }
                batch.push((a, b, ca, cb, depth, mid));
            }
            let mut xs = [T::zero(); LANES];
            for (x, item) in xs.iter_mut().zip(&batch) {
                *x = item.5;
            }
            let counts = self.count_lanes(&xs[..batch.len()]);
            for (&(a, b, ca, cb, depth, mid), &c) in batch.iter().zip(&counts) {
                let cm = c.clamp(ca, cb);
                stack.push((mid, b, cm, cb, depth + 1));
                stack.push((a, mid, ca, cm, depth + 1));
            }
        }
        Ok(out)
    }
}

/// The Gershgorin interval `[gl, gu]` of the tridiagonal `(d, e)`: the union
/// of the discs `d_i ± (|e_{i-1}| + |e_i|)` (`(0, 0)` for order 0).
fn gershgorin_interval<T: Scalar>(d: &[T], e: &[T]) -> (T, T) {
    let n = d.len();
    let (mut gl, mut gu) = (T::zero(), T::zero());
    for i in 0..n {
        let r = if i > 0 { e[i - 1].abs() } else { T::zero() }
            + if i + 1 < n { e[i].abs() } else { T::zero() };
        let (a, b) = (d[i] - r, d[i] + r);
        if i == 0 {
            (gl, gu) = (a, b);
        } else {
            gl = gl.min(a);
            gu = gu.max(b);
        }
    }
    (gl, gu)
}

/// `max(|gl|, |gu|)` of the Gershgorin interval of the tridiagonal `(d, e)`.
fn gershgorin_norm<T: Scalar>(d: &[T], e: &[T]) -> T {
    let (gl, gu) = gershgorin_interval(d, e);
    gl.abs().max(gu.abs())
}

/// Sturm counts evaluated together by [`Sturm::bisect`].
const LANES: usize = 8;

/// Cuts `idx` into at most `parts` consecutive sub-ranges of nearly equal
/// length (none empty), for bisection tasks.
pub fn split_indices(idx: Range<usize>, parts: usize) -> Vec<Range<usize>> {
    let k = idx.len();
    let p = parts.clamp(1, k.max(1));
    (0..p)
        .map(|i| idx.start + i * k / p..idx.start + (i + 1) * k / p)
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toeplitz(n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        // tridiag(-1, 2, -1): lambda_j = 2 - 2 cos(j pi / (n + 1)).
        let want = (1..=n)
            .map(|j| 2.0 - 2.0 * (j as f64 * std::f64::consts::PI / (n + 1) as f64).cos())
            .collect();
        (vec![2.0; n], vec![-1.0; n.saturating_sub(1)], want)
    }

    #[test]
    fn bisection_finds_known_eigenvalues() {
        let (d, e, want) = toeplitz(57);
        let s = Sturm::new(&d, &e).unwrap();
        let got = s.bisect(0..57, 0.0).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 4.0 * f64::EPSILON * 4.0, "{g} vs {w}");
        }
    }

    #[test]
    fn split_ranges_give_bitwise_identical_values() {
        let n = 200;
        let mut rng = crate::gallery::Rng::new(5);
        let d: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let e: Vec<f64> = (1..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let s = Sturm::new(&d, &e).unwrap();
        let whole = s.bisect(0..n, 0.0).unwrap();
        let mut parts = Vec::new();
        for r in split_indices(0..n, 7) {
            parts.extend(s.bisect(r, 0.0).unwrap());
        }
        assert!(whole
            .iter()
            .zip(&parts)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(whole.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn interleaved_counts_equal_single_counts() {
        let (d, e, _) = toeplitz(40);
        let s = Sturm::new(&d, &e).unwrap();
        let xs: Vec<f64> = (0..8).map(|i| -0.5 + 0.7 * i as f64).collect();
        let c = s.count_lanes(&xs);
        for (x, c) in xs.iter().zip(c) {
            assert_eq!(s.count(*x), c, "at {x}");
        }
    }

    #[test]
    fn value_ranges_and_bad_arguments() {
        let (d, e, want) = toeplitz(30);
        let s = Sturm::new(&d, &e).unwrap();
        let r = s.index_range(1.0, 3.0).unwrap();
        let expect = want.iter().filter(|&&w| (1.0..3.0).contains(&w)).count();
        assert_eq!(r.len(), expect);
        assert_eq!(s.index_range(10.0, 20.0).unwrap().len(), 0);
        assert_eq!(
            s.index_range(f64::NEG_INFINITY, f64::INFINITY).unwrap(),
            0..30
        );
        assert!(matches!(
            s.index_range(2.0, 1.0),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            s.index_range(f64::NAN, 1.0),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            s.bisect(0..31, 0.0),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            Sturm::new(&[1.0, f64::NAN], &[0.0]),
            Err(Error::NonFinite { .. })
        ));
    }

    #[test]
    fn zero_and_tiny_orders() {
        let s = Sturm::<f64>::new(&[], &[]).unwrap();
        assert!(s.bisect(0..0, 0.0).unwrap().is_empty());
        let s = Sturm::new(&[3.0f32], &[]).unwrap();
        assert!((s.bisect(0..1, 0.0).unwrap()[0] - 3.0).abs() <= 12.0 * f32::EPSILON);
        let s = Sturm::new(&[0.0f64; 5], &[0.0; 4]).unwrap();
        assert!(s
            .bisect(0..5, 0.0)
            .unwrap()
            .iter()
            .all(|x| x.abs() < 1e-300));
    }
}
