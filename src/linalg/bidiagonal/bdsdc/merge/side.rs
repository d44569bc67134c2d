//! Where a bidiagonal merge's gathered vector halves lie in its workspace and
//! the two GEMMs over them (`dlasd3`'s column groups), for one side (`U` or
//! `V`) of the merge.

use std::ops::Range;

use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef};

use crate::linalg::tridiagonal::stedc::merge::{gather_cols_into, gemm};
use crate::scalar::Scalar;

/// Products `[top; bottom] = [top_src * C[top_rows]; bot_src * C[bot_rows]]` of one side
/// (U or V) of a merge: where the gathered column groups lie in the workspace and which
/// coefficient rows they multiply.
#[derive(Clone, Debug)]
pub(super) struct Side {
    /// Offset in the workspace and shape of the top group (column major).
    pub(super) top_at: usize,
    pub(super) top_shape: (usize, usize),
    /// The same for the bottom group.
    pub(super) bot_at: usize,
    pub(super) bot_shape: (usize, usize),
    pub(super) top_rows: Range<usize>,
    pub(super) bot_rows: Range<usize>,
}

impl Side {
    /// Gathers rows `top`/`bot` of the columns `top_cols`/`bot_cols` of `q` into
    /// `work` from word `at`; returns the side and the first word after it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gather<T: Scalar>(
        q: MatRef<'_, T>,
        work: &mut [T],
        at: usize,
        top: Range<usize>,
        top_cols: &[usize],
        bot: Range<usize>,
        bot_cols: &[usize],
        coef_rows: (Range<usize>, Range<usize>),
    ) -> (Self, usize) {
        let top_shape = (top.len(), top_cols.len());
        let bot_shape = (bot.len(), bot_cols.len());
        let bot_at = at + top_shape.0 * top_shape.1;
        let end = bot_at + bot_shape.0 * bot_shape.1;
        gather_cols_into(q, top, top_cols, &mut work[at..bot_at]);
        gather_cols_into(q, bot, bot_cols, &mut work[bot_at..end]);
        let side = Side {
            top_at: at,
            top_shape,
            bot_at,
            bot_shape,
            top_rows: coef_rows.0,
            bot_rows: coef_rows.1,
        };
        (side, end)
    }

    /// `out[0..top rows]` and the last bottom rows of `out` from `coef`.
    pub(super) fn product<T: Scalar>(
        &self,
        work: &[T],
        coef: MatRef<'_, T>,
        mut out: MatMut<'_, T>,
    ) {
        let ((nt, ct), (nb, cb), nc) = (self.top_shape, self.bot_shape, coef.ncols());
        let rows = out.nrows();
        if !self.top_rows.is_empty() {
            let c = coef.subrows(self.top_rows.start, self.top_rows.len());
            let src = MatRef::from_column_major_slice(&work[self.top_at..][..nt * ct], nt, ct);
            gemm(out.rb_mut().submatrix_mut(0, 0, nt, nc), src, c);
        }
        if !self.bot_rows.is_empty() {
            let c = coef.subrows(self.bot_rows.start, self.bot_rows.len());
            let src = MatRef::from_column_major_slice(&work[self.bot_at..][..nb * cb], nb, cb);
            gemm(out.rb_mut().submatrix_mut(rows - nb, 0, nb, nc), src, c);
        }
    }

    /// Words of the workspace after the side.
    pub(super) fn end(&self) -> usize {
        self.bot_at + self.bot_shape.0 * self.bot_shape.1
    }
}
