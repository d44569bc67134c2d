//! The SVD of one small dense matrix by Householder bidiagonalisation and a
//! bidiagonal solver: the second route of the batched SVD (seed 002, Dong et
//! al.'s batched GEBRD, here on the CPU with one matrix per kernel call; the
//! batch parallelism lives in `pipeline::batched`).
//!
//! Steps, for the tall working matrix `B` (`mt x nt`, `mt >= nt`; a wide input
//! is transposed, as the Jacobi route does, and `U`, `V` swap on output):
//!
//! 1. [`gebd2`]: unblocked Householder bidiagonalisation (LAPACK `dgebd2`
//!    order): `B = Q Bd P^T` with `Bd` upper bidiagonal. At the sizes of this
//!    route (`n <= 512`, most of the time `n <= 128`) the working matrix sits in
//!    L2, and a blocked `dlabrd` panel only pays off beyond that (seed 002
//!    §8.1 measured its blocked v1 slower than the non-blocked kernel below
//!    `n = 224` even on a GPU).
//! 2. Values only: the dqds of [`crate::linalg::bidiagonal::dqds`] on `Bd`.
//!    With vectors: [`org2r`] forms `Q` (`mt x nt`) and `P` (`nt x nt`)
//!    explicitly from the reflectors (LAPACK `dorgbr`), then the implicit-shift
//!    bidiagonal QR of [`crate::linalg::bidiagonal::bdsdc::bdsqr`] rotates their columns in
//!    place (`U = Q Q_b`, `V = P P_b`), as LAPACK `dgesvd` does: no GEMM is
//!    needed and the rotations touch contiguous column pairs. From
//!    `min(m, n) >=` [`DC_FROM`] the bidiagonal's vectors come instead from
//!    the divide and conquer of [`crate::linalg::bidiagonal::bdsdc`] (its pieces, walked
//!    serially) and are multiplied into `Q` and `P` by two GEMMs (faer,
//!    `Par::Seq`), as LAPACK `dgesdd` does.
//!
//! From [`BLOCKED_FROM`] columns with vectors ([`BLOCKED_FROM_VALUES`] for
//! values only) both steps follow LAPACK `dgesdd` instead: the blocked
//! `dgebrd` of [`crate::linalg::bidiagonal::gebrd`], the divide and conquer, then `Q`
//! and `P` applied to the bidiagonal's vectors as compact-WY blocks
//! (`dormbr`), which moves most flops into GEMMs.
//!
//! Below [`LANES_BELOW`] steps 1 and 2's `gebd2` and `org2r` run on groups of up to [`LANES`]
//! matrices at once in interleaved storage ([`small_svd_group`], module
//! `lanes`): one SIMD operation advances the same step of every matrix of
//! the group. A matrix gets the same bits in a group of four, of two or
//! alone ([`small_svd`] is a group of one).
//!
//! Every step is serial with fixed summation orders ([`crate::linalg::householder::dot`]
//! and the lanes' per-matrix sums), so the result depends only on the input
//! matrix.
//!
//! Allocation: the [`GebrdWorkspace`] holds every buffer of steps 1-2 and is
//! reused across the matrices of a chunk; the two reused solvers still make
//! a few small per-call allocations of `O(n)` (their rotation and qd lists),
//! and the blocked route's `dgebrd` and `dormbr` allocate their panels and
//! triangular factors per call (`O(n nb)`).

use crate::linalg::bidiagonal::bdsdc::bdsqr::{bdsqr_group, bdsqr_run, Lane};
use crate::linalg::householder::{larf2_left, larf_left, larf_right, larfg_slice};
use crate::{Result, Scalar};
use faer::reborrow::*;
use faer::{MatMut, MatRef};

mod blocked;
mod dc;
mod lanes;
mod load;
mod outputs;
mod pack;

pub use lanes::LANES;

