//! cuBLAS as the [`BlasDevice`] of the hybrid EVD
//! ([`crate::pipeline::evd::hybrid`]): one stream, one cuBLAS handle, every
//! operation enqueued in order on that stream. Compiled only: it has never
//! run without a GPU (`gpu_check` runs it against the CPU on a GPU machine).
//!
//! Every operation checks its regions against the buffers' lengths and the
//! shapes against each other ([`check_gemm`] and friends) before it forms a
//! device pointer, so the unchecked cuBLAS calls only ever see blocks inside
//! their buffers. The 64-bit cuBLAS entry points are used: at n = 49152 a
//! matrix has more elements than an `i32` counts.

use super::launch::GpuScalar;
use super::launch::{gb2bd_pass_on_stream, sb2st_on_stream, Kernels};
use crate::cuda::{driver_error, looked_for, GpuLanes};
use crate::linalg::band::gb2bd::{Pass, UpperBand};
use crate::matrix::SymBand;
use crate::pipeline::device::{
    check_chase, check_gemm, check_symm, check_syr2k, BlasDevice, DeviceRegion, Op, OpTiming,
};
use crate::{Error, Result};
use cudarc::cublas::sys::{self, cublasOperation_t, cublasStatus_t};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The shared-library names cudarc tries for cuBLAS.
pub fn cublas_library_names() -> Vec<String> {
    let mut out = Vec::new();
    for lib in ["cublas", "cublasLt"] {
        for c in cudarc::get_lib_name_candidates(lib) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// The scalars cuBLAS has the three products for, with their entry points.
pub trait CublasScalar: GpuScalar {
    /// `cublas{D,S}gemm_v2_64`.
    ///
    /// # Safety
    /// cuBLAS's contract: valid handle, device pointers to blocks of the
    /// given shapes and leading dimensions.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        h: sys::cublasHandle_t,
        ta: cublasOperation_t,
        tb: cublasOperation_t,
        dims: [i64; 3],
        alpha: Self,
        a: (u64, i64),
        b: (u64, i64),
        beta: Self,
        c: (u64, i64),
    ) -> cublasStatus_t;

    /// `cublas{D,S}symm_v2_64`, left side, lower triangle.
    ///
    /// # Safety
    /// As [`CublasScalar::gemm`].
    unsafe fn symm_lower(
        h: sys::cublasHandle_t,
        dims: [i64; 2],
        alpha: Self,
        a: (u64, i64),
        b: (u64, i64),
        beta: Self,
        c: (u64, i64),
    ) -> cublasStatus_t;

    /// `cublas{D,S}syr2k_v2_64`, lower triangle, no transpose.
    ///
    /// # Safety
    /// As [`CublasScalar::gemm`].
    unsafe fn syr2k_lower(
        h: sys::cublasHandle_t,
        dims: [i64; 2],
        alpha: Self,
        a: (u64, i64),
        b: (u64, i64),
        beta: Self,
        c: (u64, i64),
    ) -> cublasStatus_t;
}

macro_rules! cublas_scalar {
    ($t:ty, $gemm:ident, $symm:ident, $syr2k:ident) => {
        impl CublasScalar for $t {
            unsafe fn gemm(
                h: sys::cublasHandle_t,
                ta: cublasOperation_t,
                tb: cublasOperation_t,
                [m, n, k]: [i64; 3],
                alpha: $t,
                a: (u64, i64),
                b: (u64, i64),
                beta: $t,
                c: (u64, i64),
            ) -> cublasStatus_t {
                // SAFETY: the caller's contract; alpha and beta are host
                // scalars (the handle's default pointer mode).
                unsafe {
                    sys::$gemm(
                        h,
                        ta,
                        tb,
                        m,
                        n,
                        k,
                        &alpha,
                        a.0 as *const $t,
                        a.1,
                        b.0 as *const $t,
                        b.1,
                        &beta,
                        c.0 as *mut $t,
                        c.1,
                    )
                }
            }

            unsafe fn symm_lower(
                h: sys::cublasHandle_t,
                [m, n]: [i64; 2],
                alpha: $t,
                a: (u64, i64),
                b: (u64, i64),
                beta: $t,
                c: (u64, i64),
            ) -> cublasStatus_t {
                // SAFETY: as in `gemm`.
                unsafe {
                    sys::$symm(
                        h,
                        sys::cublasSideMode_t::CUBLAS_SIDE_LEFT,
                        sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                        m,
                        n,
                        &alpha,
                        a.0 as *const $t,
                        a.1,
                        b.0 as *const $t,
                        b.1,
                        &beta,
                        c.0 as *mut $t,
                        c.1,
                    )
                }
            }

            unsafe fn syr2k_lower(
                h: sys::cublasHandle_t,
                [n, k]: [i64; 2],
                alpha: $t,
                a: (u64, i64),
                b: (u64, i64),
                beta: $t,
                c: (u64, i64),
            ) -> cublasStatus_t {
                // SAFETY: as in `gemm`.
                unsafe {
                    sys::$syr2k(
                        h,
                        sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                        cublasOperation_t::CUBLAS_OP_N,
                        n,
                        k,
                        &alpha,
                        a.0 as *const $t,
                        a.1,
                        b.0 as *const $t,
                        b.1,
                        &beta,
                        c.0 as *mut $t,
                        c.1,
                    )
                }
            }
        }
    };
}

cublas_scalar!(
    f64,
    cublasDgemm_v2_64,
    cublasDsymm_v2_64,
    cublasDsyr2k_v2_64
);
cublas_scalar!(
    f32,
    cublasSgemm_v2_64,
    cublasSsymm_v2_64,
    cublasSsyr2k_v2_64
);

/// A GPU as a [`BlasDevice`]: one stream of [`GpuLanes`] and a cuBLAS handle
/// on it. Every operation is bracketed by two timing events, so that
/// [`BlasDevice::take_timings`] reports the device's own times, placed on
/// the host clock through an event recorded (and waited for) when the
/// device was opened. The events' milliseconds are `f32`: over an hour the
/// placement keeps about a millisecond.
#[derive(Debug)]
pub struct CublasDevice {
    lanes: GpuLanes,
    blas: CudaBlas,
    /// An event and the host instant it completed at.
    clock: (CudaEvent, Instant),
    /// Operations issued and not yet reported, in issue order.
    pending: Mutex<Vec<(&'static str, CudaEvent, CudaEvent)>>,
    /// The NVRTC kernels, compiled at the first band chase.
    kernels: Mutex<Option<Kernels>>,
}

impl CublasDevice {
    /// Opens device `ordinal` with one stream and a cuBLAS handle.
    /// [`Error::NoGpu`] without a driver or device, or without the cuBLAS
    /// library (each checked before its first call, so this never panics).
    pub fn open(ordinal: usize) -> Result<Self> {
        let lanes = GpuLanes::open(ordinal, 1)?;
        // SAFETY: only tries to dlopen the candidate names.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoGpu {
                looked_for: looked_for(&cublas_library_names()),
                reason: "the cuBLAS library is not installed or not on the loader path".into(),
            });
        }
        let blas = CudaBlas::new(Arc::clone(lanes.stream(0)))
            .map_err(|e| cublas_error("cublasCreate", e.0))?;
        let base = timing_event(lanes.stream(0))?;
        base.synchronize()
            .map_err(|e| driver_error("cuEventSynchronize", e))?;
        let clock = (base, Instant::now());
        Ok(CublasDevice {
            lanes,
            blas,
            clock,
            pending: Mutex::new(Vec::new()),
            kernels: Mutex::new(None),
        })
    }

    /// The device's lanes (its context and stream).
    pub fn lanes(&self) -> &GpuLanes {
        &self.lanes
    }

    fn stream(&self) -> &Arc<CudaStream> {
        self.lanes.stream(0)
    }

    /// Makes the context current on the calling thread (cuBLAS uses the
    /// thread's current context).
    fn bind(&self) -> Result<()> {
        self.lanes
            .context()
            .cuda()
            .bind_to_thread()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))
    }
}

