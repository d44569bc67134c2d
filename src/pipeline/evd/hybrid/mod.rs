//! The symmetric EVD with its BLAS-3 stages on a device (DESIGN §5; issue
//! 13): the hybrid split of MAGMA's two-stage `dsyevdx_2stage`.
//!
//! * **Stage 1 (sy2sb)** on the device: the matrix is uploaded once; for
//!   each panel the host downloads the panel's column block, factors it
//!   ([`crate::linalg::sy2sb::panel_kernel`], latency bound, so on the
//!   CPU), keeps its band columns, and uploads `V_p` and `T_p`; the device
//!   then applies the two-sided update of the trailing matrix exactly as the
//!   CPU tasks do (`research/seed-tridiag.md` §2 Eq. (1)):
//!   `X = A22 V` (SYMM), `W = X T`, `M = T^T (V^T W)`, `W -= 1/2 V M`
//!   (GEMMs), `A22 -= V W^T + W V^T` (SYR2K).
//! * **Stage 2, the divide and conquer and Q2** on the CPU, as the task graph
//!   of the CPU pipeline from the band on (the same builders), run on the
//!   runtime.
//! * **Q1** on the device: the band's eigenvectors `Q2 Z` are uploaded into
//!   the matrix's buffer and the panels' block reflectors applied in reverse
//!   order, three GEMMs each: `Z -= V (T (V^T Z))`.
//!
//! The device is any [`BlasDevice`]: cuBLAS on a GPU
//! (`crate::cuda::CublasDevice`, feature `cuda`), or [`HostBlas`], the same
//! operations on the host, which is how the driver is tested without a GPU.
//! Results are not bitwise those of the CPU pipeline (the device's products
//! sum in their own order); the tests hold them to the same accuracy ratios.
//!
//! Device memory: the matrix (reused for the eigenvectors), the `V_p` and
//! `T_p` of every panel, and four `n x b` work blocks: about `1.5 n^2 + 4 n b`
//! words ([`device_words`]), checked against the device's free memory before
//! anything is allocated.

mod device;

pub use device::{check_gemm, check_symm, check_syr2k, BlasDevice, HostBlas, Op, Region};

use super::{admit, grain, prepare, sb2st, side, solve_tridiagonal, Band, EvdJob, SymmetricEigen};
use crate::graph::TaskGraph;
use crate::linalg::sy2sb::{panel_count, panel_kernel};
use crate::matrix::SymBand;
use crate::pipeline::EvdOptions;
use crate::runtime::{RunOptions, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};
use std::time::Instant;

/// Stage name of the device's stage 1 in [`HybridEigen::device_seconds`].
pub const DEVICE_SY2SB: &str = "sy2sb (device)";
/// Stage name of the device's Q1 (with the transfers of the eigenvectors).
pub const DEVICE_Q1: &str = "q1 (device)";

