//! [`HostBlas`]: the device operations on the host, the oracle of the
//! hybrid drivers where no GPU is.

use super::{
    check_chase, check_gemm, check_symm, check_syr2k, BlasDevice, DeviceRegion, Op, OpTiming,
};
use crate::linalg::band::gb2bd::{Pass, UpperBand};
use crate::matrix::SymBand;
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use parking_lot::Mutex;
use std::time::Instant;

/// [`BlasDevice`] on the host: buffers are vectors and the products faer's.
/// It stands in for a GPU in the tests, so that the hybrid driver (panel
/// order, transfers, the compact-WY algebra) is checked where no GPU is; its
/// [`BlasDevice::free_bytes`] is a fixed budget, so the device memory check
/// can be tested too.
#[derive(Debug)]
pub struct HostBlas {
    budget: usize,
    par: Par,
    timings: Mutex<Vec<OpTiming>>,
}

impl HostBlas {
    /// Unbounded memory, products on one thread.
    pub fn new() -> Self {
        HostBlas {
            budget: usize::MAX,
            par: Par::Seq,
            timings: Mutex::new(Vec::new()),
        }
    }

    /// Reports `bytes` of free memory (allocations are not refused: the
    /// budget is for the driver's check).
    pub fn with_budget(bytes: usize) -> Self {
        HostBlas {
            budget: bytes,
            ..Self::new()
        }
    }
}

impl Default for HostBlas {
    fn default() -> Self {
        Self::new()
    }
}

/// `r` of `buf` as a matrix (checked by the caller).
fn view<T: Scalar>(buf: &[T], r: DeviceRegion) -> MatRef<'_, T> {
    MatRef::from_column_major_slice_with_stride(
        &buf[r.offset.min(buf.len())..],
        r.rows,
        r.cols,
        r.ld,
    )
}

fn view_mut<T: Scalar>(buf: &mut [T], r: DeviceRegion) -> MatMut<'_, T> {
    let start = r.offset.min(buf.len());
    MatMut::from_column_major_slice_with_stride_mut(&mut buf[start..], r.rows, r.cols, r.ld)
}