/// An event with timing, recorded on `stream` now.
fn timing_event(stream: &CudaStream) -> Result<CudaEvent> {
    stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(|e| driver_error("cuEventRecord", e))
}

fn cublas_error(what: &str, status: cublasStatus_t) -> Error {
    Error::external(format!("cuBLAS {what}: {status:?}"))
}

fn check(what: &str, status: cublasStatus_t) -> Result<()> {
    if status == cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(cublas_error(what, status))
    }
}

fn op(o: Op) -> cublasOperation_t {
    match o {
        Op::N => cublasOperation_t::CUBLAS_OP_N,
        Op::T => cublasOperation_t::CUBLAS_OP_T,
    }
}

/// The device address of `r`'s entry (0, 0) in a buffer at `base`, with its
/// leading dimension (the region was checked against the buffer).
fn at<T>(base: u64, r: DeviceRegion) -> (u64, i64) {
    (
        base + (r.offset * std::mem::size_of::<T>()) as u64,
        r.ld as i64,
    )
}

impl<T: CublasScalar> BlasDevice<T> for CublasDevice {
    type Buffer = CudaSlice<T>;

    fn free_bytes(&self) -> Result<usize> {
        self.lanes.context().free_bytes()
    }
    fn alloc(&self, len: usize) -> Result<CudaSlice<T>> {
        self.bind()?;
        self.stream()
            .alloc_zeros::<T>(len.max(1))
            .map_err(|e| Error::OutOfMemory {
                needed_gib: (len * std::mem::size_of::<T>()) as f64 / (1u64 << 30) as f64,
                available_gib: self.lanes.context().free_bytes().unwrap_or(0) as f64
                    / (1u64 << 30) as f64,
                suggestion: format!("the device refused the allocation ({e:?})"),
            })
    }
    fn len(&self, buf: &CudaSlice<T>) -> usize {
        buf.len()
    }
    /// Brackets `op` (which enqueues on the stream) by two timing events.
    fn timed<R>(&self, name: &'static str, op: impl FnOnce() -> Result<R>) -> Result<R> {
        let start = timing_event(self.stream())?;
        let r = op()?;
        let end = timing_event(self.stream())?;
        self.pending.lock().push((name, start, end));
        Ok(r)
    }