/// Result of [`eigh_hybrid`].
#[derive(Debug)]
#[non_exhaustive]
pub struct HybridEigen<T> {
    /// Eigenvalues, eigenvectors, and the report of the CPU part's graph
    /// (stage 2, the tridiagonal solver, Q2).
    pub eigen: SymmetricEigen<T>,
    /// Wall seconds of the device stages ([`DEVICE_SY2SB`], [`DEVICE_Q1`]),
    /// transfers included.
    pub device_seconds: Vec<(&'static str, f64)>,
}

/// Where panel `p`'s factors live on the device.
struct PanelFactors {
    /// `V_p` in explicit form (unit diagonal, zeros above), `m_p x b`.
    v: Region,
    /// `T_p`, `b x b`, upper triangular (zeros below).
    t: Region,
}

/// Stage 1's reflectors on the device, for Q1.
struct DeviceReflectors<B> {
    v: B,
    t: B,
    panels: Vec<PanelFactors>,
}

/// The device buffers of a run.
struct Buffers<B> {
    /// The matrix (lower triangle), then the eigenvectors.
    a: B,
    /// `X`, then `W`; then `V^T Z` and `T V^T Z` of Q1.
    x: B,
    w: B,
    /// `V^T W` and `T^T V^T W` (`b x b`).
    p: B,
    m: B,
}

/// Words of device memory [`eigh_hybrid`] allocates for order `n`,
/// bandwidth `b`: the matrix, every panel's `V_p` (`m_p x b`) and `T_p`,
/// two `n x b` and two `b x b` work blocks.
pub fn device_words(n: usize, b: usize) -> u128 {
    let (n, b) = (n as u128, b as u128);
    let panels = panel_count(n as usize, b as usize) as u128;
    // sum over p of m_p = n - (p + 1) b.
    let v = (0..panels).map(|p| n - (p + 1) * b).sum::<u128>() * b;
    n * n + v + panels * b * b + 2 * n * b + 2 * b * b
}

/// [`Error::OutOfMemory`] unless [`device_words`] fit the device's free
/// memory.
fn check_device_memory<T: Scalar, D: BlasDevice<T>>(dev: &D, n: usize, b: usize) -> Result<()> {
    let needed = device_words(n, b) * std::mem::size_of::<T>() as u128;
    let free = dev.free_bytes()?;
    if needed <= free as u128 {
        return Ok(());
    }
    let gib = |x: f64| x / (1u64 << 30) as f64;
    // Largest n whose figure fits (the figure grows with n).
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if device_words(mid, b) * std::mem::size_of::<T>() as u128 <= free as u128 {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Err(Error::OutOfMemory {
        needed_gib: gib(needed as f64),
        available_gib: gib(free as f64),
        suggestion: format!("on this device n <= {lo} fits (bandwidth {b})"),
    })
}

/// The symmetric eigendecomposition of `a` (the triangle
/// [`EvdOptions::side`] is read) with stage 1 and Q1 on `dev` and the rest on
/// `rt` (see the module documentation). Same results contract as
/// [`super::eigh`]; not bitwise its results.
///
/// Errors: those of [`super::eigh`] (shape, non-finite entry, host memory,
/// convergence), [`Error::OutOfMemory`] when the device's free memory is
/// short (checked before any device allocation), the device's errors, and
/// [`Error::InvalidArgument`] for a selection (not on this path yet).
pub fn eigh_hybrid<T: Scalar, D: BlasDevice<T>>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
    dev: &D,
) -> Result<HybridEigen<T>> {
    eigh_hybrid_with(a, job, opts, rt, dev, &RunOptions::new())
}

/// [`eigh_hybrid`] with the CPU part's graph run under `run` (a trace, for
/// instance: it shows the CPU stages; the device stages are in
/// [`HybridEigen::device_seconds`]).
pub fn eigh_hybrid_with<T: Scalar, D: BlasDevice<T>>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
    dev: &D,
    run: &RunOptions,
) -> Result<HybridEigen<T>> {
    if opts.selection.is_some() {
        return Err(Error::InvalidArgument(
            "a selection of eigenpairs is not on the device path yet".into(),
        ));
    }
    admit::<T>(a.nrows(), a.ncols(), job, opts, Some(rt.threads()), false)?;
    side::check_finite_side(a, opts.side)?;
    let n = a.nrows();
    let b = opts.bandwidth_for(n, job).max(1);
    check_device_memory::<T, D>(dev, n, b)?;
    let mut a = side::lower_copy(a, opts.side);
    let scaling = prepare(&mut a)?;

    let start = Instant::now();
    let mut bufs = Buffers {
        a: dev.alloc(n * n)?,
        x: dev.alloc(n * b)?,
        w: dev.alloc(n * b)?,
        p: dev.alloc(b * b)?,
        m: dev.alloc(b * b)?,
    };
    let whole = Region::whole(n, n);
    dev.upload(a.as_ref(), &mut bufs.a, whole)?;
    drop(a);
    let (band, refl) = sy2sb_on_device(dev, &mut bufs, n, b)?;
    let stage1 = start.elapsed().as_secs_f64();

    let mut g = TaskGraph::new();
    let s2 = sb2st(
        &mut g,
        Band::from_sym_band(band, b)?,
        grain(opts),
        job == EvdJob::Vectors,
    )?;
    let (graph, slot) = solve_tridiagonal(g, s2, None, scaling, job, opts)?.into_parts();
    let report = rt.run_with(graph, run)?;
    let (values, band_vectors) = slot.into_results()?;

    let mut device_seconds = vec![(DEVICE_SY2SB, stage1)];
    let vectors = match band_vectors {
        Some(mut z) => {
            let start = Instant::now();
            apply_q1_on_device(dev, &mut bufs, &refl, z.as_mut())?;
            device_seconds.push((DEVICE_Q1, start.elapsed().as_secs_f64()));
            Some(z)
        }
        None => None,
    };
    Ok(HybridEigen {
        eigen: SymmetricEigen {
            values,
            vectors,
            report,
        },
        device_seconds,
    })
}

