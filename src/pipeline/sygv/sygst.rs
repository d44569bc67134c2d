//! Stage 2 of the generalized problem (LAPACK `dsygst` with `uplo = 'L'`):
//! the standard symmetric problem `C z = λ z` equivalent to the pencil, from
//! `B = L L^T` (Golub and Van Loan, "Matrix Computations", 4th ed., §8.7.2):
//! `C = L^{-1} A L^{-T}` for type 1 and `C = L^T A L` for types 2 and 3.
//!
//! LAPACK's blocked `dsygst` cut into tile tasks, one block step per tile
//! column `k` (its half-SYMM trick: `A21 - L21 A11 / 2` before and after the
//! SYR2K, so the update needs no copy of `A21`). Type 1 is right-looking:
//! the diagonal tile's own reduction (`dsygs2`), the panel below it times
//! `L_kk^{-T}`, the two half-SYMMs around the trailing SYR2K, then the panel's
//! solve with the trailing `L` by block forward substitution. Types 2 and 3
//! are left-looking: the row panel `A_k,0..k` times the leading `L` (TRMM),
//! the half-SYMMs around the SYR2K of the leading block, `L_kk^T` times the
//! panel, and the diagonal tile's reduction. The edges follow from the tiles
//! each task reads and writes ([`Flow`], shared with [`super::potrf()`], so a
//! task waits for the tiles of `L` it reads only); each task is sequential
//! inside and each tile's updates come in LAPACK's order, so the bits do not
//! depend on the thread count.

use super::potrf::sub_product;
use super::{Cholesky, Problem, Tiles, SYGST};
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::matrix::access::Access;
use crate::matrix::{MatrixId, SharedMatrix};
use crate::pipeline::task::with_access;
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::{matmul, triangular};
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::ops::Range;
use std::sync::Arc;

/// The standard problem's matrix `C` (its lower triangle), final once
/// [`Standard::task`] has run.
pub struct Standard<T> {
    pub(super) c: Arc<SharedMatrix<T>>,
    pub(super) task: TaskId,
}

impl<T: Scalar> Standard<T> {
    /// The task after which `C` is final (it follows every tile task and
    /// checks that `C` is finite).
    pub fn task(&self) -> TaskId {
        self.task
    }
}

/// Adds the reduction of the pencil to `C` (lower triangle of `a` read; the
/// graph owns `a` and overwrites it with `C`), its tile tasks after the tiles
/// of `chol`'s factor they read (edges by `flow`, the flow
/// [`super::potrf()`] used).
///
/// The last task fails with [`Error::InvalidArgument`] if `C` overflows (a
/// `B` so ill-conditioned that `L^{-1} A L^{-T}` leaves the floating-point
/// range).
pub fn sygst<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    a: Mat<T>,
    chol: &Cholesky<T>,
    problem: Problem,
) -> Result<Standard<T>> {
    let n = chol.n();
    if a.nrows() != n || a.ncols() != n {
        return Err(Error::Shape(format!(
            "sygst: A is {} x {} but L is {n} x {n}",
            a.nrows(),
            a.ncols()
        )));
    }
    let c = Arc::new(SharedMatrix::new(a));
    let mut b = Builder {
        g,
        flow,
        c: c.clone(),
        l: chol.l.clone(),
        tiles: chol.tiles,
    };
    match problem {
        Problem::AxLambdaBx => b.inverse_steps(),
        Problem::ABxLambdaX | Problem::BAxLambdaX => b.product_steps(),
    }
    let (cm, whole) = (c.clone(), 0..n);
    let fp = Footprint::new().read(Region::new(c.id(), whole.clone(), whole.clone()));
    let task = b.flow.add(
        b.g,
        Task::new(
            "sygst.done",
            with_access(move |acc: &Access<'_>| check_finite(&cm, acc)),
        )
        .stage(SYGST)
        .footprint(fp),
    );
    Ok(Standard { c, task })
}

/// The lower triangle of `C` finite, or the error naming the first entry
/// that is not.
fn check_finite<T: Scalar>(c: &SharedMatrix<T>, acc: &Access<'_>) -> Result<()> {
    let n = c.nrows();
    let m = c.read(acc, 0..n, 0..n);
    for j in 0..n {
        for i in j..n {
            if !m[(i, j)].is_finite() {
                return Err(Error::InvalidArgument(format!(
                    "the reduced matrix C overflows at ({i}, {j}): B is too ill-conditioned for the Cholesky method"
                )));
            }
        }
    }
    Ok(())
}

/// One tile operand of a task: the matrix (`C` or `L`) and the tile (row,
/// column) indices.
#[derive(Clone, Copy)]
enum Of {
    C(usize, usize),
    L(usize, usize),
}

/// Adds the tile tasks of one reduction to the graph.
struct Builder<'g, T> {
    g: &'g mut TaskGraph<'static>,
    flow: &'g mut Flow,
    c: Arc<SharedMatrix<T>>,
    l: Arc<SharedMatrix<T>>,
    tiles: Tiles,
}

