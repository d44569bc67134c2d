//! Column moves and gathers of the merges of divide and conquer (EVD and
//! bidiagonal SVD): in-place moves of the deflated vectors to their output
//! columns, gathers of vector halves into a workspace, plane rotations.

use std::ops::Range;

use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{MatMut, MatRef};

use crate::scalar::Scalar;

/// Moves column `src` of `q` to column `dst` for each `(src, dst)` of `moves`, in
/// place: the sources are distinct, the destinations are distinct, and a
/// destination that is not also a source may be overwritten. Chains of moves are
/// done from their free end; a cycle goes through one column of scratch.
pub(crate) fn move_columns<T: Scalar>(mut q: MatMut<'_, T>, moves: &[(usize, usize)]) {
    const NONE: usize = usize::MAX;
    let n = q.ncols();
    let mut target = vec![NONE; n];
    for &(src, dst) in moves {
        debug_assert!(target[src] == NONE, "source {src} moved twice");
        target[src] = dst;
    }
    // Every column before `start` is done: moved, or never to move.
    let mut done = vec![false; n];
    let mut saved = vec![T::zero(); q.nrows()];
    let mut chain = Vec::new();
    for start in 0..n {
        if done[start] || target[start] == NONE || target[start] == start {
            done[start] = true;
            continue;
        }
        // Follow start -> target -> ... while the target holds a column that
        // still has to move; the chain ends at a free column or back at start.
        chain.clear();
        chain.push(start);
        let mut p = start;
        let cycle = loop {
            let t = target[p];
            if t == start {
                break true;
            }
            if target[t] == NONE || done[t] {
                break false;
            }
            chain.push(t);
            p = t;
        };
        if cycle {
            let last = *chain.last().expect("the chain holds start");
            copy_col_out(q.rb(), last, &mut saved);
            for w in chain.windows(2).rev() {
                copy_col(q.rb_mut(), w[0], w[1]);
            }
            q.rb_mut()
                .col_mut(start)
                .iter_mut()
                .zip(&saved)
                .for_each(|(x, &s)| *x = s);
        } else {
            for &p in chain.iter().rev() {
                copy_col(q.rb_mut(), p, target[p]);
            }
        }
        for &p in &chain {
            done[p] = true;
        }
    }
}

fn copy_col_out<T: Scalar>(q: MatRef<'_, T>, col: usize, out: &mut [T]) {
    out.iter_mut()
        .zip(q.col(col).iter())
        .for_each(|(o, &x)| *o = x);
}

/// Column `from` of `q` copied over column `to` (`from != to`).
fn copy_col<T: Scalar>(q: MatMut<'_, T>, from: usize, to: usize) {
    crate::linalg::blas::lasr::col_pair(q, from, to, |x, y| y.copy_from_slice(x));
}

/// Rows `rows` of the columns `cols` of `q`, one after the other (column major,
/// leading dimension `rows.len()`) at the start of `out`.
pub(crate) fn gather_cols_into<T: Scalar>(
    q: MatRef<'_, T>,
    rows: Range<usize>,
    cols: &[usize],
    out: &mut [T],
) {
    let m = rows.len();
    if m == 0 {
        return;
    }
    for (dst, &src) in out.chunks_exact_mut(m).zip(cols) {
        let col = q.col(src).subrows(rows.start, m);
        match col.try_as_col_major() {
            Some(c) => dst.copy_from_slice(c.as_slice()),
            None => dst.iter_mut().zip(col.iter()).for_each(|(d, &x)| *d = x),
        }
    }
}
