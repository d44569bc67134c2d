//! The eigendecomposition of small symmetric matrices by the cyclic Jacobi
//! method, [`LANES`] matrices at once in SIMD lanes: the kernel of the
//! batched symmetric EVD for small orders (the batch parallelism lives in
//! `pipeline::batched`).
//!
//! Why Jacobi: for 2 x 2 and 3 x 3 matrices the closed forms (Cardano's
//! formula for the characteristic cubic, Kopp's and Smith's 3 x 3 methods)
//! lose accuracy when eigenvalues nearly coincide, and their eigenvectors
//! can lose orthogonality entirely; a cyclic Jacobi iteration with a
//! convergence test is accurate for every matrix (Demmel & Veselić, SIAM J.
//! Matrix Anal. Appl. 13 (1992)) and converges quadratically (Golub & Van
//! Loan, *Matrix Computations*, §8.5), a handful of sweeps at these orders.
//! Its branch-free rotations vectorise across matrices: one SIMD operation
//! advances the same rotation of every matrix of the group (module
//! `lanes`).
//!
//! Steps per matrix: its lower triangle is copied into interleaved storage,
//! scaled by powers of two so that its largest entry is in `[1, 2)` (exact;
//! keeps `1e+-290` inputs away from under- and overflow), swept until a
//! sweep rotates nothing (at most [`SyevjParams::max_sweeps`]), and its
//! diagonal, unscaled, sorted ascending with the columns of `V`.
//!
//! A matrix's results are bitwise the same in any group and at any lane
//! (each lane's arithmetic depends only on its own matrix, and a lane that
//! converged is left untouched by the sweeps its group mates still need).

use crate::{Error, Result, Scalar};
use faer::MatRef;

mod lanes;
mod ops;

/// Matrices per group: eight `f64` fill an AVX-512 register (two AVX2
/// registers).
pub const LANES: usize = 8;

/// Tuning of [`syevj_group`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyevjParams {
    /// Sweeps after which a matrix that still rotates is reported as not
    /// converged (default 30; quadratic convergence takes 4-10 sweeps for the
    /// orders of this route).
    pub max_sweeps: usize,
}

impl Default for SyevjParams {
    fn default() -> Self {
        SyevjParams { max_sweeps: 30 }
    }
}

/// Reusable buffers of [`syevj_group`].
#[derive(Debug, Default)]
pub struct SyevjWorkspace<T> {
    a: Vec<[T; LANES]>,
    v: Vec<[T; LANES]>,
    d: Vec<T>,
    order: Vec<usize>,
}

impl<T: Scalar> SyevjWorkspace<T> {
    /// An empty workspace; buffers grow on first use.
    pub fn new() -> Self {
        SyevjWorkspace {
            a: Vec::new(),
            v: Vec::new(),
            d: Vec::new(),
            order: Vec::new(),
        }
    }
}