/// What a tile task computes, given its written `C` tile and the tiles it
/// reads (in the order they were declared).
type Kernel<T> = fn(MatMut<'_, T>, &[MatRef<'_, T>]);

impl<T: Scalar> Builder<'_, T> {
    fn region(&self, of: Of) -> (MatrixId, Range<usize>, Range<usize>) {
        match of {
            Of::C(i, j) => (self.c.id(), self.tiles.range(i), self.tiles.range(j)),
            Of::L(i, j) => (self.l.id(), self.tiles.range(i), self.tiles.range(j)),
        }
    }

    /// Adds the task `name` writing `C` tile `out` with `kernel`, reading
    /// the tiles `ins`.
    fn task(&mut self, name: String, out: (usize, usize), ins: &[Of], kernel: Kernel<T>) {
        let (cid, ro, co) = self.region(Of::C(out.0, out.1));
        let mut fp = Footprint::new().write(Region::new(cid, ro.clone(), co.clone()));
        let mut reads = Vec::with_capacity(ins.len());
        for &of in ins {
            let (id, r, c) = self.region(of);
            fp = fp.read(Region::new(id, r.clone(), c.clone()));
            reads.push((matches!(of, Of::C(..)), r, c));
        }
        let (cm, lm) = (self.c.clone(), self.l.clone());
        let body = move |acc: &Access<'_>| {
            let views: Vec<MatRef<'_, T>> = reads
                .iter()
                .map(|(is_c, r, c)| {
                    let m = if *is_c { &cm } else { &lm };
                    m.read(acc, r.clone(), c.clone())
                })
                .collect();
            kernel(cm.write(acc, ro.clone(), co.clone()), &views);
            Ok(())
        };
        let nb = self.tiles.nb() as f64;
        let task = Task::new(name, with_access(body))
            .stage(SYGST)
            .cost(
                2.0 * nb * nb * nb,
                (ins.len() + 1) as f64 * nb * nb * std::mem::size_of::<T>() as f64,
            )
            .footprint(fp);
        self.flow.add(self.g, task);
    }

    /// Type 1, LAPACK `dsygst`'s `itype = 1`, `uplo = 'L'` loop, by tiles.
    fn inverse_steps(&mut self) {
        let t = self.tiles.count();
        for k in 0..t {
            self.task(
                format!("sygst.sygs2[{k}]"),
                (k, k),
                &[Of::L(k, k)],
                sygs2_inverse,
            );
            for i in k + 1..t {
                let ins = [Of::L(k, k), Of::L(i, k), Of::C(k, k)];
                self.task(format!("sygst.panel[{i},{k}]"), (i, k), &ins, panel_inverse);
            }
            for j in k + 1..t {
                for i in j..t {
                    let ins = [Of::C(i, k), Of::L(j, k), Of::L(i, k), Of::C(j, k)];
                    let name = format!("sygst.syr2k[{i},{j},{k}]");
                    let kernel: Kernel<T> = if i == j { syr2k_sub_lower } else { syr2k_sub };
                    self.task(name, (i, j), &ins, kernel);
                }
            }
            for i in k + 1..t {
                let ins = [Of::L(i, k), Of::C(k, k)];
                self.task(format!("sygst.symm[{i},{k}]"), (i, k), &ins, half_symm_sub);
            }
            // C_(k+1.., k) := L_(k+1.., k+1..)^{-1} C_(k+1.., k), by block
            // forward substitution down the panel.
            for i in k + 1..t {
                for j in k + 1..i {
                    let ins = [Of::L(i, j), Of::C(j, k)];
                    self.task(format!("sygst.gemm[{i},{j},{k}]"), (i, k), &ins, gemm_sub);
                }
                let ins = [Of::L(i, i)];
                self.task(format!("sygst.trsm[{i},{k}]"), (i, k), &ins, trsm_left);
            }
        }
    }

    /// Types 2 and 3, LAPACK `dsygst`'s `itype = 2, 3`, `uplo = 'L'` loop,
    /// by tiles.
    fn product_steps(&mut self) {
        for k in 0..self.tiles.count() {
            // C_(k, 0..k) := C_(k, 0..k) L_(0..k, 0..k): column tile j takes
            // the old tiles m >= j, so j ascending is in place.
            for j in 0..k {
                self.task(
                    format!("sygst.trmm[{k},{j}]"),
                    (k, j),
                    &[Of::L(j, j)],
                    trmm_right,
                );
                for m in j + 1..k {
                    let ins = [Of::C(k, m), Of::L(m, j)];
                    self.task(format!("sygst.gemm[{k},{j},{m}]"), (k, j), &ins, gemm_add);
                }
            }
            for j in 0..k {
                let ins = [Of::C(k, k), Of::L(k, j)];
                self.task(format!("sygst.symm[{k},{j}]"), (k, j), &ins, half_symm_add);
            }
            for j in 0..k {
                for i in j..k {
                    let ins = [Of::C(k, i), Of::L(k, j), Of::L(k, i), Of::C(k, j)];
                    let name = format!("sygst.syr2k[{i},{j},{k}]");
                    let kernel: Kernel<T> = if i == j { syr2k_add_lower } else { syr2k_add };
                    self.task(name, (i, j), &ins, kernel);
                }
            }
            for j in 0..k {
                let ins = [Of::C(k, k), Of::L(k, j)];
                self.task(format!("sygst.symm2[{k},{j}]"), (k, j), &ins, half_symm_add);
            }
            for j in 0..k {
                let name = format!("sygst.trmm_t[{k},{j}]");
                self.task(name, (k, j), &[Of::L(k, k)], trmm_left_t);
            }
            self.task(
                format!("sygst.sygs2[{k}]"),
                (k, k),
                &[Of::L(k, k)],
                sygs2_product,
            );
        }
    }
}