use blocked::blocked_svd;
use load::{load_scaled, Scaled};
use outputs::{bidiagonal_dc, dc_outputs, values_by_dqds, write_qr_outputs};

/// From this order on (`min(m, n)`), vectors come from the bidiagonal
/// divide and conquer and two GEMMs rather than from QR rotations applied to
/// `Q` and `P` (see [`small_svd`]). Measured per square f64 matrix with
/// vectors on a loaded machine, QR / D&C: n = 16: 0.047 / 0.073 ms, 24:
/// 0.12 / 0.15, 32: 0.26 / 0.19, 40: 0.25 / 0.46, 48: 0.71 / 0.50, 64:
/// 1.7 / 1.5, 96: 5.5 / 4.3, 128: 12.8 / 9.1 (noisy around 32-40, so the
/// switch is at 48, where D&C won clearly).
pub const DC_FROM: usize = 48;

/// From this order on (`min(m, n)`), with vectors, the reduction is LAPACK's
/// blocked one (`dgebrd` with `dlabrd` panels, [`crate::linalg::bidiagonal::gebrd::gebrd`])
/// and the vectors are formed by applying `Q` and `P` to the bidiagonal's
/// vectors as compact-WY blocks (`dormbr`), as LAPACK `dgesdd` does, instead
/// of [`gebd2`], [`org2r`] and two GEMMs. Below it the unblocked kernels'
/// lower overhead wins. Measured per square f64 matrix, one thread, unblocked
/// / blocked (best of four alternating runs on a noisy 2-core AVX2 machine):
/// n = 64: 0.56 / 1.09 ms, 96: 1.63 / 1.79, 128: 2.92 / 2.77, 192: 8.9 / 7.4.
pub const BLOCKED_FROM: usize = 128;

/// [`BLOCKED_FROM`] for singular values only (`dgebrd`, then dqds), measured
/// the same way: n = 128: 1.10 / 1.42 ms, 160: 1.83 / 1.76, 224: 4.65 / 4.04,
/// 320: 13.2 / 10.3.
pub const BLOCKED_FROM_VALUES: usize = 160;

/// Below this `min(m, n)`, the reductions run in interleaved groups
/// ([`small_svd_group`]): with vectors, exactly the bidiagonal-QR route
/// (below [`DC_FROM`]).
///
/// Measured per square f64 matrix in groups of four uniform random
/// matrices on one thread (three runs each, column-vectorised /
/// interleaved), the groups won at every size of the unblocked routes:
/// values only n = 32: 0.071-0.074 / 0.059-0.061 ms, 64: 0.303-0.307 /
/// 0.266-0.268, 128: 1.49-1.66 / 1.33-1.45; with vectors 32: 0.127-0.139 /
/// 0.109-0.114, 64: 0.75-0.85 / 0.66-0.68, 96: 1.96-2.07 / 1.75-1.95.
/// In the batched route on two workers they did not beyond 48: its chunks
/// are sized for L2, which leaves one or two matrices per chunk from about
/// n = 96 (groups of two or one), and the interleaved copy adds memory
/// traffic. Alternated runs of `batched_svd --method gebrd --threads 2`,
/// without / with groups up to 160: 1,000 x 128x128 values 0.65-0.75 /
/// 0.86-0.95 s, 1,500 x 96x96 vectors 1.35-1.72 / 1.81-1.88 s, 4,000 x
/// 64x64 equal within the noise (values 0.52-0.59 / 0.52-0.55, vectors
/// 1.27-1.47 / 1.24-1.43).
pub const LANES_BELOW: usize = DC_FROM;

