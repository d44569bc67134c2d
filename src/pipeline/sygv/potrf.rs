//! Stage 1 of the generalized problem (LAPACK `dpotrf` with `uplo = 'L'`): the
//! Cholesky factorization `B = L L^T` as tile tasks, the right-looking tiled
//! algorithm (Buttari, Langou, Kurzak and Dongarra, "A class of parallel tiled
//! linear algebra algorithms for multicore architectures", Parallel Computing
//! 35(1), 2009, §3): for each diagonal tile `k`, POTRF of `B_kk`, TRSM of the
//! tiles below it (`L_ik = B_ik L_kk^{-T}`), then SYRK and GEMM of the
//! trailing tiles (`B_ij -= L_ik L_jk^T`). Every task is sequential inside,
//! and each tile's updates come in the fixed order of `k`, so the bits do
//! not depend on the thread count; the edges follow from the tiles each task
//! reads and writes ([`Flow`]).

use super::{Tiles, POTRF};
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::task::with_access;
use crate::{Error, Result, Scalar};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch, LltError};
use faer::linalg::matmul::{matmul, triangular};
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, MatMut, Par};
use std::sync::Arc;

/// The Cholesky factor `L` of `B` (lower triangular, zeros above the
/// diagonal), final once [`Cholesky::task`] has run.
pub struct Cholesky<T> {
    pub(super) l: Arc<SharedMatrix<T>>,
    pub(super) task: TaskId,
    pub(super) tiles: Tiles,
}

impl<T: Scalar> Cholesky<T> {
    /// Order of `B`.
    pub fn n(&self) -> usize {
        self.l.nrows()
    }

    /// The task after which `L` is final (it follows every tile task).
    pub fn task(&self) -> TaskId {
        self.task
    }
}

/// Adds the factorization `B = L L^T` of the symmetric `b` (lower triangle
/// read; the graph owns it from now on and overwrites it with `L`) in tiles
/// of order `tile`, its tasks' edges derived by `flow` (the stages after it
/// add theirs to the same flow, so they wait for the tiles they read, not for
/// the whole factor).
///
/// A task fails with [`Error::NotPositiveDefinite`] naming the first leading
/// minor that is not positive.
pub fn potrf<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    mut b: Mat<T>,
    tile: usize,
) -> Result<Cholesky<T>> {
    if b.nrows() != b.ncols() {
        return Err(Error::Shape(format!(
            "potrf needs a square matrix, got {} x {}",
            b.nrows(),
            b.ncols()
        )));
    }
    let n = b.nrows();
    // L is used as a dense factor later (type 3's X = L Z, the dense
    // products of types 2 and 3): the strict upper triangle of the tiles off
    // the diagonal is cleared here, that of the diagonal tiles by their
    // factorization task.
    for j in 1..n {
        for i in 0..j.min(n) {
            b[(i, j)] = T::zero();
        }
    }
    let tiles = Tiles::new(n, tile);
    let l = Arc::new(SharedMatrix::new(b));
    for k in 0..tiles.count() {
        add_diagonal(g, flow, &l, tiles, k);
        for i in k + 1..tiles.count() {
            add_trsm(g, flow, &l, tiles, i, k);
        }
        for j in k + 1..tiles.count() {
            for i in j..tiles.count() {
                add_update(g, flow, &l, tiles, (i, j), k);
            }
        }
    }
    let whole = Footprint::new().read(Region::new(l.id(), 0..n, 0..n));
    let task = flow.add(
        g,
        Task::new("potrf.done", |_| Ok(()))
            .stage(POTRF)
            .footprint(whole),
    );
    Ok(Cholesky { l, task, tiles })
}

/// The bytes of a tile task touching `tiles` tiles of order `nb`.
fn bytes<T>(tiles: usize, nb: usize) -> f64 {
    (tiles * nb * nb * std::mem::size_of::<T>()) as f64
}

/// POTRF of diagonal tile `k`.
fn add_diagonal<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    l: &Arc<SharedMatrix<T>>,
    tiles: Tiles,
    k: usize,
) {
    let r = tiles.range(k);
    let (m, rr) = (l.clone(), r.clone());
    let body = move |acc: &Access<'_>| {
        factor_tile(m.write(acc, rr.clone(), rr.clone())).map_err(|minor| {
            Error::NotPositiveDefinite {
                minor: rr.start + minor,
            }
        })
    };
    let nb = r.len() as f64;
    flow.add(
        g,
        Task::new(format!("potrf[{k}]"), with_access(body))
            .stage(POTRF)
            .cost(nb * nb * nb / 3.0, bytes::<T>(1, r.len()))
            .footprint(Footprint::new().write(Region::new(l.id(), r.clone(), r))),
    );
}