/// The symmetric matrix whose lower triangle `a` holds.
fn symmetric<T: Scalar>(a: MatRef<'_, T>) -> Mat<T> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            a[(i, j)]
        } else {
            a[(j, i)]
        }
    })
}

/// Writes the lower triangle of `x` into that of `c`.
fn store_lower<T: Scalar>(mut c: MatMut<'_, T>, x: &Mat<T>) {
    for j in 0..c.ncols() {
        for i in j..c.nrows() {
            c[(i, j)] = x[(i, j)];
        }
    }
}

/// `C_kk := L_kk^{-1} C_kk L_kk^{-T}` (`dsygs2`, type 1): `X = L^{-1} A`,
/// then `L^{-1} X^T` (`A` symmetric).
fn sygs2_inverse<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    let l = ins[0];
    let mut x = symmetric(c.as_ref());
    solve_lower_triangular_in_place(l, x.as_mut(), Par::Seq);
    let mut y = x.transpose().to_owned();
    solve_lower_triangular_in_place(l, y.as_mut(), Par::Seq);
    store_lower(c, &y);
}

/// `C_kk := L_kk^T C_kk L_kk` (`dsygs2`, types 2 and 3).
fn sygs2_product<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    let l = ins[0];
    let a = symmetric(c.as_ref());
    let n = a.nrows();
    let mut x = Mat::<T>::zeros(n, n);
    matmul(x.as_mut(), Accum::Replace, &a, l, T::one(), Par::Seq);
    let mut y = Mat::<T>::zeros(n, n);
    matmul(
        y.as_mut(),
        Accum::Replace,
        l.transpose(),
        &x,
        T::one(),
        Par::Seq,
    );
    store_lower(c, &y);
}