/// Reusable buffers of [`small_svd`] for matrices of one shape.
#[derive(Debug)]
pub struct GebrdWorkspace<T> {
    /// Vectors by divide and conquer from this `min(m, n)` on (default
    /// [`DC_FROM`]); by bidiagonal QR below it. For tuning and tests.
    pub dc_from: usize,
    /// With vectors, the blocked reduction and `dormbr` from this
    /// `min(m, n)` on (default [`BLOCKED_FROM`]; at least `dc_from` in
    /// effect, the blocked path has no bidiagonal-QR variant). For tuning and
    /// tests.
    pub blocked_from: usize,
    /// Values only, the blocked reduction from this `min(m, n)` on (default
    /// [`BLOCKED_FROM_VALUES`]).
    pub blocked_from_values: usize,
    /// Matrices with `min(m, n)` below this are reduced in interleaved
    /// groups ([`small_svd_group`], default [`LANES_BELOW`]) where the route
    /// starts with [`gebd2`]. For tuning and tests.
    pub lanes_below: usize,
    lanes: lanes::LaneWorkspace<T>,
    a: Vec<T>,
    vr: Vec<T>,
    tauq: Vec<T>,
    taup: Vec<T>,
    d: Vec<T>,
    e: Vec<T>,
    q: Vec<T>,
    p: Vec<T>,
    w: Vec<T>,
    ub: Vec<T>,
    vb: Vec<T>,
}

impl<T: Scalar> Default for GebrdWorkspace<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> GebrdWorkspace<T> {
    /// An empty workspace; buffers grow on first use.
    pub fn new() -> Self {
        GebrdWorkspace {
            dc_from: DC_FROM,
            blocked_from: BLOCKED_FROM,
            blocked_from_values: BLOCKED_FROM_VALUES,
            lanes_below: LANES_BELOW,
            lanes: lanes::LaneWorkspace::default(),
            a: Vec::new(),
            vr: Vec::new(),
            tauq: Vec::new(),
            taup: Vec::new(),
            d: Vec::new(),
            e: Vec::new(),
            q: Vec::new(),
            p: Vec::new(),
            w: Vec::new(),
            ub: Vec::new(),
            vb: Vec::new(),
        }
    }

    /// Sizes every buffer for a tall `mt x nt` working matrix.
    fn reserve(&mut self, mt: usize, nt: usize, vectors: bool) {
        let z = T::zero();
        self.a.resize(mt * nt, z);
        self.vr.resize(nt * nt, z);
        self.tauq.resize(nt, z);
        self.taup.resize(nt, z);
        self.d.resize(nt, z);
        self.e.resize(nt.saturating_sub(1), z);
        self.w.resize(mt, z);
        if vectors {
            self.q.resize(mt * nt, z);
            self.p.resize(nt * nt, z);
            if nt >= self.dc_from {
                self.ub.resize(nt * nt, z);
                self.vb.resize(nt * nt, z);
            }
        }
    }
}

/// The contiguous storage of column `j` of `z` (unit row stride required).
fn col<T>(z: MatMut<'_, T>, j: usize) -> &mut [T] {
    z.col_mut(j)
        .try_as_col_major_mut()
        .expect("unit row stride")
        .as_slice_mut()
}

simd_dispatch! {
    /// Householder bidiagonalisation of the tall `a` (`m x n`, `m >= n`, unit row
    /// stride), LAPACK `dgebd2` for the upper bidiagonal case:
    /// `H_{n-1} .. H_0 A G_0 .. G_{n-2} = Bd` with diagonal `d` (length `n`) and
    /// superdiagonal `e` (length `n - 1`).
    ///
    /// On exit the tail of the left reflector `H_i` (`v[0] = 1` implicit) is in
    /// `a[i+1.., i]` with `tauq[i]`; the tail of the right reflector `G_i`
    /// (acting on columns `i+1..`, `v[0] = 1` implicit at `i + 1`) is in
    /// `vr[i+2.., i]` (`vr` is `n x n`) with `taup[i]` (`taup[n-1] = 0`). The rest
    /// of `a` and `vr` is unspecified. `w` needs `m` entries.
    ///
    /// Compiled for AVX2 or AVX-512 when the CPU has them (the reflector
    /// applications are its flops), with the same results.
    #[allow(clippy::too_many_arguments)]
    pub fn gebd2 / gebd2_dispatch / gebd2_body (
        a: MatMut<'_, T>,
        tauq: &mut [T],
        taup: &mut [T],
        d: &mut [T],
        e: &mut [T],
        vr: MatMut<'_, T>,
        w: &mut [T]
    )
}

