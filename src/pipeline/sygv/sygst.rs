//! Stage 2 of the generalized problem (LAPACK `dsygst` with `uplo = 'L'`):
//! the standard symmetric problem `C z = λ z` equivalent to the pencil, from
//! `B = L L^T` (Golub and Van Loan, "Matrix Computations", 4th ed., §8.7.2):
//! `C = L^{-1} A L^{-T}` for type 1 and `C = L^T A L` for types 2 and 3. One
//! task for now, sequential inside (bits independent of the thread count).

use super::{Cholesky, Problem, SYGST};
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::task::with_access;
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::sync::Arc;

/// The standard problem's matrix `C` (its lower triangle), final once
/// [`Standard::task`] has run.
pub struct Standard<T> {
    pub(super) c: Arc<SharedMatrix<T>>,
    pub(super) task: TaskId,
}

impl<T: Scalar> Standard<T> {
    /// The task after which `C` is final.
    pub fn task(&self) -> TaskId {
        self.task
    }
}

/// Adds the reduction of the pencil to `C` (lower triangle of `a` read; the
/// graph owns `a` and overwrites it with `C`), after `chol`'s factorization.
///
/// The task fails with [`Error::InvalidArgument`] if `C` overflows (a `B` so
/// ill-conditioned that `L^{-1} A L^{-T}` leaves the floating-point range).
pub fn sygst<T: Scalar>(
    g: &mut TaskGraph<'static>,
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
    let (cm, lm) = (c.clone(), chol.l.clone());
    let body = move |acc: &Access<'_>| {
        let l = lm.read(acc, 0..n, 0..n);
        reduce(cm.write(acc, 0..n, 0..n), l, problem)
    };
    let fp = Footprint::new()
        .read(Region::new(chol.l.id(), 0..n, 0..n))
        .write(Region::new(c.id(), 0..n, 0..n));
    let nf = n as f64;
    let task = g.add(
        Task::new("sygst", with_access(body))
            .stage(SYGST)
            .cost(
                2.0 * nf * nf * nf,
                (2 * std::mem::size_of::<T>() * n * n) as f64,
            )
            .footprint(fp),
    );
    g.edge(chol.task, task);
    Ok(Standard { c, task })
}

/// Overwrites the lower triangle of `c` (holding `A`'s) with that of `C`.
fn reduce<T: Scalar>(mut c: MatMut<'_, T>, l: MatRef<'_, T>, problem: Problem) -> Result<()> {
    let n = c.nrows();
    let a = Mat::from_fn(n, n, |i, j| if i >= j { c[(i, j)] } else { c[(j, i)] });
    let out = match problem {
        Problem::AxLambdaBx => inverse_congruence(a, l),
        Problem::ABxLambdaX | Problem::BAxLambdaX => congruence(a.as_ref(), l),
    };
    for j in 0..n {
        for i in j..n {
            let x = out[(i, j)];
            if !x.is_finite() {
                return Err(Error::InvalidArgument(format!(
                    "the reduced matrix C overflows at ({i}, {j}): B is too ill-conditioned for the Cholesky method"
                )));
            }
            c[(i, j)] = x;
        }
    }
    Ok(())
}

/// `L^{-1} A L^{-T}` of the symmetric `a`: `X = L^{-1} A`, then
/// `L^{-1} X^T = L^{-1} A L^{-T}` (`A` symmetric).
fn inverse_congruence<T: Scalar>(mut a: Mat<T>, l: MatRef<'_, T>) -> Mat<T> {
    solve_lower_triangular_in_place(l, a.as_mut(), Par::Seq);
    let mut y = a.transpose().to_owned();
    solve_lower_triangular_in_place(l, y.as_mut(), Par::Seq);
    y
}

/// `L^T A L` of the symmetric `a` (`l` dense with zeros above the diagonal).
fn congruence<T: Scalar>(a: MatRef<'_, T>, l: MatRef<'_, T>) -> Mat<T> {
    let n = a.nrows();
    let mut x = Mat::<T>::zeros(n, n);
    matmul(x.as_mut(), Accum::Replace, a, l, T::one(), Par::Seq);
    let mut y = Mat::<T>::zeros(n, n);
    matmul(
        y.as_mut(),
        Accum::Replace,
        l.transpose(),
        x.as_ref(),
        T::one(),
        Par::Seq,
    );
    y
}