/// `C_ik := C_ik L_kk^{-T} - L_ik C_kk / 2` (type 1's TRSM and first
/// half-SYMM); `ins`: `L_kk`, `L_ik`, `C_kk`.
fn panel_inverse<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    solve_lower_triangular_in_place(ins[0], c.as_mut().transpose_mut(), Par::Seq);
    half_symm_sub(c, &ins[1..]);
}

/// `C_ik -= L_ik C_kk / 2`; `ins`: `L_ik`, `C_kk` (its lower triangle).
fn half_symm_sub<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    let akk = symmetric(ins[1]);
    let half = T::of(0.5);
    matmul(c, Accum::Add, ins[0], &akk, -half, Par::Seq);
}

/// `C_kj += C_kk L_kj / 2`; `ins`: `C_kk` (its lower triangle), `L_kj`.
fn half_symm_add<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    let akk = symmetric(ins[0]);
    matmul(c, Accum::Add, &akk, ins[1], T::of(0.5), Par::Seq);
}

/// `C_ij -= C_ik L_jk^T + L_ik C_jk^T`; `ins`: `C_ik`, `L_jk`, `L_ik`, `C_jk`.
fn syr2k_sub<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    sub_product(c.as_mut(), ins[0], ins[1], false);
    sub_product(c, ins[2], ins[3], false);
}

/// [`syr2k_sub`] on a diagonal tile: its lower triangle only.
fn syr2k_sub_lower<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    sub_product(c.as_mut(), ins[0], ins[1], true);
    sub_product(c, ins[2], ins[3], true);
}

/// `C_ij += C_ki^T L_kj + L_ki^T C_kj`; `ins`: `C_ki`, `L_kj`, `L_ki`, `C_kj`.
fn syr2k_add<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    matmul(
        c.as_mut(),
        Accum::Add,
        ins[0].transpose(),
        ins[1],
        T::one(),
        Par::Seq,
    );
    matmul(
        c,
        Accum::Add,
        ins[2].transpose(),
        ins[3],
        T::one(),
        Par::Seq,
    );
}

/// [`syr2k_add`] on a diagonal tile: its lower triangle only.
fn syr2k_add_lower<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    use triangular::BlockStructure::{Rectangular, TriangularLower};
    for (x, y) in [(ins[0], ins[1]), (ins[2], ins[3])] {
        triangular::matmul(
            c.as_mut(),
            TriangularLower,
            Accum::Add,
            x.transpose(),
            Rectangular,
            y,
            Rectangular,
            T::one(),
            Par::Seq,
        );
    }
}

/// `C_ik -= L_ij C_jk`; `ins`: `L_ij`, `C_jk`.
fn gemm_sub<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    matmul(c, Accum::Add, ins[0], ins[1], -T::one(), Par::Seq);
}

/// `C_kj += C_km L_mj`; `ins`: `C_km`, `L_mj`.
fn gemm_add<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    matmul(c, Accum::Add, ins[0], ins[1], T::one(), Par::Seq);
}

/// `C_ik := L_ii^{-1} C_ik`; `ins`: `L_ii`.
fn trsm_left<T: Scalar>(c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    solve_lower_triangular_in_place(ins[0], c, Par::Seq);
}

/// `C_kj := C_kj L_jj` (`L_jj` lower triangular); `ins`: `L_jj`.
fn trmm_right<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    use triangular::BlockStructure::{Rectangular, TriangularLower};
    let x = c.to_owned();
    triangular::matmul(
        c.as_mut(),
        Rectangular,
        Accum::Replace,
        &x,
        Rectangular,
        ins[0],
        TriangularLower,
        T::one(),
        Par::Seq,
    );
}

/// `C_kj := L_kk^T C_kj`; `ins`: `L_kk`.
fn trmm_left_t<T: Scalar>(mut c: MatMut<'_, T>, ins: &[MatRef<'_, T>]) {
    use triangular::BlockStructure::{Rectangular, TriangularUpper};
    let x = c.to_owned();
    triangular::matmul(
        c.as_mut(),
        Rectangular,
        Accum::Replace,
        ins[0].transpose(),
        TriangularUpper,
        &x,
        Rectangular,
        T::one(),
        Par::Seq,
    );
}