#[inline(always)]
fn gebd2_body<T: Scalar>(
    mut a: MatMut<'_, T>,
    tauq: &mut [T],
    taup: &mut [T],
    d: &mut [T],
    e: &mut [T],
    mut vr: MatMut<'_, T>,
    w: &mut [T],
) {
    let (m, n) = (a.nrows(), a.ncols());
    assert!(m >= n, "gebd2: needs m >= n");
    for i in 0..n {
        // Left reflector: annihilate a[i+1.., i], then update columns i+1...
        let (left, right) = a.rb_mut().split_at_col_mut(i + 1);
        let (alpha, tail) = col(left, i)[i..].split_first_mut().expect("i < m");
        tauq[i] = larfg_slice(alpha, tail);
        d[i] = *alpha;
        larf_left(tauq[i], tail, right.submatrix_mut(i, 0, m - i, n - i - 1));
        if i + 1 == n {
            taup[i] = T::zero();
            break;
        }
        // Right reflector on row i, columns i+1..: its tail goes to vr (a row
        // of a column-major matrix is strided; the reflector must be a slice).
        let mut alpha = a[(i, i + 1)];
        let vt = &mut col(vr.rb_mut(), i)[i + 2..];
        for (k, x) in vt.iter_mut().enumerate() {
            *x = a[(i, i + 2 + k)];
        }
        taup[i] = larfg_slice(&mut alpha, vt);
        e[i] = alpha;
        let trail = a.rb_mut().submatrix_mut(i + 1, i + 1, m - i - 1, n - i - 1);
        larf_right(taup[i], vt, trail, w);
    }
}

simd_dispatch! {
    /// Forms `Q = H_0 H_1 .. H_{k-1}` restricted to its first `k` columns
    /// (LAPACK `dorg2r`) into `q` (`r x k`, unit row stride): reflector `j` has
    /// `v[0] = 1` at row `j` and its tail in `v[j+1.., j]` (`v` is `r x k`).
    /// Backward accumulation, so each reflector touches only the columns it
    /// changes. Compiled for AVX2 or AVX-512 when the CPU has them.
    pub fn org2r / org2r_dispatch / org2r_body (v: MatRef<'_, T>, tau: &[T], q: MatMut<'_, T>)
}

#[inline(always)]
fn org2r_body<T: Scalar>(v: MatRef<'_, T>, tau: &[T], mut q: MatMut<'_, T>) {
    let (r, k) = (q.nrows(), q.ncols());
    let tail = |j: usize| -> &[T] {
        &v.col(j)
            .try_as_col_major()
            .expect("unit row stride")
            .as_slice()[j + 1..]
    };
    // Column j of Q is H_j e_j: zero above row j.
    let set_col = |q: MatMut<'_, T>, j: usize| {
        let c = col(q, j);
        c[..j].fill(T::zero());
        c[j] = T::one() - tau[j];
        for (x, &y) in c[j + 1..].iter_mut().zip(tail(j)) {
            *x = -tau[j] * y;
        }
    };
    // Backward accumulation, two reflectors at a time where both act on
    // the same trailing columns (`larf2_left`); an odd last one alone.
    let mut j = k;
    if k % 2 == 1 {
        j -= 1;
        set_col(q.rb_mut(), j);
    }
    while j >= 2 {
        let (j0, j1) = (j - 2, j - 1);
        if j1 + 1 < k {
            larf2_left(
                tau[j0],
                tail(j0),
                tau[j1],
                tail(j1),
                q.rb_mut().submatrix_mut(j0, j1 + 1, r - j0, k - j1 - 1),
            );
        }
        set_col(q.rb_mut(), j1);
        larf_left(
            tau[j0],
            tail(j0),
            q.rb_mut().submatrix_mut(j0, j1, r - j0, 1),
        );
        set_col(q.rb_mut(), j0);
        j -= 2;
    }
}

