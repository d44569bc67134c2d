//! The gb2bd task kernel and the sequential drivers.

use super::band::{GbBandMut, UpperBand};
use super::reflectors::{Gb2bdReflectors, PassSlots};
use super::{num_sweeps, steps, task_geom, Pass};
use crate::linalg::householder::{larf_left, larf_right, larfg_slice};
use crate::Scalar;
use faer::reborrow::*;

/// Reflectors and row workspaces up to this length live on the stack.
const STACK: usize = 256;

simd_dispatch! {
    /// Task `(r, s)` of `pass` (module docs) on `band`: the right
    /// reflector annihilating `A[r_s, c_s+1 ..= c_s+d]`, applied to the rows
    /// below it, then the left reflector annihilating `A[c_s+1 ..= c_s+d, c_s]`,
    /// applied to the columns right of it. Annihilated entries are written as exact
    /// zeros and the pivots get `beta`; a zero tail gives `tau = 0` and that
    /// reflector is skipped.
    ///
    /// `out = Some((right, left))` receives `[tau, v_1, ..., v_{L-1}]` of each
    /// reflector (`L` = [`super::Gb2bdTaskGeom::len`]). Touches exactly
    /// [`super::task_regions`]; the band storage needs `ku >= b + d`, `kl >= d`.
    ///
    /// Compiled for AVX-512 or AVX2 when the CPU has them (the reflectors'
    /// dot products and updates vectorise; the crate's baseline is SSE2), with
    /// the same results.
    pub fn chase_step / chase_step_simd / chase_step_body (
        band: &mut GbBandMut<'_, T>,
        pass: Pass,
        r: usize,
        s: usize,
        out: Option<(&mut [T], &mut [T])>
    )
}

#[inline(always)]
fn chase_step_body<T: Scalar>(
    band: &mut GbBandMut<'_, T>,
    pass: Pass,
    r: usize,
    s: usize,
    out: Option<(&mut [T], &mut [T])>,
) {
    let n = band.n();
    assert!(
        band.ku() >= pass.b + pass.d() && band.kl() >= pass.d(),
        "band storage (ku = {}, kl = {}) too small for pass {pass:?}: needs ku >= b + d, kl >= d",
        band.ku(),
        band.kl()
    );
    let g = task_geom(n, pass, r, s);
    let len = g.len;
    let nrows = g.right_rows().len() - 1;

    let mut v_stack = [T::zero(); STACK];
    let mut w_stack = [T::zero(); STACK];
    let (mut v_heap, mut w_heap);
    let v: &mut [T] = if len <= STACK {
        &mut v_stack[..len]
    } else {
        v_heap = vec![T::zero(); len];
        &mut v_heap
    };
    let w: &mut [T] = if nrows <= STACK {
        &mut w_stack[..nrows]
    } else {
        w_heap = vec![T::zero(); nrows];
        &mut w_heap
    };

    // (a) Right reflector from row r_s, columns [c_s, c_s + L).
    let tau_r = {
        let mut x = band.rect_mut(g.row..g.row + 1, g.span());
        for (j, vj) in v.iter_mut().enumerate() {
            *vj = x[(0, j)];
        }
        let (alpha, tail) = v.split_first_mut().expect("L >= 2");
        let tau = larfg_slice(alpha, tail);
        if tau != T::zero() {
            x[(0, 0)] = *alpha;
            for j in 1..len {
                x[(0, j)] = T::zero();
            }
        }
        tau
    };
    let (right_out, left_out) = match out {
        Some((r, l)) => (Some(r), Some(l)),
        None => (None, None),
    };
    if let Some(o) = right_out {
        o[0] = tau_r;
        o[1..len].copy_from_slice(&v[1..]);
    }
    if tau_r != T::zero() {
        let rows = g.row + 1..g.right_rows().end;
        larf_right(tau_r, &v[1..], band.rect_mut(rows, g.span()), w);
    }

    // (b) Left reflector from column c_s, rows [c_s, c_s + L) (contiguous).
    let tau_l = {
        let mut x = band.rect_mut(g.span(), g.col..g.col + 1);
        let col = x
            .rb_mut()
            .col_mut(0)
            .try_as_col_major_mut()
            .expect("band columns are contiguous")
            .as_slice_mut();
        let (alpha, tail) = col.split_first_mut().expect("L >= 2");
        let tau = larfg_slice(alpha, tail);
        v[1..].copy_from_slice(tail);
        if tau != T::zero() {
            tail.fill(T::zero());
        }
        tau
    };
    if let Some(o) = left_out {
        o[0] = tau_l;
        o[1..len].copy_from_slice(&v[1..]);
    }
    if tau_l != T::zero() {
        larf_left(
            tau_l,
            &v[1..],
            band.rect_mut(g.span(), g.col + 1..g.left_end),
        );
    }
}

/// Runs every task of `pass` in sequential (sweep-major) order, a valid order
/// of the [`super::fine_preds`] DAG, storing the reflectors in `slots` when
/// given.
pub fn run_pass<T: Scalar>(
    band: &mut GbBandMut<'_, T>,
    pass: Pass,
    mut slots: Option<&mut PassSlots<'_, T>>,
) {
    let n = band.n();
    for r in 0..num_sweeps(n, pass) {
        for s in 0..steps(n, pass, r) {
            let out = slots.as_mut().map(|sl| sl.slot_mut(r, s));
            chase_step(band, pass, r, s, out);
        }
    }
}

/// Sequential reference driver: runs the passes in order, each with
/// [`run_pass`]. The input must have upper bandwidth `passes[0].b` (nothing
/// below the diagonal), consecutive passes must chain (`b` of one is `b'` of
/// the previous) and the storage must fit every pass
/// ([`super::storage_offsets`]). On return the band is upper bidiagonal if the
/// schedule ends at 1, every other entry exactly zero. With `store` (built for
/// the same `n` and passes), every reflector is kept for the back-transforms.
// Used by the tests (and as the reference for the SVD pipeline to come).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn gb2bd_serial<T: Scalar>(
    band: &mut UpperBand<T>,
    passes: &[Pass],
    mut store: Option<&mut Gb2bdReflectors<T>>,
) {
    for w in passes.windows(2) {
        assert_eq!(w[0].b_new, w[1].b, "gb2bd passes must chain");
    }
    if let Some(st) = store.as_deref() {
        assert!(
            st.n() == band.n() && st.passes().as_slice() == passes,
            "reflector storage is for another (n, schedule)"
        );
    }
    let mut view = band.view();
    for (p, &pass) in passes.iter().enumerate() {
        let mut slots = store.as_mut().map(|st| st.pass_mut(p).slots());
        run_pass(&mut view, pass, slots.as_mut());
    }
}