/// The eigenvalues (ascending, `n` per matrix into `values`) and, when
/// `vectors` is given, the orthonormal eigenvectors (column-major `n x n`
/// per matrix, column `j` for value `j`) of the symmetric matrices `a` (at
/// most [`LANES`], each `n x n`, any strides, lower triangle read), solved
/// together. Returns, per matrix, the sweeps it took, or
/// [`Error::NonFinite`] (position in that matrix; nothing computed for it)
/// or [`Error::NoConvergence`] (stage `"syevj"`; its outputs unspecified).
/// Each matrix's results are bitwise those of a call on it alone.
///
/// # Panics
/// If `a` is empty or longer than [`LANES`], a matrix is not `n x n`, or an
/// output has the wrong length.
pub fn syevj_group<T: Scalar>(
    a: &[MatRef<'_, T>],
    ws: &mut SyevjWorkspace<T>,
    values: &mut [T],
    vectors: Option<&mut [T]>,
    params: &SyevjParams,
) -> Vec<Result<usize>> {
    let count = a.len();
    assert!(
        (1..=LANES).contains(&count),
        "syevj_group: 1..=LANES matrices"
    );
    let n = a[0].nrows();
    assert!(
        a.iter().all(|x| x.nrows() == n && x.ncols() == n),
        "syevj_group: square matrices of one order"
    );
    assert_eq!(
        values.len(),
        count * n,
        "syevj_group: values holds n per matrix"
    );
    let with_vectors = vectors.is_some();
    let mut result: Vec<Result<usize>> = (0..count).map(|_| Ok(0)).collect();
    let scales = load(a, ws, with_vectors, &mut result);
    let sweeps = iterate(ws, n, with_vectors, params);
    let mut vectors = vectors;
    for (l, r) in result.iter_mut().enumerate() {
        if r.is_err() {
            continue;
        }
        if sweeps[l].1 {
            *r = Err(no_convergence(params.max_sweeps));
            continue;
        }
        *r = Ok(sweeps[l].0);
        let vals = &mut values[l * n..(l + 1) * n];
        let vecs = vectors.as_deref_mut().map(|v| {
            assert_eq!(
                v.len(),
                count * n * n,
                "syevj_group: vectors holds n^2 per matrix"
            );
            &mut v[l * n * n..(l + 1) * n * n]
        });
        write_lane(ws, n, l, scales[l], vals, vecs);
    }
    result
}

/// Copies each matrix's lower triangle, scaled into `[1, 2)`, into lane `l`
/// of `ws.a` (the lanes past `a.len()`, and those of non-finite matrices,
/// hold zero matrices, which no sweep touches) and `V = I` into `ws.v`;
/// marks non-finite matrices in `result`. Returns each lane's `(h, r)`
/// scale factors.
fn load<T: Scalar>(
    a: &[MatRef<'_, T>],
    ws: &mut SyevjWorkspace<T>,
    with_vectors: bool,
    result: &mut [Result<usize>],
) -> [(T, T); LANES] {
    let n = a[0].nrows();
    let (z, one) = (T::zero(), T::one());
    ws.a.clear();
    ws.a.resize(n * n, [z; LANES]);
    ws.v.clear();
    if with_vectors {
        ws.v.resize(n * n, [z; LANES]);
        for i in 0..n {
            ws.v[i + i * n] = [one; LANES];
        }
    }
    let mut scales = [(one, one); LANES];
    for (l, m) in a.iter().enumerate() {
        let mut amax = z;
        let mut finite = true;
        for j in 0..n {
            for i in j..n {
                let x = m[(i, j)];
                finite &= x.is_finite();
                amax = amax.max(x.abs());
            }
        }
        if !finite {
            let e = crate::matrix::check_finite(*m, true);
            result[l] = Err(e.expect_err("a non-finite entry was seen"));
            continue;
        }
        let (h, r) = scale_of(amax);
        scales[l] = (h, r);
        for j in 0..n {
            for i in j..n {
                ws.a[i + j * n][l] = m[(i, j)] * h * r;
            }
        }
    }
    scales
}

/// `(h, r)`, powers of two with `amax h r` in `[1, 2)` (`(1, 1)` for zero),
/// split in two so that neither over- nor underflows: from the exponent of
/// `amax` (a positive finite number or zero), exactly.
fn scale_of<T: Scalar>(amax: T) -> (T, T) {
    let x = amax.f64();
    if x == 0.0 {
        return (T::one(), T::one());
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    // floor(log2(x)): from the exponent field, or for a subnormal from the
    // position of the mantissa's leading one.
    let k = if biased == 0 {
        -1074 + (63 - bits.leading_zeros() as i32)
    } else {
        biased - 1023
    };
    let e = -k;
    let pow2 = |p: i32| T::of(f64::from_bits(((p + 1023) as u64) << 52));
    (pow2(e / 2), pow2(e - e / 2))
}

/// Sweeps until every lane had a sweep without rotation, or
/// `params.max_sweeps`: per lane, the sweeps it ran (its last, rotation-free
/// one included) and whether it was still rotating at the end.
fn iterate<T: Scalar>(
    ws: &mut SyevjWorkspace<T>,
    n: usize,
    with_vectors: bool,
    params: &SyevjParams,
) -> [(usize, bool); LANES] {
    // Off-diagonal entries below eps^2 of the largest entry (in [1, 2) after
    // scaling) move no eigenvalue by more than n eps^2 ||A||.
    let floor = T::EPS * T::EPS;
    let mut state = [(0usize, true); LANES];
    let v: &mut [[T; LANES]] = if with_vectors { &mut ws.v } else { &mut [] };
    for _ in 0..params.max_sweeps {
        if state.iter().all(|s| !s.1) {
            break;
        }
        let mut rotated = [false; LANES];
        lanes::sweep::<T, LANES>(&mut ws.a, v, n, floor, &mut rotated);
        for (s, &r) in state.iter_mut().zip(&rotated) {
            if s.1 {
                s.0 += 1;
                s.1 = r;
            }
        }
    }
    state
}

/// Lane `l`'s eigenvalues, unscaled by `(h, r)` and ascending, into
/// `values`, and the matching columns of `V` into `vectors`.
fn write_lane<T: Scalar>(
    ws: &mut SyevjWorkspace<T>,
    n: usize,
    l: usize,
    (h, r): (T, T),
    values: &mut [T],
    vectors: Option<&mut [T]>,
) {
    // Products by the exact reciprocals of the powers of two `h` and `r`:
    // the same real numbers as the quotients, so the same roundings.
    let (ih, ir) = (T::one() / h, T::one() / r);
    ws.d.clear();
    ws.d.extend((0..n).map(|i| ws.a[i + i * n][l] * ih * ir));
    ws.order.clear();
    ws.order.extend(0..n);
    let (d, order) = (&ws.d, &mut ws.order);
    // Insertion sort (the orders of this route are small), stable: equal
    // eigenvalues keep the order of their columns.
    let less = |i: usize, j: usize| d[i].f64().total_cmp(&d[j].f64()).is_lt();
    for i in 1..n {
        let mut j = i;
        while j > 0 && less(order[j], order[j - 1]) {
            order.swap(j, j - 1);
            j -= 1;
        }
    }
    for (x, &i) in values.iter_mut().zip(order.iter()) {
        *x = d[i];
    }
    if let Some(out) = vectors {
        for (col, &i) in out.chunks_exact_mut(n).zip(order.iter()) {
            for (x, vk) in col.iter_mut().zip(&ws.v[i * n..(i + 1) * n]) {
                *x = vk[l];
            }
        }
    }
}

/// The error of a matrix still rotating after `max_sweeps` sweeps.
fn no_convergence(max_sweeps: usize) -> Error {
    Error::NoConvergence {
        stage: "syevj",
        detail: format!("still rotating after {max_sweeps} Jacobi sweeps"),
    }
}

/// Flops of one `n x n` matrix, a cost hint: about 8 sweeps of `n^2 / 2`
/// rotations of `6 n` flops (`12 n` with vectors).
pub fn flops(n: usize, vectors: bool) -> f64 {
    let n = n as f64;
    let per = if vectors { 12.0 } else { 6.0 };
    8.0 * n * n / 2.0 * per * n
}

#[cfg(test)]
mod tests;
