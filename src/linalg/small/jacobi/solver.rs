//! One matrix's blocked one-sided Jacobi iteration ([004 §5] for one
//! problem), as a state that advances one outer sweep at a time, so a batch
//! driver can interleave many matrices and drop converged ones (masking,
//! [004 §8]).

use super::inner::jacobi_sweeps;
use super::order::sweep_schedule;
use super::JacobiParams;
use crate::linalg::householder::apply_block_reflector_left;
use crate::linalg::householder::panel_qr::panel_qr;
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};

/// Scratch space of the solver, reused across pairs, sweeps and matrices of
/// one shape: the packed block pair of the working matrix and of `V`, the
/// Gram matrix, the accumulated rotations and the two round-robin schedules.
pub struct JacobiWorkspace<T> {
    p: Mat<T>,
    pv: Mat<T>,
    g: Vec<T>,
    jac: Vec<T>,
    outer: Vec<Vec<(usize, usize)>>,
    outer_l: usize,
    inner: Vec<Vec<(usize, usize)>>,
    inner_n: usize,
}

impl<T: Scalar> Default for JacobiWorkspace<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> JacobiWorkspace<T> {
    /// An empty workspace; it grows to the first shape it serves.
    pub fn new() -> Self {
        JacobiWorkspace {
            p: Mat::new(),
            pv: Mat::new(),
            g: Vec::new(),
            jac: Vec::new(),
            outer: Vec::new(),
            outer_l: 0,
            inner: Vec::new(),
            inner_n: 0,
        }
    }

    fn fit(&mut self, m: usize, n: usize, nb: usize, l: usize, vectors: bool) {
        let nn = 2 * nb;
        if self.p.nrows() != m || self.p.ncols() != nn {
            self.p = Mat::zeros(m, nn);
        }
        if vectors && (self.pv.nrows() != n || self.pv.ncols() != nn) {
            self.pv = Mat::zeros(n, nn);
        }
        self.g.resize(nn * nn, T::zero());
        self.jac.resize(nn * nn, T::zero());
        if self.outer_l != l {
            self.outer = sweep_schedule(l);
            self.outer_l = l;
        }
        if self.inner_n != nn {
            self.inner = sweep_schedule(nn);
            self.inner_n = nn;
        }
    }
}

/// Where one matrix's iteration stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Still iterating.
    Running,
    /// A sweep at the floor tolerance applied no rotation.
    Converged,
    /// The sweep limit was reached first.
    NotConverged,
}

/// Counters of one matrix's iteration (for tests and tuning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JacobiStats {
    /// Outer sweeps run (including the final sweep without rotation).
    pub sweeps: usize,
    /// Block pairs whose update was applied.
    pub pair_updates: usize,
    /// Block pairs whose inner solve applied no rotation, so the update
    /// (`J = I`) was skipped ([004 §8], the per-pair skip).
    pub pair_skips: usize,
}

/// The blocked one-sided Jacobi iteration of one matrix.
///
/// Works on the tall orientation (`m >= n`; a wide input is transposed on
/// entry) of the input scaled by a power of two so that its largest entry is
/// in `[1, 2)` (exact, and keeps the Gram entries far from overflow and
/// underflow), padded with zero columns to `n2 = l * nb` (`l` even). Padding
/// columns have a zero Gram row and are never rotated.
pub struct JacobiState<T> {
    /// `m x n2`, converges to `U Sigma` (scaled); `n x n2` (the triangle
    /// `R`) with QR preconditioning.
    w: Mat<T>,
    /// `n x n2`, the accumulated rotations, if vectors are wanted.
    v: Option<Mat<T>>,
    /// With QR preconditioning and vectors, to form `U = Q U_R` at the end.
    qr: Option<Reflectors<T>>,
    /// Rows of the tall orientation of the input.
    m_in: usize,
    /// Rows of `w`: `m_in`, or `n` with QR preconditioning.
    m: usize,
    n: usize,
    nb: usize,
    l: usize,
    /// The input was multiplied by `scale.0` and then by `scale.1`.
    scale: (T, T),
    transposed: bool,
    /// Current rotation threshold, in multiples of `T::EPS`.
    tol: T,
    floor: T,
    max_sweeps: usize,
    inner_sweeps: usize,
    status: Status,
    stats: JacobiStats,
}