/// `L_ik = B_ik L_kk^{-T}`: `L_kk X^T = B_ik^T`.
fn add_trsm<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    l: &Arc<SharedMatrix<T>>,
    tiles: Tiles,
    i: usize,
    k: usize,
) {
    let (ri, rk) = (tiles.range(i), tiles.range(k));
    let (m, ri2, rk2) = (l.clone(), ri.clone(), rk.clone());
    let body = move |acc: &Access<'_>| {
        let lkk = m.read(acc, rk2.clone(), rk2.clone());
        let bik = m.write(acc, ri2.clone(), rk2.clone());
        solve_lower_triangular_in_place(lkk, bik.transpose_mut(), Par::Seq);
        Ok(())
    };
    let fp = Footprint::new()
        .read(Region::new(l.id(), rk.clone(), rk.clone()))
        .write(Region::new(l.id(), ri.clone(), rk.clone()));
    let flops = (ri.len() * rk.len() * rk.len()) as f64;
    flow.add(
        g,
        Task::new(format!("potrf.trsm[{i},{k}]"), with_access(body))
            .stage(POTRF)
            .cost(flops, bytes::<T>(2, rk.len()))
            .footprint(fp),
    );
}

/// `B_ij -= L_ik L_jk^T` (for `i == j` the lower triangle only: SYRK).
fn add_update<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    l: &Arc<SharedMatrix<T>>,
    tiles: Tiles,
    (i, j): (usize, usize),
    k: usize,
) {
    let (ri, rj, rk) = (tiles.range(i), tiles.range(j), tiles.range(k));
    let (m, ri2, rj2, rk2) = (l.clone(), ri.clone(), rj.clone(), rk.clone());
    let body = move |acc: &Access<'_>| {
        let lik = m.read(acc, ri2.clone(), rk2.clone());
        let ljk = m.read(acc, rj2.clone(), rk2.clone());
        let dst = m.write(acc, ri2.clone(), rj2.clone());
        sub_product(dst, lik, ljk, i == j);
        Ok(())
    };
    let mut fp = Footprint::new()
        .read(Region::new(l.id(), ri.clone(), rk.clone()))
        .write(Region::new(l.id(), ri.clone(), rj.clone()));
    if i != j {
        fp = fp.read(Region::new(l.id(), rj.clone(), rk.clone()));
    }
    let (name, flops) = if i == j {
        ("syrk", (ri.len() * ri.len() * rk.len()) as f64)
    } else {
        ("gemm", (2 * ri.len() * rj.len() * rk.len()) as f64)
    };
    flow.add(
        g,
        Task::new(format!("potrf.{name}[{i},{j},{k}]"), with_access(body))
            .stage(POTRF)
            .cost(flops, bytes::<T>(3, rk.len()))
            .footprint(fp),
    );
}

/// `dst -= x y^T`, on the lower triangle only when `lower` (a diagonal tile,
/// whose strict upper part must stay zero).
pub(super) fn sub_product<T: Scalar>(
    dst: MatMut<'_, T>,
    x: faer::MatRef<'_, T>,
    y: faer::MatRef<'_, T>,
    lower: bool,
) {
    if lower {
        use triangular::BlockStructure::{Rectangular, TriangularLower};
        triangular::matmul(
            dst,
            TriangularLower,
            Accum::Add,
            x,
            Rectangular,
            y.transpose(),
            Rectangular,
            -T::one(),
            Par::Seq,
        );
    } else {
        matmul(dst, Accum::Add, x, y.transpose(), -T::one(), Par::Seq);
    }
}

/// The Cholesky factor of the tile `b` in place (lower triangle, the strict
/// upper one zeroed: faer's kernel leaves it written, and `L` is used as a
/// dense factor); the 1-based order of the first minor that is not positive
/// on failure.
fn factor_tile<T: Scalar>(mut b: MatMut<'_, T>) -> std::result::Result<(), usize> {
    let n = b.nrows();
    let scratch = cholesky_in_place_scratch::<T>(n, Par::Seq, Default::default());
    let mut buf = MemBuffer::new(scratch);
    let stack = MemStack::new(&mut buf);
    cholesky_in_place(
        b.as_mut(),
        Default::default(),
        Par::Seq,
        stack,
        Default::default(),
    )
    .map_err(|e| match e {
        LltError::NonPositivePivot { index } => index + 1,
    })?;
    for j in 1..n {
        for i in 0..j {
            b[(i, j)] = T::zero();
        }
    }
    Ok(())
}