    /// The operations whose end event has completed (the stream is in
    /// order: the first one still running ends the list).
    fn take_timings(&self) -> Vec<OpTiming> {
        let (base, at) = &self.clock;
        let place = |ev: &CudaEvent| {
            base.elapsed_ms(ev)
                .ok()
                .map(|ms| *at + Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
        };
        let mut pending = self.pending.lock();
        let done = pending
            .iter()
            .take_while(|(_, _, end)| end.is_complete())
            .count();
        pending
            .drain(..done)
            .filter_map(|(name, start, end)| {
                Some(OpTiming {
                    name,
                    start: place(&start)?,
                    end: place(&end)?,
                })
            })
            .collect()
    }

    /// The sb2st kernel of `kernels/sb2st.cu` (lag-3 launches).
    fn chases_bands(&self) -> bool {
        true
    }

    fn chase_band(&self, band: &mut SymBand<T>, b: usize) -> Result<()> {
        check_chase(band, b)?;
        self.bind()?;
        let mut kernels = self.kernels.lock();
        if kernels.is_none() {
            *kernels = Some(Kernels::load(self.lanes.context())?);
        }
        let kernels = kernels.as_ref().expect("loaded above");
        let stream = self.stream();
        let drv = |what: &'static str| move |e| driver_error(what, e);
        let mut ab = stream
            .clone_htod(band.as_slice())
            .map_err(drv("cuMemcpyHtoD"))?;
        let (ldab, n) = (band.ldab(), band.n());
        sb2st_on_stream(kernels, stream, &mut ab, ldab, n, b, None)?;
        stream
            .memcpy_dtoh(&ab, band.as_mut_slice())
            .map_err(drv("cuMemcpyDtoH"))?;
        stream.synchronize().map_err(drv("cuStreamSynchronize"))
    }

    /// The gb2bd kernel of `kernels/gb2bd.cu`, one pass after another.
    fn reduce_upper_band(&self, band: &mut UpperBand<T>, passes: &[Pass]) -> Result<()> {
        self.bind()?;
        let mut kernels = self.kernels.lock();
        if kernels.is_none() {
            *kernels = Some(Kernels::load(self.lanes.context())?);
        }
        let kernels = kernels.as_ref().expect("loaded above");
        let stream = self.stream();
        let drv = |what: &'static str| move |e| driver_error(what, e);
        let mut ab = stream
            .clone_htod(band.as_slice())
            .map_err(drv("cuMemcpyHtoD"))?;
        let (ku, ld, n) = (band.ku(), band.ld(), band.n());
        for &pass in passes {
            gb2bd_pass_on_stream(kernels, stream, &mut ab, ku, ld, n, pass, None)?;
        }
        stream
            .memcpy_dtoh(&ab, band.as_mut_slice())
            .map_err(drv("cuMemcpyDtoH"))?;
        stream.synchronize().map_err(drv("cuStreamSynchronize"))
    }

    fn upload(&self, host: MatRef<'_, T>, dst: &mut CudaSlice<T>, r: DeviceRegion) -> Result<()> {
        r.check(dst.len(), "upload")?;
        if (host.nrows(), host.ncols()) != (r.rows, r.cols) {
            return Err(Error::Shape(format!(
                "upload of {} x {} into {r:?}",
                host.nrows(),
                host.ncols()
            )));
        }
        self.bind()?;
        let mut col = Vec::new();
        for j in 0..r.cols {
            let start = r.offset + j * r.ld;
            let mut view = dst.slice_mut(start..start + r.rows);
            let src: &[T] = match host.col(j).try_as_col_major() {
                Some(c) => c.as_slice(),
                None => {
                    col.clear();
                    col.extend(host.col(j).iter().copied());
                    &col
                }
            };
            self.stream()
                .memcpy_htod(src, &mut view)
                .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))?;
        }
        Ok(())
    }

    fn download(&self, src: &CudaSlice<T>, r: DeviceRegion, mut host: MatMut<'_, T>) -> Result<()> {
        r.check(src.len(), "download")?;
        if (host.nrows(), host.ncols()) != (r.rows, r.cols) {
            return Err(Error::Shape(format!(
                "download of {r:?} into {} x {}",
                host.nrows(),
                host.ncols()
            )));
        }
        self.bind()?;
        let mut col = vec![T::zero(); r.rows];
        for j in 0..r.cols {
            let start = r.offset + j * r.ld;
            let view = src.slice(start..start + r.rows);
            self.stream()
                .memcpy_dtoh(&view, col.as_mut_slice())
                .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
            // The copy into pageable memory has landed once the stream has
            // reached it.
            self.stream()
                .synchronize()
                .map_err(|e| driver_error("cuStreamSynchronize", e))?;
            host.rb_mut()
                .col_mut(j)
                .iter_mut()
                .zip(&col)
                .for_each(|(x, &y)| *x = y);
        }
        Ok(())
    }

    fn gemm(
        &self,
        alpha: T,
        a: (&CudaSlice<T>, DeviceRegion, Op),
        b: (&CudaSlice<T>, DeviceRegion, Op),
        beta: T,
        c: (&mut CudaSlice<T>, DeviceRegion),
    ) -> Result<()> {
        let (m, n, k) = check_gemm(
            (a.1, a.2),
            (b.1, b.2),
            c.1,
            [a.0.len(), b.0.len(), c.0.len()],
        )?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        self.bind()?;
        let stream = self.stream();
        let (pa, _ga) = a.0.device_ptr(stream);
        let (pb, _gb) = b.0.device_ptr(stream);
        let (pc, _gc) = c.0.device_ptr_mut(stream);
        // SAFETY: every region was checked inside its buffer (rows <= ld),
        // and op(A) is m x k, op(B) k x n, C m x n (check_gemm); C is a
        // different buffer from A and B (the borrows say so).
        let status = unsafe {
            T::gemm(
                *self.blas.handle(),
                op(a.2),
                op(b.2),
                [m as i64, n as i64, k as i64],
                alpha,
                at::<T>(pa, a.1),
                at::<T>(pb, b.1),
                beta,
                at::<T>(pc, c.1),
            )
        };
        check("gemm", status)
    }

    fn symm_lower(
        &self,
        alpha: T,
        a: (&CudaSlice<T>, DeviceRegion),
        b: (&CudaSlice<T>, DeviceRegion),
        beta: T,
        c: (&mut CudaSlice<T>, DeviceRegion),
    ) -> Result<()> {
        let (m, n) = check_symm(a.1, b.1, c.1, [a.0.len(), b.0.len(), c.0.len()])?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        self.bind()?;
        let stream = self.stream();
        let (pa, _ga) = a.0.device_ptr(stream);
        let (pb, _gb) = b.0.device_ptr(stream);
        let (pc, _gc) = c.0.device_ptr_mut(stream);
        // SAFETY: as in `gemm` (A m x m, B and C m x n, checked).
        let status = unsafe {
            T::symm_lower(
                *self.blas.handle(),
                [m as i64, n as i64],
                alpha,
                at::<T>(pa, a.1),
                at::<T>(pb, b.1),
                beta,
                at::<T>(pc, c.1),
            )
        };
        check("symm", status)
    }

    fn syr2k_lower(
        &self,
        alpha: T,
        a: (&CudaSlice<T>, DeviceRegion),
        b: (&CudaSlice<T>, DeviceRegion),
        beta: T,
        c: (&mut CudaSlice<T>, DeviceRegion),
    ) -> Result<()> {
        let (n, k) = check_syr2k(a.1, b.1, c.1, [a.0.len(), b.0.len(), c.0.len()])?;
        if n == 0 {
            return Ok(());
        }
        self.bind()?;
        let stream = self.stream();
        let (pa, _ga) = a.0.device_ptr(stream);
        let (pb, _gb) = b.0.device_ptr(stream);
        let (pc, _gc) = c.0.device_ptr_mut(stream);
        // SAFETY: as in `gemm` (A and B n x k, C n x n, checked).
        let status = unsafe {
            T::syr2k_lower(
                *self.blas.handle(),
                [n as i64, k as i64],
                alpha,
                at::<T>(pa, a.1),
                at::<T>(pb, b.1),
                beta,
                at::<T>(pc, c.1),
            )
        };
        check("syr2k", status)
    }
}