/// `(l, nb)`: an even block count `l >= 2` and a block width with
/// `l * nb >= n` and the least padding for the requested width.
pub(crate) fn blocking(n: usize, params: &JacobiParams) -> (usize, usize) {
    let target = params.block.max(1);
    let l = n.div_ceil(target).max(2).next_multiple_of(2);
    (l, n.div_ceil(l).max(1))
}

/// `(h, r)`, powers of two with `amax * h * r` in `[1, 2)` (both 1 for a
/// zero matrix): two factors so that neither under- nor overflows even when
/// their product would (a subnormal `amax`).
pub(crate) fn pow2_scale<T: Scalar>(amax: T) -> (T, T) {
    if amax == T::zero() {
        return (T::one(), T::one());
    }
    let e = -amax.f64().log2().floor() as i32;
    (T::of(2f64.powi(e / 2)), T::of(2f64.powi(e - e / 2)))
}

impl<T: Scalar> JacobiState<T> {
    /// Starts the iteration on `a` (`m x n`, any shape, finite entries: the
    /// caller checks). `vectors`: accumulate `V` (needed for `U` and `V^T`).
    pub fn new(a: MatRef<'_, T>, vectors: bool, params: &JacobiParams) -> Self {
        let transposed = a.nrows() < a.ncols();
        let a = if transposed { a.transpose() } else { a };
        let (m, n) = (a.nrows(), a.ncols());
        let (l, nb) = blocking(n, params);
        let n2 = l * nb;
        let mut amax = T::zero();
        for j in 0..n {
            for i in 0..m {
                amax = amax.max(a[(i, j)].abs());
            }
        }
        let scale = pow2_scale(amax);
        let mut w = Mat::<T>::zeros(m, n2);
        for j in 0..n {
            for i in 0..m {
                w[(i, j)] = a[(i, j)] * scale.0 * scale.1;
            }
        }
        let m_in = m;
        let mut qr = None;
        if m > n && m as f64 >= params.qr_min_aspect * n as f64 {
            if let Some((r, reflectors)) = triangle_of_qr(w.as_ref().subcols(0, n), n2) {
                w = r;
                qr = vectors.then_some(reflectors);
            }
        }
        let m = w.nrows();
        let v = vectors.then(|| Mat::<T>::identity(n, n2));
        let floor = T::of(params.tol_floor);
        // Digest A.9: start at 10^floor(0.3 log10(1/eps)) (1e4 for f64, 1e2
        // for f32), divided by 10 per sweep down to the floor.
        let start = params
            .tol_start
            .unwrap_or_else(|| 10f64.powf((0.3 * (1.0 / T::EPS.f64()).log10()).floor()));
        JacobiState {
            w,
            v,
            qr,
            m_in,
            m,
            n,
            nb,
            l,
            scale,
            transposed,
            tol: T::of(start).max(floor),
            floor,
            max_sweeps: params.max_sweeps,
            inner_sweeps: params.inner_sweeps.max(1),
            status: if params.max_sweeps == 0 {
                Status::NotConverged
            } else {
                Status::Running
            },
            stats: JacobiStats::default(),
        }
    }

    /// The iteration's status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The iteration's counters.
    pub fn stats(&self) -> JacobiStats {
        self.stats
    }

    /// `(l, nb)`: block count (even, padded) and block width.
    pub fn blocks(&self) -> (usize, usize) {
        (self.l, self.nb)
    }

