//! Stage 2 with the band stored in a half type ([`BandPrecision::F16`],
//! [`BandPrecision::BF16`]): seed 000's data-precision awareness (Ringoot
//! et al., 2025, §VI-A and §VI-E). Singular values only.
//!
//! The graph: one conversion task per stage-1 band column block (rounds the
//! working-precision band into the half store as soon as ge2gb has copied
//! those columns), the chase tasks of [`super::gb2bd_with()`] (same DAG, same
//! grain) on the half store, each widening its window to `f32`
//! ([`crate::linalg::band::gb2bd::storage`]), and one task widening the bidiagonal
//! back to the working precision for dqds.

use super::gb2bd::{chase_fine, chase_grouped, Bidiagonal};
use super::ge2gb::UpperBandHandle;
use super::options::BandPrecision;
use super::GB2BD;
use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::band::gb2bd::storage::{BandStorage, SharedBandStore};
use crate::linalg::band::gb2bd::{storage_offsets, SharedUpperBand, UpperBand, SWEEP_LAG};
use crate::matrix::access::Access;
use crate::pipeline::task::{check_owned, subgraph_of, with_access};
use crate::pipeline::ChaseGrain;
use crate::{Error, Result, Scalar};
use faer::Mat;
use half::{bf16, f16};
use std::ops::Range;
use std::sync::Arc;

/// `||A||_F` is scaled to `[2^(TARGET - 1), 2^TARGET]` before a half-band
/// reduction: every band entry stays below `||A||_F` (the reductions are
/// orthogonal), so below 1024 < 65504 = max f16, while entries at the f16
/// underflow threshold (`6e-5`) are `1e-7 ||A||_F`, under f16's roundoff.
const TARGET: i32 = 10;

/// For a half `prec`, multiplies `w` by a power of two bringing `||w||_F`
/// into `[2^9, 2^10]` and returns `scale` times that factor (the factor the
/// singular values are divided by); `scale` unchanged otherwise.
///
/// Errors: [`Error::InvalidArgument`] if the combined factor leaves the range
/// of `T`.
pub(super) fn fit_half_range<T: Scalar>(
    w: &mut Mat<T>,
    scale: T,
    prec: BandPrecision,
) -> Result<T> {
    if prec == BandPrecision::Same {
        return Ok(scale);
    }
    let fro = w.norm_l2().f64();
    if fro == 0.0 || !fro.is_finite() {
        return Ok(scale);
    }
    let k = TARGET - fro.log2().ceil() as i32;
    let f = T::of(2f64.powi(k));
    let total = scale * f;
    if !total.is_finite() || total == T::zero() {
        return Err(Error::InvalidArgument(format!(
            "half-precision band: the matrix (||A||_F = {fro:e}) cannot be scaled into the half range in {}",
            T::NAME
        )));
    }
    for j in 0..w.ncols() {
        for i in 0..w.nrows() {
            w[(i, j)] *= f;
        }
    }
    Ok(total)
}

/// Stage 2 on a band stored in `prec` (a half type) at grain `grain`: the
/// bidiagonal in the working precision, for [`super::singular_values()`].
///
/// Errors: [`Error::InvalidArgument`] for a band from another graph, a zero
/// group or chunk, or [`BandPrecision::Same`]; at run time
/// [`Error::InvalidArgument`] if the half band overflowed.
pub(super) fn gb2bd_half<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
    grain: ChaseGrain,
    prec: BandPrecision,
) -> Result<Bidiagonal<T>> {
    match prec {
        BandPrecision::F16 => gb2bd_stored::<T, f16>(g, band, grain),
        BandPrecision::BF16 => gb2bd_stored::<T, bf16>(g, band, grain),
        BandPrecision::Same => Err(Error::InvalidArgument(
            "gb2bd_half needs a half band precision".into(),
        )),
    }
}