/// Stage 1 with the trailing updates on the device (module docs): the band,
/// and the reflectors left on the device. `bufs.a` holds the matrix's lower
/// triangle on entry; its trailing parts are overwritten.
fn sy2sb_on_device<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    bufs: &mut Buffers<D::Buffer>,
    n: usize,
    b: usize,
) -> Result<(SymBand<T>, DeviceReflectors<D::Buffer>)> {
    let whole = Region::whole(n, n);
    let panels = panel_count(n, b);
    let mut layout = Vec::with_capacity(panels);
    let (mut v_len, mut t_len) = (0, 0);
    for p in 0..panels {
        let m = n - (p + 1) * b;
        layout.push(PanelFactors {
            v: Region {
                offset: v_len,
                rows: m,
                cols: b,
                ld: m.max(1),
            },
            t: Region {
                offset: t_len,
                rows: b,
                cols: b,
                ld: b,
            },
        });
        v_len += m * b;
        t_len += b * b;
    }
    let mut refl = DeviceReflectors {
        v: dev.alloc(v_len)?,
        t: dev.alloc(t_len)?,
        panels: layout,
    };
    let mut band = SymBand::<T>::zeros(n, b);
    let (pb, mb) = (Region::whole(b, b), Region::whole(b, b));
    for p in 0..panels {
        let (c0, r0) = (p * b, (p + 1) * b);
        let m = n - r0;
        // The panel's column block from its diagonal down, as the previous
        // panels' updates left it.
        let mut block = Mat::<T>::zeros(n - c0, b);
        dev.download(&bufs.a, whole.sub(c0, c0, n - c0, b), block.as_mut())?;
        copy_lower_into_band(&mut band, block.as_ref().subrows(0, b), c0);
        let mut t = Mat::<T>::zeros(b, b);
        let mut v = Mat::<T>::zeros(m, b);
        let mut panel = block.as_mut().subrows_mut(b, m);
        panel_kernel(panel.as_mut(), t.as_mut(), v.as_mut());
        // R_p: on and above the panel's diagonal, band rows r0.. of its columns.
        for j in 0..b {
            for i in 0..=j.min(m - 1) {
                band.set(r0 + i, c0 + j, panel[(i, j)]);
            }
        }
        for j in 0..b {
            for i in j + 1..b {
                t[(i, j)] = T::zero();
            }
        }
        let f = &refl.panels[p];
        dev.upload(v.as_ref(), &mut refl.v, f.v)?;
        dev.upload(t.as_ref(), &mut refl.t, f.t)?;

        // Two-sided update of A22 (module docs).
        let a22 = whole.sub(r0, r0, m, m);
        let (x, w) = (
            Region {
                offset: 0,
                rows: m,
                cols: b,
                ld: n,
            },
            Region {
                offset: 0,
                rows: m,
                cols: b,
                ld: n,
            },
        );
        let one = T::one();
        let zero = T::zero();
        dev.symm_lower(one, (&bufs.a, a22), (&refl.v, f.v), zero, (&mut bufs.x, x))?;
        dev.gemm(
            one,
            (&bufs.x, x, Op::N),
            (&refl.t, f.t, Op::N),
            zero,
            (&mut bufs.w, w),
        )?;
        dev.gemm(
            one,
            (&refl.v, f.v, Op::T),
            (&bufs.w, w, Op::N),
            zero,
            (&mut bufs.p, pb),
        )?;
        dev.gemm(
            one,
            (&refl.t, f.t, Op::T),
            (&bufs.p, pb, Op::N),
            zero,
            (&mut bufs.m, mb),
        )?;
        dev.gemm(
            T::of(-0.5),
            (&refl.v, f.v, Op::N),
            (&bufs.m, mb, Op::N),
            one,
            (&mut bufs.w, w),
        )?;
        dev.syr2k_lower(-one, (&refl.v, f.v), (&bufs.w, w), one, (&mut bufs.a, a22))?;
    }
    // The trailing diagonal block (at most b + 1 square) is band already.
    let c0 = panels * b;
    let s = n - c0;
    let mut last = Mat::<T>::zeros(s, s);
    dev.download(&bufs.a, whole.sub(c0, c0, s, s), last.as_mut())?;
    for j in 0..s {
        for i in j..s {
            band.set(c0 + i, c0 + j, last[(i, j)]);
        }
    }
    Ok((band, refl))
}

/// The lower triangle of the `b x b` diagonal block `d` (rows and columns
/// from `c0`) into `band`.
fn copy_lower_into_band<T: Scalar>(band: &mut SymBand<T>, d: MatRef<'_, T>, c0: usize) {
    for j in 0..d.ncols() {
        for i in j..d.nrows() {
            band.set(c0 + i, c0 + j, d[(i, j)]);
        }
    }
}

/// `z = Q1 z` on the device: `Q_{P-1}` first, `z[r0.., :] -= V (T (V^T
/// z[r0.., :]))` per panel, in the matrix's buffer; `z` is replaced by the
/// result.
fn apply_q1_on_device<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    bufs: &mut Buffers<D::Buffer>,
    refl: &DeviceReflectors<D::Buffer>,
    mut z: faer::MatMut<'_, T>,
) -> Result<()> {
    let n = z.nrows();
    let whole = Region::whole(n, n);
    dev.upload(z.as_ref(), &mut bufs.a, whole)?;
    let (one, zero) = (T::one(), T::zero());
    for f in refl.panels.iter().rev() {
        let (m, b) = (f.v.rows, f.v.cols);
        let zr = whole.sub(n - m, 0, m, n);
        let vz = Region::whole(b, n);
        dev.gemm(
            one,
            (&refl.v, f.v, Op::T),
            (&bufs.a, zr, Op::N),
            zero,
            (&mut bufs.x, vz),
        )?;
        dev.gemm(
            one,
            (&refl.t, f.t, Op::N),
            (&bufs.x, vz, Op::N),
            zero,
            (&mut bufs.w, vz),
        )?;
        dev.gemm(
            -one,
            (&refl.v, f.v, Op::N),
            (&bufs.w, vz, Op::N),
            one,
            (&mut bufs.a, zr),
        )?;
    }
    dev.download(&bufs.a, whole, z.as_mut())
}