fn op<T: Scalar>(m: MatRef<'_, T>, o: Op) -> MatRef<'_, T> {
    match o {
        Op::N => m,
        Op::T => m.transpose(),
    }
}

/// `C = beta C` (BLAS semantics: `beta = 0` overwrites, NaN included), the
/// triangle `lower_only` or all of it.
fn scale_c<T: Scalar>(mut c: MatMut<'_, T>, beta: T, lower_only: bool) {
    for j in 0..c.ncols() {
        let first = if lower_only { j } else { 0 };
        for i in first..c.nrows() {
            c[(i, j)] = if beta == T::zero() {
                T::zero()
            } else {
                beta * c[(i, j)]
            };
        }
    }
}

impl<T: Scalar> BlasDevice<T> for HostBlas {
    type Buffer = Vec<T>;

    fn free_bytes(&self) -> Result<usize> {
        Ok(self.budget)
    }

    fn alloc(&self, len: usize) -> Result<Vec<T>> {
        Ok(vec![T::zero(); len])
    }

    fn len(&self, buf: &Vec<T>) -> usize {
        buf.len()
    }

    fn timed<R>(&self, name: &'static str, op: impl FnOnce() -> Result<R>) -> Result<R> {
        let start = Instant::now();
        let r = op();
        let end = Instant::now();
        self.timings.lock().push(OpTiming { name, start, end });
        r
    }

    fn take_timings(&self) -> Vec<OpTiming> {
        std::mem::take(&mut *self.timings.lock())
    }

    /// The CPU's sequential chase: the oracle of the device kernels.
    fn chases_bands(&self) -> bool {
        true
    }

    fn chase_band(&self, band: &mut SymBand<T>, b: usize) -> Result<()> {
        check_chase(band, b)?;
        crate::linalg::band::sb2st::sb2st_reference(band, b, None);
        Ok(())
    }

    fn reduce_upper_band(&self, band: &mut UpperBand<T>, passes: &[Pass]) -> Result<()> {
        let mut view = band.view();
        for &pass in passes {
            crate::linalg::band::gb2bd::run_pass(&mut view, pass, None);
        }
        Ok(())
    }

    fn upload(&self, host: MatRef<'_, T>, dst: &mut Vec<T>, at: DeviceRegion) -> Result<()> {
        at.check(dst.len(), "upload")?;
        if (host.nrows(), host.ncols()) != (at.rows, at.cols) {
            return Err(Error::Shape(format!(
                "upload of {} x {} into {at:?}",
                host.nrows(),
                host.ncols()
            )));
        }
        view_mut(dst, at).copy_from(host);
        Ok(())
    }

    fn download(&self, src: &Vec<T>, at: DeviceRegion, mut host: MatMut<'_, T>) -> Result<()> {
        at.check(src.len(), "download")?;
        if (host.nrows(), host.ncols()) != (at.rows, at.cols) {
            return Err(Error::Shape(format!(
                "download of {at:?} into {} x {}",
                host.nrows(),
                host.ncols()
            )));
        }
        host.copy_from(view(src, at));
        Ok(())
    }

    fn gemm(
        &self,
        alpha: T,
        a: (&Vec<T>, DeviceRegion, Op),
        b: (&Vec<T>, DeviceRegion, Op),
        beta: T,
        c: (&mut Vec<T>, DeviceRegion),
    ) -> Result<()> {
        let (_, _, k) = check_gemm(
            (a.1, a.2),
            (b.1, b.2),
            c.1,
            [a.0.len(), b.0.len(), c.0.len()],
        )?;
        let mut cm = view_mut(c.0, c.1);
        scale_c(cm.as_mut(), beta, false);
        if k > 0 {
            let (am, bm) = (op(view(a.0, a.1), a.2), op(view(b.0, b.1), b.2));
            matmul(cm, Accum::Add, am, bm, alpha, self.par);
        }
        Ok(())
    }

    fn symm_lower(
        &self,
        alpha: T,
        a: (&Vec<T>, DeviceRegion),
        b: (&Vec<T>, DeviceRegion),
        beta: T,
        c: (&mut Vec<T>, DeviceRegion),
    ) -> Result<()> {
        check_symm(a.1, b.1, c.1, [a.0.len(), b.0.len(), c.0.len()])?;
        let mut cm = view_mut(c.0, c.1);
        scale_c(cm.as_mut(), beta, false);
        let (am, bm) = (view(a.0, a.1), view(b.0, b.1));
        use BlockStructure::{Rectangular as Rect, StrictTriangularUpper, TriangularLower};
        // A = L + S^T with L the lower triangle (diagonal included) and S
        // the strict lower one: A B = L B + (S^T) B, each read from the
        // lower triangle only.
        tri_matmul(
            cm.as_mut(),
            Rect,
            Accum::Add,
            am,
            TriangularLower,
            bm,
            Rect,
            alpha,
            self.par,
        );
        tri_matmul(
            cm.as_mut(),
            Rect,
            Accum::Add,
            am.transpose(),
            StrictTriangularUpper,
            bm,
            Rect,
            alpha,
            self.par,
        );
        Ok(())
    }

    fn syr2k_lower(
        &self,
        alpha: T,
        a: (&Vec<T>, DeviceRegion),
        b: (&Vec<T>, DeviceRegion),
        beta: T,
        c: (&mut Vec<T>, DeviceRegion),
    ) -> Result<()> {
        let (_, k) = check_syr2k(a.1, b.1, c.1, [a.0.len(), b.0.len(), c.0.len()])?;
        let mut cm = view_mut(c.0, c.1);
        scale_c(cm.as_mut(), beta, true);
        if k == 0 {
            return Ok(());
        }
        let (am, bm) = (view(a.0, a.1), view(b.0, b.1));
        use BlockStructure::{Rectangular as Rect, TriangularLower};
        for (l, r) in [(am, bm), (bm, am)] {
            tri_matmul(
                cm.as_mut(),
                TriangularLower,
                Accum::Add,
                l,
                Rect,
                r.transpose(),
                Rect,
                alpha,
                self.par,
            );
        }
        Ok(())
    }
}
