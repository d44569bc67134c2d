//! Stage 1 of the generalized problem (LAPACK `dpotrf` with `uplo = 'L'`): the
//! Cholesky factorization `B = L L^T`, as one task for now (faer's blocked
//! left-looking kernel inside it, sequential, so its bits do not depend on
//! the thread count).

use super::POTRF;
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::matrix::SharedMatrix;
use crate::pipeline::task::with_access;
use crate::{Error, Result, Scalar};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::{Mat, MatMut, Par};
use std::sync::Arc;

/// The Cholesky factor `L` of `B` (lower triangular, zeros above the
/// diagonal), final once [`Cholesky::task`] has run.
pub struct Cholesky<T> {
    pub(super) l: Arc<SharedMatrix<T>>,
    pub(super) task: TaskId,
}

impl<T: Scalar> Cholesky<T> {
    /// Order of `B`.
    pub fn n(&self) -> usize {
        self.l.nrows()
    }

    /// The task after which `L` is final.
    pub fn task(&self) -> TaskId {
        self.task
    }
}

/// Adds the factorization `B = L L^T` of the symmetric `b` (lower triangle
/// read; the graph owns it from now on and overwrites it with `L`).
///
/// The task fails with [`Error::NotPositiveDefinite`] naming the first leading
/// minor that is not positive.
pub fn potrf<T: Scalar>(g: &mut TaskGraph<'static>, b: Mat<T>) -> Result<Cholesky<T>> {
    if b.nrows() != b.ncols() {
        return Err(Error::Shape(format!(
            "potrf needs a square matrix, got {} x {}",
            b.nrows(),
            b.ncols()
        )));
    }
    let n = b.nrows();
    let l = Arc::new(SharedMatrix::new(b));
    let m = l.clone();
    let body =
        move |acc: &crate::matrix::access::Access<'_>| factor_lower(m.write(acc, 0..n, 0..n));
    let fp = Footprint::new().write(Region::new(l.id(), 0..n, 0..n));
    let nf = n as f64;
    let task = g.add(
        Task::new("potrf", with_access(body))
            .stage(POTRF)
            .cost(
                nf * nf * nf / 3.0,
                (std::mem::size_of::<T>() * n * n) as f64,
            )
            .footprint(fp),
    );
    Ok(Cholesky { l, task })
}

/// Overwrites the lower triangle of `b` with its Cholesky factor and zeroes
/// the strict upper one (so `L` can be used as a dense factor).
fn factor_lower<T: Scalar>(mut b: MatMut<'_, T>) -> Result<()> {
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
        faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index } => {
            Error::NotPositiveDefinite { minor: index + 1 }
        }
    })?;
    for j in 1..n {
        for i in 0..j {
            b[(i, j)] = T::zero();
        }
    }
    Ok(())
}