/// Forms `P = G_0 .. G_{n-2}` (`n x n`) from the right reflectors of
/// [`gebd2`] (`vr`, `taup`): `P[0, 0] = 1` and the trailing block is an
/// [`org2r`] (LAPACK `dorgbr` with `vect = 'P'`).
fn orgbr_p<T: Scalar>(vr: MatRef<'_, T>, taup: &[T], mut p: MatMut<'_, T>) {
    let n = p.nrows();
    p.fill(T::zero());
    p[(0, 0)] = T::one();
    if n > 1 {
        org2r(
            vr.submatrix(1, 0, n - 1, n - 1),
            &taup[..n - 1],
            p.submatrix_mut(1, 1, n - 1, n - 1),
        );
    }
}

/// The thin SVD of `a` (`m x n`, any strides): `values` (`k = min(m, n)`,
/// descending) and, when both slices are given, `u` (`m x k`) and `vt`
/// (`k x n`), column-major. `ws` is reused across calls.
///
/// # Errors
/// [`crate::Error::NoConvergence`] from the bidiagonal solver (stage `"bdsqr"` or
/// `"dqds"`): the outputs then hold unspecified values.
/// [`crate::Error::NonFinite`] (its row and column in `a`) for a NaN or
/// infinite entry: nothing is computed.
///
/// # Panics
/// If a slice has the wrong length (caller error).
pub fn small_svd<T: Scalar>(
    a: MatRef<'_, T>,
    ws: &mut GebrdWorkspace<T>,
    values: &mut [T],
    vectors: Option<(&mut [T], &mut [T])>,
) -> Result<()> {
    let [solved] = small_svd_group([a], [ws], [values], vectors.map(|x| [x]));
    solved
}

/// [`small_svd`] on the routes that do not run in lanes.
fn solve_one<T: Scalar>(
    a: MatRef<'_, T>,
    ws: &mut GebrdWorkspace<T>,
    values: &mut [T],
    vectors: Option<(&mut [T], &mut [T])>,
) -> Result<()> {
    let sc = load_scaled(a, ws, values, vectors.is_some())?;
    let (mt, nt, transposed) = (sc.mt, sc.nt, sc.transposed);
    let unscale = |values: &mut [T]| sc.unscale(values);
    let route = ws.route(nt, vectors.is_some());
    if route == Route::Blocked {
        return blocked_svd(ws, mt, nt, transposed, values, vectors, unscale);
    }
    ws.bidiagonalise(mt, nt);
    let Some((u, vt)) = vectors else {
        return values_by_dqds(&ws.d, &ws.e, values, unscale);
    };
    ws.form_q_p(mt, nt);
    if route == Route::DivideConquer {
        return dc_outputs(ws, &sc, values, u, vt);
    }
    bdsqr_run(ws.qr_lane(mt, nt)?)?;
    write_qr_outputs(ws, &sc, values, u, vt);
    Ok(())
}