    /// One outer sweep: the `l - 1` round-robin iterations of `l / 2` block
    /// pairs (S1-S5 of [004 §5]). Per pair: pack `P = [W_j W_k]`, form the
    /// Gram matrix `G = P^T P` (one GEMM), run the inner solver on `G`, and,
    /// if it rotated, write `[W_j W_k] = P J` and `[V_j V_k] = P_v J` (the
    /// fused update: each block column read once and written once, as Alg. 3
    /// of [004 §7]). Then the tolerance schedule: convergence is accepted
    /// only after a sweep without rotation at the floor tolerance; a sweep
    /// without rotation above the floor moves the threshold straight to the
    /// floor (the intermediate steps would find nothing either, up to the
    /// tighter test).
    ///
    /// Does nothing once the status is not [`Status::Running`].
    pub fn sweep(&mut self, ws: &mut JacobiWorkspace<T>) {
        if self.status != Status::Running {
            return;
        }
        let rotated = self.pair_pass(ws);
        self.stats.sweeps += 1;
        if !rotated && self.tol <= self.floor {
            self.status = Status::Converged;
        } else {
            self.tol = if rotated {
                (self.tol / T::of(10.0)).max(self.floor)
            } else {
                self.floor
            };
            if self.stats.sweeps >= self.max_sweeps {
                self.status = Status::NotConverged;
            }
        }
    }

    /// A sweep of a matrix that already converged, as an unmasked batch
    /// solver runs it while other matrices of its batch still iterate
    /// ([004 §8] before Design-4). Status and sweep count are unchanged.
    /// Returns whether it rotated anything: it cannot, because the previous
    /// sweep saw the same Gram matrices at the same (floor) threshold, so
    /// the working matrix is left bitwise unchanged; tests use this to show
    /// that masking changes no result.
    pub fn idle_sweep(&mut self, ws: &mut JacobiWorkspace<T>) -> bool {
        if self.status != Status::Converged {
            return false;
        }
        self.pair_pass(ws)
    }

    /// The pair loop of one sweep; whether any pair was rotated.
    fn pair_pass(&mut self, ws: &mut JacobiWorkspace<T>) -> bool {
        let (m, n, nb, l) = (self.m, self.n, self.nb, self.l);
        ws.fit(m, n, nb, l, self.v.is_some());
        let nn = 2 * nb;
        let tol_abs = self.tol * T::EPS;
        let mut rotated = false;
        let JacobiWorkspace {
            p,
            pv,
            g,
            jac,
            outer,
            inner,
            ..
        } = ws;
        for step in outer.iter() {
            for &(bj, bk) in step {
                let (cj, ck) = (bj * nb, bk * nb);
                p.as_mut()
                    .subcols_mut(0, nb)
                    .copy_from(self.w.as_ref().subcols(cj, nb));
                p.as_mut()
                    .subcols_mut(nb, nb)
                    .copy_from(self.w.as_ref().subcols(ck, nb));
                let gm = MatMut::from_column_major_slice_mut(&mut g[..], nn, nn);
                matmul(
                    gm,
                    Accum::Replace,
                    p.transpose(),
                    p.as_ref(),
                    T::one(),
                    Par::Seq,
                );
                if !jacobi_sweeps(g, jac, nn, inner, tol_abs, self.inner_sweeps) {
                    self.stats.pair_skips += 1;
                    continue;
                }
                rotated = true;
                self.stats.pair_updates += 1;
                let j = MatRef::from_column_major_slice(&jac[..], nn, nn);
                matmul(
                    self.w.as_mut().subcols_mut(cj, nb),
                    Accum::Replace,
                    p.as_ref(),
                    j.subcols(0, nb),
                    T::one(),
                    Par::Seq,
                );
                matmul(
                    self.w.as_mut().subcols_mut(ck, nb),
                    Accum::Replace,
                    p.as_ref(),
                    j.subcols(nb, nb),
                    T::one(),
                    Par::Seq,
                );
                if let Some(v) = self.v.as_mut() {
                    pv.as_mut()
                        .subcols_mut(0, nb)
                        .copy_from(v.as_ref().subcols(cj, nb));
                    pv.as_mut()
                        .subcols_mut(nb, nb)
                        .copy_from(v.as_ref().subcols(ck, nb));
                    matmul(
                        v.as_mut().subcols_mut(cj, nb),
                        Accum::Replace,
                        pv.as_ref(),
                        j.subcols(0, nb),
                        T::one(),
                        Par::Seq,
                    );
                    matmul(
                        v.as_mut().subcols_mut(ck, nb),
                        Accum::Replace,
                        pv.as_ref(),
                        j.subcols(nb, nb),
                        T::one(),
                        Par::Seq,
                    );
                }
            }
        }
        rotated
    }