/// [`gb2bd_half()`] with the band stored in `S` (any [`BandStorage`]: the
/// tests also run it with `f32` and `f64` storage for the protocol table).
pub(super) fn gb2bd_stored<T: Scalar, S: BandStorage>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
    grain: ChaseGrain,
) -> Result<Bidiagonal<T>> {
    check_owned(g, "the band", band.feed.iter().map(|(_, t)| t))?;
    let UpperBandHandle {
        band,
        b,
        passes,
        feed,
        reduction,
    } = band;
    let n = band.n();
    let (ku, kl) = storage_offsets(b, &passes);
    let store = Arc::new(SharedBandStore::<S>::zeros(n, ku, kl));
    // Conversion tasks: the columns a stage-1 copy task wrote, rounded.
    let mut conv = Vec::with_capacity(feed.len());
    for (cols, t) in &feed {
        let ct = add_conversion(g, &band, &store, b, cols.clone());
        // The copy task of stage 1 wrote exactly these columns (stage 1's
        // tasks are not in a flow of this stage: the band's handle orders them).
        g.succeed(ct, &[*t]);
        conv.push((cols.clone(), ct));
    }
    let chase = match grain {
        ChaseGrain::Fine => chase_fine(g, &store, &passes, &conv, SWEEP_LAG, false),
        ChaseGrain::Grouped { sweeps, steps } => {
            if sweeps == 0 || steps == 0 {
                return Err(Error::InvalidArgument(format!(
                    "gb2bd: groups of {sweeps} sweeps x {steps} steps"
                )));
            }
            chase_grouped(g, &store, &passes, &conv, sweeps, steps, false)
        }
    };
    let (out, widen) = add_widen::<T, S>(g, &store, n);
    // Explicit, as the chase's own edges ([`chase_fine`] says why they are
    // not derived from the footprints): the widening reads the whole store,
    // so it follows the chase's exits (every chase task precedes one) and
    // the conversions.
    let mut preds: Vec<TaskId> = subgraph_of(g, &chase.ids).exits;
    preds.extend(conv.iter().map(|&(_, t)| t));
    g.succeed(widen, &preds);
    Ok(Bidiagonal {
        band: out,
        all_done: vec![widen],
        reduction,
    })
}

/// Adds the task rounding band columns `cols` (rows `max(j - b, 0) ..= j` of
/// each column `j`, as the stage-1 copy task wrote them) of `band` into the
/// half store.
fn add_conversion<T: Scalar, S: BandStorage>(
    g: &mut TaskGraph<'static>,
    band: &Arc<SharedUpperBand<T>>,
    store: &Arc<SharedBandStore<S>>,
    b: usize,
    cols: Range<usize>,
) -> TaskId {
    let rows = cols.start.saturating_sub(b)..cols.end;
    let body = {
        let (src, dst) = (band.clone(), store.clone());
        let (rows, cols) = (rows.clone(), cols.clone());
        move |acc: &Access<'_>| {
            let mut v = src.read(acc, rows.clone(), cols.clone());
            dst.fill(acc, rows, cols, |i, j| v.get(i, j).f64() as f32);
            Ok(())
        }
    };
    g.add(
        Task::new(
            format!("gb2bd.{}[{}..{}]", S::NAME, cols.start, cols.end),
            with_access(body),
        )
        .stage(GB2BD)
        .cost(
            0.0,
            (std::mem::size_of::<S>() * (b + 1) * cols.len()) as f64,
        )
        .footprint(
            Footprint::new()
                .read(Region::new(band.id(), rows.clone(), cols.clone()))
                .write(Region::new(store.id(), rows.clone(), cols.clone())),
        ),
    )
}

/// Adds the task widening the bidiagonal of the half store (order `n`) to
/// the working precision; returns the bidiagonal's storage and the task.
/// Errors (running): [`Error::InvalidArgument`] if the half band overflowed.
fn add_widen<T: Scalar, S: BandStorage>(
    g: &mut TaskGraph<'static>,
    store: &Arc<SharedBandStore<S>>,
    n: usize,
) -> (Arc<SharedUpperBand<T>>, TaskId) {
    let out = Arc::new(SharedUpperBand::new(UpperBand::<T>::zeros(n, 1, 0)));
    let body = {
        let (src, dst) = (store.clone(), out.clone());
        move |acc: &Access<'_>| {
            let (mut d, mut e) = (vec![0f32; n], vec![0f32; n.saturating_sub(1)]);
            src.for_each(acc, 0..n, 0..n, |i, j, x| {
                if i == j {
                    d[i] = x;
                } else if j == i + 1 {
                    e[i] = x;
                }
            });
            if let Some(x) = d.iter().chain(&e).find(|x| !x.is_finite()) {
                return Err(Error::InvalidArgument(format!(
                    "the {} band overflowed during gb2bd ({x})",
                    S::NAME
                )));
            }
            let mut v = dst.write(acc, 0..n, 0..n);
            for (i, &x) in d.iter().enumerate() {
                v.rect_mut(i..i + 1, i..i + 1)[(0, 0)] = T::of(x as f64);
            }
            for (i, &x) in e.iter().enumerate() {
                v.rect_mut(i..i + 1, i + 1..i + 2)[(0, 0)] = T::of(x as f64);
            }
            Ok(())
        }
    };
    let widen = g.add(
        Task::new(format!("gb2bd.{}.bidiagonal", S::NAME), with_access(body))
            .stage(GB2BD)
            .cost(0.0, (8 * n) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(store.id(), 0..n, 0..n))
                    .write(Region::new(out.id(), 0..n, 0..n)),
            ),
    );
    (out, widen)
}