/// [`small_svd`] of `L` matrices of one shape, each with its own workspace:
/// results bitwise those of `L` [`small_svd`] calls.
///
/// On the routes that start with [`gebd2`] (values by dqds, vectors by
/// the bidiagonal QR or divide and conquer), below
/// [`GebrdWorkspace::lanes_below`], the `L` reductions and the forming of
/// `Q` and `P` run as one in interleaved storage (module `lanes`: every
/// step is one SIMD operation across the group), and the bidiagonal QR
/// iterations of the group run side by side (`bdsqr_group` of
/// [`crate::linalg::bidiagonal::bdsdc::bdsqr`]: a sweep is a chain of dependent square
/// roots and divisions, and independent chains keep the core busy where one
/// leaves it waiting).
/// Otherwise the matrices are solved one after the other. The route and
/// the thresholds are those of `ws[0]`. Errors and panics per matrix as
/// [`small_svd`] (a non-finite matrix is refused, the others solved);
/// panics if `L = 0`.
pub fn small_svd_group<T: Scalar, const L: usize>(
    a: [MatRef<'_, T>; L],
    mut ws: [&mut GebrdWorkspace<T>; L],
    values: [&mut [T]; L],
    vectors: Option<[(&mut [T], &mut [T]); L]>,
) -> [Result<()>; L] {
    assert!(L > 0, "small_svd_group: at least one matrix");
    let (m, n) = (a[0].nrows(), a[0].ncols());
    assert!(
        a.iter().all(|x| (x.nrows(), x.ncols()) == (m, n)),
        "small_svd_group: one shape"
    );
    let with_vectors = vectors.is_some();
    let mut vectors = vectors.map(|v| v.map(Some));
    if !ws[0].in_lanes(m.min(n), with_vectors) {
        let mut values = values.into_iter();
        return std::array::from_fn(|l| {
            let x = vectors.as_mut().map(|v| v[l].take().expect("once"));
            solve_one(a[l], ws[l], values.next().expect("L values"), x)
        });
    }
    let scaled: [Result<Scaled<T>>; L] =
        std::array::from_fn(|l| load_scaled(a[l], ws[l], &*values[l], with_vectors));
    if scaled.iter().any(|s| s.is_err()) {
        // Rare: the non-finite matrices refused, the others solved alone (a
        // matrix gets the same bits alone as in a group).
        let mut scaled = scaled.into_iter();
        let mut values = values.into_iter();
        let mut ws = ws.into_iter();
        return std::array::from_fn(|l| {
            let x = vectors.as_mut().map(|v| v[l].take().expect("once"));
            let (v, w) = (values.next().expect("L"), ws.next().expect("L"));
            scaled.next().expect("L")?;
            let [r] = small_svd_group([a[l]], [w], [v], x.map(|x| [x]));
            r
        });
    }
    let scaled: [Scaled<T>; L] = scaled.map(|s| s.expect("all finite"));
    let (mt, nt) = (scaled[0].mt, scaled[0].nt);
    lanes::reduce(&mut ws, mt, nt, with_vectors);
    let mut values = values.into_iter();
    let Some(vectors) = vectors else {
        return std::array::from_fn(|l| {
            let unscale = |v: &mut [T]| scaled[l].unscale(v);
            values_by_dqds(&ws[l].d, &ws[l].e, values.next().expect("L"), unscale)
        });
    };
    if ws[0].route(nt, true) == Route::DivideConquer {
        let mut vectors = vectors.into_iter();
        return std::array::from_fn(|l| {
            let (u, vt) = vectors.next().expect("L").expect("once");
            dc_outputs(ws[l], &scaled[l], values.next().expect("L"), u, vt)
        });
    }
    // The bidiagonal QR of the whole group side by side.
    let mut solved: Vec<Result<()>> = Vec::with_capacity(L);
    let mut lanes = Vec::with_capacity(L);
    let mut slot_of_lane = Vec::with_capacity(L);
    for w in ws.iter_mut() {
        match w.qr_lane(mt, nt) {
            Ok(lane) => {
                slot_of_lane.push(solved.len());
                solved.push(Ok(()));
                lanes.push(lane);
            }
            Err(e) => solved.push(Err(e)),
        }
    }
    for (slot, r) in slot_of_lane.into_iter().zip(bdsqr_group(lanes)) {
        solved[slot] = r;
    }
    let mut solved = solved.into_iter();
    let mut vectors = vectors.into_iter();
    std::array::from_fn(|l| {
        let (u, vt) = vectors.next().expect("L").expect("once");
        let v = values.next().expect("L");
        solved
            .next()
            .expect("L results")
            .map(|()| write_qr_outputs(ws[l], &scaled[l], v, u, vt))
    })
}

/// Which algorithm [`small_svd`] runs for `min(m, n) = nt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// Blocked `dgebrd`, then dqds or D&C and `dormbr` ([`blocked_svd`]).
    Blocked,
    /// [`gebd2`], then dqds (values only).
    Dqds,
    /// [`gebd2`], `Q` and `P` formed, rotated by the bidiagonal QR.
    Qr,
    /// [`gebd2`], `Q` and `P` formed, times the D&C's vectors.
    DivideConquer,
}