    /// Sweeps until converged or the sweep limit; returns the final status.
    pub fn run(&mut self, ws: &mut JacobiWorkspace<T>) -> Status {
        while self.status == Status::Running {
            self.sweep(ws);
        }
        self.status
    }

    /// Writes the result for the input's shape (`M x N`, `k = min(M, N)`):
    /// `values` (`k`, descending), and if given `u` (`M x k`, column-major)
    /// and `vt` (`k x N`, column-major). Vectors need a state made with
    /// `vectors = true`.
    ///
    /// Singular values are the column norms of the final working matrix,
    /// sorted descending (stable, so equal values keep column order). A `U`
    /// column whose singular value is zero (an exactly zero column, or one
    /// below `T::SAFE_MIN` after scaling, whose value is then reported as 0)
    /// cannot be normalised; it is completed to an orthonormal basis instead:
    /// the unit vector `e_i` farthest from the span of the columns before it,
    /// orthogonalised twice (classical Gram-Schmidt) and normalised. MAGMA
    /// leaves such columns zero (its finalize step, [004 §5]); we choose the
    /// completion so `U` is always orthonormal.
    ///
    /// # Panics
    /// If a slice has the wrong length, or vectors are asked of a state made
    /// without them (caller errors).
    pub fn finish(&self, values: &mut [T], u: Option<&mut [T]>, vt: Option<&mut [T]>) {
        let (m, n) = (self.m_in, self.n);
        assert_eq!(values.len(), n);
        let mut sigma: Vec<T> = (0..n).map(|c| col_norm(self.w.col_as_slice(c))).collect();
        for s in sigma.iter_mut() {
            if *s <= T::SAFE_MIN {
                *s = T::zero();
            }
        }
        let mut perm: Vec<usize> = (0..n).collect();
        // A state that did not converge may hold NaN (its matrix is then
        // reported as failed); its order is of no consequence, but it must
        // not panic.
        perm.sort_by(|&a, &b| {
            sigma[b]
                .partial_cmp(&sigma[a])
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        for (k, &c) in perm.iter().enumerate() {
            values[k] = sigma[c] / self.scale.0 / self.scale.1;
        }
        if u.is_none() && vt.is_none() {
            return;
        }
        let v = self
            .v
            .as_ref()
            .expect("finish: vectors of a values-only state");
        // U_B (m x n) and V_B (n x n) of the tall working matrix B; with QR
        // preconditioning, U_R (n x n) of R first.
        let mut ub = Mat::<T>::zeros(self.m, n);
        for (k, &c) in perm.iter().enumerate() {
            if sigma[c] > T::zero() {
                let inv = T::one() / sigma[c];
                let src = self.w.col_as_slice(c);
                for (d, &s) in ub.col_as_slice_mut(k).iter_mut().zip(src) {
                    *d = s * inv;
                }
            } else {
                complete_column(&mut ub, k);
            }
        }
        if let Some((reflectors, t)) = &self.qr {
            ub = times_q(reflectors.as_ref(), t.as_ref(), ub.as_ref());
        }
        let (rows_u, cols_vt) = if self.transposed { (n, m) } else { (m, n) };
        if let Some(u) = u {
            assert_eq!(u.len(), rows_u * n);
            let mut um = MatMut::from_column_major_slice_mut(u, rows_u, n);
            if self.transposed {
                // A = B^T = V_B S U_B^T: U_A = V_B.
                for (k, &c) in perm.iter().enumerate() {
                    um.as_mut().col_mut(k).copy_from(v.col(c));
                }
            } else {
                um.copy_from(ub.as_ref());
            }
        }
        if let Some(vt) = vt {
            assert_eq!(vt.len(), n * cols_vt);
            let mut vm = MatMut::from_column_major_slice_mut(vt, n, cols_vt);
            if self.transposed {
                vm.copy_from(ub.transpose());
            } else {
                for (k, &c) in perm.iter().enumerate() {
                    vm.as_mut().row_mut(k).copy_from(v.col(c).transpose());
                }
            }
        }
    }
}

/// The Householder reflectors of a tall `m x n` QR (tails below the
/// diagonal of the matrix, `v[0] = 1` implicit) and the compact-WY factor
/// `T` with `Q = I - V T V^T`.
type Reflectors<T> = (Mat<T>, Mat<T>);

/// Householder QR of the tall `a` (`m x n`, `m > n`) by
/// [`panel_qr`] on a copy, which ends up holding the reflectors. Returns
/// `R` padded with zero columns to `n2` (the Jacobi working matrix) and the
/// reflectors with their `T` factor; `None` when a diagonal entry of `R` is
/// exactly zero.
///
/// Why `None`: the columns of a singular triangle live in a subspace with
/// exactly zero coordinates, where more columns than its dimension cannot
/// be made orthogonal in floating point: the noise left in the ones that
/// should vanish stays parallel to the others and is rotated without end
/// (a 3 x 2 matrix of ones, whose unblocked QR has an exactly zero pivot,
/// did not converge in 100 sweeps). Such exactly rank-deficient matrices
/// keep the full working matrix, whose rounding errors spread over all `m`
/// coordinates (it converged in 3 sweeps). A nonsingular `R` has
/// independent columns, however ill-conditioned.
pub(super) fn triangle_of_qr<T: Scalar>(
    a: MatRef<'_, T>,
    n2: usize,
) -> Option<(Mat<T>, Reflectors<T>)> {
    let n = a.ncols();
    let mut f = a.to_owned();
    let mut tau = vec![T::zero(); n];
    let mut t = Mat::<T>::zeros(n, n);
    panel_qr(f.as_mut(), &mut tau, t.as_mut());
    if (0..n).any(|i| f[(i, i)] == T::zero()) {
        return None;
    }
    let r = Mat::from_fn(n, n2, |i, j| {
        if j < n && i <= j {
            f[(i, j)]
        } else {
            T::zero()
        }
    });
    Some((r, (f, t)))
}

/// `Q [x; 0]` (`m x c`) for the `Q = I - V T V^T` of [`triangle_of_qr`]
/// (`V` `m x n`) and an `n x c` matrix `x` (LAPACK `dormqr` by one block).
pub(super) fn times_q<T: Scalar>(
    reflectors: MatRef<'_, T>,
    t: MatRef<'_, T>,
    x: MatRef<'_, T>,
) -> Mat<T> {
    let (m, n) = (reflectors.nrows(), reflectors.ncols());
    let mut y = Mat::from_fn(
        m,
        x.ncols(),
        |i, j| if i < n { x[(i, j)] } else { T::zero() },
    );
    apply_block_reflector_left(reflectors, t, y.as_mut(), false);
    y
}

/// The 2-norm of `x`, scaled by its largest entry so that squares of tiny
/// entries do not underflow.
fn col_norm<T: Scalar>(x: &[T]) -> T {
    let amax = x.iter().fold(T::zero(), |a, &b| a.max(b.abs()));
    if amax == T::zero() {
        return T::zero();
    }
    let inv = T::one() / amax;
    let ss = x.iter().fold(T::zero(), |s, &v| {
        let y = v * inv;
        s + y * y
    });
    amax * ss.sqrt()
}

/// Sets column `k` of `u` (orthonormal columns `0..k` above it) to a unit
/// vector orthogonal to them: the `e_i` with the largest component outside
/// their span (its squared distance is `1 - |row i|^2`, at least
/// `(m - k) / m` for the best `i`), orthogonalised twice and normalised.
fn complete_column<T: Scalar>(u: &mut Mat<T>, k: usize) {
    let m = u.nrows();
    let mut best = (0usize, T::neg_infinity());
    for i in 0..m {
        let r2 = (0..k).fold(T::zero(), |s, c| s + u[(i, c)] * u[(i, c)]);
        let d = T::one() - r2;
        if d > best.1 {
            best = (i, d);
        }
    }
    let mut x = vec![T::zero(); m];
    x[best.0] = T::one();
    for _ in 0..2 {
        for c in 0..k {
            let col = u.col_as_slice(c);
            let dot = col.iter().zip(&x).fold(T::zero(), |s, (&a, &b)| s + a * b);
            for (xi, &a) in x.iter_mut().zip(col) {
                *xi -= dot * a;
            }
        }
    }
    let nrm = col_norm(&x);
    for (d, &s) in u.col_as_slice_mut(k).iter_mut().zip(&x) {
        *d = s / nrm;
    }
}
