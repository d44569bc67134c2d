//! Stage 4 of the generalized problem: the eigenvectors of the pencil from
//! those of `C` (LAPACK `dsygv`'s last step, `dtrsm`/`dtrmm`): `X = L^{-T} Z`
//! for types 1 and 2, `X = L Z` for type 3, one task per column block (the
//! columns are independent; each task is sequential inside, so the bits do not
//! depend on the thread count).

use super::{Cholesky, Problem, BACK};
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::task::with_access;
use crate::{Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_upper_triangular_in_place;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::sync::Arc;

/// Adds the back-substitution of the columns of `z` (the eigenvectors of `C`,
/// final once `after` has run) in blocks of `col` columns; returns the tasks.
pub fn back_substitute<T: Scalar>(
    g: &mut TaskGraph<'static>,
    chol: &Cholesky<T>,
    z: &Arc<SharedMatrix<T>>,
    after: TaskId,
    problem: Problem,
    col: usize,
) -> Result<Vec<TaskId>> {
    let (n, k) = (z.nrows(), z.ncols());
    let col = col.max(1);
    let mut tasks = Vec::with_capacity(k.div_ceil(col));
    for c0 in (0..k).step_by(col) {
        let cols = c0..(c0 + col).min(k);
        let (zm, lm, cc) = (z.clone(), chol.l.clone(), cols.clone());
        let body = move |acc: &Access<'_>| {
            let l = lm.read(acc, 0..n, 0..n);
            transform(zm.write(acc, 0..n, cc.clone()), l, problem);
            Ok(())
        };
        let fp = Footprint::new()
            .read(Region::new(chol.l.id(), 0..n, 0..n))
            .write(Region::new(z.id(), 0..n, cols.clone()));
        let flops = (n * n * cols.len()) as f64;
        let t = g.add(
            Task::new(
                format!("back[{}..{}]", cols.start, cols.end),
                with_access(body),
            )
            .stage(BACK)
            .cost(
                flops,
                (std::mem::size_of::<T>() * n * (n + cols.len())) as f64,
            )
            .footprint(fp),
        );
        // `after` (the EVD's completion) follows `chol`'s factor through
        // sygst; the direct edge keeps the read of `L` ordered on its own.
        g.edge(after, t);
        g.edge(chol.task, t);
        tasks.push(t);
    }
    Ok(tasks)
}

/// `z := L^{-T} z` (types 1, 2) or `z := L z` (type 3).
fn transform<T: Scalar>(mut z: MatMut<'_, T>, l: MatRef<'_, T>, problem: Problem) {
    match problem {
        Problem::AxLambdaBx | Problem::ABxLambdaX => {
            solve_upper_triangular_in_place(l.transpose(), z, Par::Seq)
        }
        Problem::BAxLambdaX => {
            let mut x = Mat::<T>::zeros(z.nrows(), z.ncols());
            matmul(
                x.as_mut(),
                Accum::Replace,
                l,
                z.as_ref(),
                T::one(),
                Par::Seq,
            );
            z.copy_from(&x);
        }
    }
}