impl<T: Scalar> GebrdWorkspace<T> {
    /// The route for `min(m, n) = nt`.
    fn route(&self, nt: usize, vectors: bool) -> Route {
        match vectors {
            true if nt >= self.blocked_from.max(self.dc_from) => Route::Blocked,
            false if nt >= self.blocked_from_values => Route::Blocked,
            false => Route::Dqds,
            true if nt >= self.dc_from => Route::DivideConquer,
            true => Route::Qr,
        }
    }

    /// Whether matrices of `min(m, n) = nt` are reduced in lanes
    /// ([`lanes`]): on the routes that start with [`gebd2`], below
    /// [`GebrdWorkspace::lanes_below`].
    fn in_lanes(&self, nt: usize, vectors: bool) -> bool {
        self.route(nt, vectors) != Route::Blocked && nt < self.lanes_below
    }

    /// [`gebd2`] on the working matrix.
    fn bidiagonalise(&mut self, mt: usize, nt: usize) {
        gebd2(
            MatMut::from_column_major_slice_mut(&mut self.a[..], mt, nt),
            &mut self.tauq,
            &mut self.taup,
            &mut self.d,
            &mut self.e,
            MatMut::from_column_major_slice_mut(&mut self.vr[..], nt, nt),
            &mut self.w,
        );
    }

    /// `Q` and `P` formed from [`gebd2`]'s reflectors (LAPACK `dorgbr`).
    fn form_q_p(&mut self, mt: usize, nt: usize) {
        let b = MatRef::from_column_major_slice(&self.a[..], mt, nt);
        let q = MatMut::from_column_major_slice_mut(&mut self.q[..], mt, nt);
        org2r(b, &self.tauq, q);
        let p = MatMut::from_column_major_slice_mut(&mut self.p[..], nt, nt);
        orgbr_p(
            MatRef::from_column_major_slice(&self.vr[..], nt, nt),
            &self.taup,
            p,
        );
    }

    /// The bidiagonal QR of [`gebd2`]'s `(d, e)`, rotating `Q` (`mt x nt`)
    /// and `P` (`nt x nt`), as a [`Lane`] to run.
    fn qr_lane(&mut self, mt: usize, nt: usize) -> Result<Lane<'_, T>> {
        Lane::new(
            &mut self.d,
            &mut self.e,
            MatMut::from_column_major_slice_mut(&mut self.q[..], mt, nt),
            MatMut::from_column_major_slice_mut(&mut self.p[..], nt, nt),
        )
    }
}

/// Flops of the route for one `m x n` matrix (bidiagonalisation `4 n^2 (m -
/// n / 3)`, plus with vectors about `4 n^2 (m - n/3) + 4 n^3 / 3` to form `Q`
/// and `P` and `~ 6 (m + n) n^2` for the rotations), `m >= n`: a cost hint.
pub fn flops(m: usize, n: usize, vectors: bool) -> f64 {
    let (m, n) = (m.max(n) as f64, m.min(n) as f64);
    let brd = 4.0 * n * n * (m - n / 3.0);
    if vectors {
        2.0 * brd + 4.0 * n * n * n / 3.0 + 6.0 * (m + n) * n * n
    } else {
        brd
    }
}

#[cfg(test)]
mod tests;
