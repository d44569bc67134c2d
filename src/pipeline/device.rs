//! The dense BLAS-3 operations the hybrid pipelines (the EVD's
//! [`super::evd::hybrid`], the SVD's [`super::svd::hybrid`]) ask of a device
//! ([`BlasDevice`]), the blocks they address ([`Region`]), and [`HostBlas`],
//! the same operations on the host: the oracle that tests the hybrid drivers
//! on machines without a GPU (the cuBLAS implementation is
//! `crate::cuda::CublasDevice`).
//!
//! Every operation names its operands as (buffer, [`Region`]); the checks
//! here ([`check_gemm`], [`check_symm`], [`check_syr2k`], [`Region::check`])
//! are what every implementation runs before touching memory, so a wrong
//! region is an [`Error::Shape`], never an access outside a buffer.

use crate::linalg::gb2bd::{Pass, UpperBand};
use crate::matrix::SymBand;
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use parking_lot::Mutex;
use std::time::Instant;

/// A column-major block of a device buffer: `rows x cols` entries, entry
/// `(i, j)` at element `offset + i + j ld` (the BLAS convention of a pointer
/// and a leading dimension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Element index of entry (0, 0).
    pub offset: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements between the starts of two columns (`>= rows`).
    pub ld: usize,
}

impl Region {
    /// A whole `rows x cols` matrix stored contiguously from element 0.
    pub fn whole(rows: usize, cols: usize) -> Self {
        Region {
            offset: 0,
            rows,
            cols,
            ld: rows.max(1),
        }
    }

    /// The block of `rows x cols` entries from entry `(r, c)` of `self`.
    ///
    /// # Panics
    /// If the block does not lie inside `self` (a bug of the caller's index
    /// arithmetic, not of its data).
    pub fn sub(&self, r: usize, c: usize, rows: usize, cols: usize) -> Region {
        assert!(
            r + rows <= self.rows && c + cols <= self.cols,
            "block ({r}, {c}) of {rows} x {cols} outside a {} x {} region",
            self.rows,
            self.cols
        );
        Region {
            offset: self.offset + r + c * self.ld,
            rows,
            cols,
            ld: self.ld,
        }
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }

    /// One past the last element it touches (`offset` when empty).
    pub fn end(&self) -> usize {
        if self.is_empty() {
            self.offset
        } else {
            self.offset + (self.cols - 1) * self.ld + self.rows
        }
    }

    /// [`Error::Shape`] unless the region lies in a buffer of `len` elements
    /// with `rows <= ld` (columns do not overlap). `what` names the operand.
    pub fn check(&self, len: usize, what: &str) -> Result<()> {
        if self.ld == 0 || self.rows > self.ld || self.end() > len {
            return Err(Error::Shape(format!(
                "{what}: {self:?} does not fit a buffer of {len} elements"
            )));
        }
        Ok(())
    }
}

/// Whether an operand enters a product as it is or transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// As stored.
    N,
    /// Transposed.
    T,
}

impl Op {
    /// `(rows, cols)` of `op(r)`.
    pub fn dims(self, r: Region) -> (usize, usize) {
        match self {
            Op::N => (r.rows, r.cols),
            Op::T => (r.cols, r.rows),
        }
    }
}

/// One finished device operation, timed on the host's clock (for the
/// trace's device track, [`crate::graph::TaskContext::device_slice`]).
#[derive(Clone, Debug)]
pub struct OpTiming {
    /// What ran: `gemm`, `symm`, `syr2k`, `upload`, `download`.
    pub name: &'static str,
    /// When it started and ended.
    pub start: Instant,
    /// When it ended.
    pub end: Instant,
}

/// The device side of the hybrid EVD: buffers of scalars and the three
/// BLAS-3 products of the two-sided band reduction and of the
/// back-transformation (DESIGN §4.1 and §5). Operations are issued in
/// order; [`BlasDevice::download`] returns when the data is on the host.
pub trait BlasDevice<T: Scalar> {
    /// A buffer of device memory.
    type Buffer;

    /// Device memory free for new buffers, in bytes (what the memory check
    /// of a run compares against).
    fn free_bytes(&self) -> Result<usize>;

    /// A zeroed buffer of `len` elements ([`Error::OutOfMemory`] when the
    /// device refuses it).
    fn alloc(&self, len: usize) -> Result<Self::Buffer>;

    /// Elements in `buf`.
    fn len(&self, buf: &Self::Buffer) -> usize;

    /// Copies `host` into `dst` at `at` (same shape).
    fn upload(&self, host: MatRef<'_, T>, dst: &mut Self::Buffer, at: Region) -> Result<()>;

    /// Copies `src` at `at` into `host` (same shape), after every operation
    /// issued before it; the data is on the host when this returns.
    fn download(&self, src: &Self::Buffer, at: Region, host: MatMut<'_, T>) -> Result<()>;

    /// `C = alpha op_a(A) op_b(B) + beta C` (GEMM).
    fn gemm(
        &self,
        alpha: T,
        a: (&Self::Buffer, Region, Op),
        b: (&Self::Buffer, Region, Op),
        beta: T,
        c: (&mut Self::Buffer, Region),
    ) -> Result<()>;

    /// `C = alpha A B + beta C` with `A` symmetric, only its lower triangle
    /// read (SYMM, left side, lower).
    fn symm_lower(
        &self,
        alpha: T,
        a: (&Self::Buffer, Region),
        b: (&Self::Buffer, Region),
        beta: T,
        c: (&mut Self::Buffer, Region),
    ) -> Result<()>;

    /// The lower triangle of `C = alpha (A B^T + B A^T) + beta C`; the strict
    /// upper triangle is not touched (SYR2K, lower, no transpose).
    fn syr2k_lower(
        &self,
        alpha: T,
        a: (&Self::Buffer, Region),
        b: (&Self::Buffer, Region),
        beta: T,
        c: (&mut Self::Buffer, Region),
    ) -> Result<()>;

    /// Whether [`BlasDevice::chase_band`] runs on this device; if not, the
    /// hybrid EVD chases the band on the CPU.
    fn chases_bands(&self) -> bool {
        false
    }

    /// Reduces the symmetric band `band` (lower storage, half-bandwidth `b`,
    /// `ldab >= 2b`) to tridiagonal form on the device, in place, as
    /// [`crate::linalg::sb2st::sb2st_reference`] does (stage 2's bulge
    /// chasing; no reflectors kept: for eigenvalues only). The default
    /// refuses.
    fn chase_band(&self, band: &mut SymBand<T>, b: usize) -> Result<()> {
        let _ = (band, b);
        Err(Error::InvalidArgument(
            "this device does not chase bands (see BlasDevice::chases_bands)".into(),
        ))
    }

    /// Reduces the upper band `band` to upper bidiagonal form on the device
    /// by the bandwidth-reduction `passes` (as [`crate::linalg::gb2bd::run_pass`]
    /// does, pass by pass; no reflectors kept: singular values only). Runs
    /// where [`BlasDevice::chases_bands`] says so; the default refuses.
    fn reduce_upper_band(&self, band: &mut UpperBand<T>, passes: &[Pass]) -> Result<()> {
        let _ = (band, passes);
        Err(Error::InvalidArgument(
            "this device does not chase bands (see BlasDevice::chases_bands)".into(),
        ))
    }

    /// Runs `op`, which issues one operation named `name` on this device,
    /// recording its time for [`BlasDevice::take_timings`]. The default
    /// records nothing.
    fn timed<R>(&self, name: &'static str, op: impl FnOnce() -> Result<R>) -> Result<R> {
        let _ = name;
        op()
    }

    /// The operations timed so far that have finished and were not taken
    /// before (what the device tasks put in the trace). The default keeps
    /// none.
    fn take_timings(&self) -> Vec<OpTiming> {
        Vec::new()
    }
}

/// A device's operations, each through [`BlasDevice::timed`]: what the
/// hybrid driver issues.
pub(crate) struct Timed<'a, D>(pub &'a D);

impl<D> Timed<'_, D> {
    pub fn chase_band<T: Scalar>(&self, band: &mut SymBand<T>, b: usize) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0.timed("sb2st", || self.0.chase_band(band, b))
    }

    pub fn reduce_upper_band<T: Scalar>(
        &self,
        band: &mut UpperBand<T>,
        passes: &[Pass],
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0
            .timed("gb2bd", || self.0.reduce_upper_band(band, passes))
    }

    pub fn upload<T: Scalar>(
        &self,
        host: MatRef<'_, T>,
        dst: &mut D::Buffer,
        at: Region,
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0.timed("upload", || self.0.upload(host, dst, at))
    }

    pub fn download<T: Scalar>(
        &self,
        src: &D::Buffer,
        at: Region,
        host: MatMut<'_, T>,
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0.timed("download", || self.0.download(src, at, host))
    }

    pub fn gemm<T: Scalar>(
        &self,
        alpha: T,
        a: (&D::Buffer, Region, Op),
        b: (&D::Buffer, Region, Op),
        beta: T,
        c: (&mut D::Buffer, Region),
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0.timed("gemm", || self.0.gemm(alpha, a, b, beta, c))
    }

    pub fn symm_lower<T: Scalar>(
        &self,
        alpha: T,
        a: (&D::Buffer, Region),
        b: (&D::Buffer, Region),
        beta: T,
        c: (&mut D::Buffer, Region),
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0
            .timed("symm", || self.0.symm_lower(alpha, a, b, beta, c))
    }

    pub fn syr2k_lower<T: Scalar>(
        &self,
        alpha: T,
        a: (&D::Buffer, Region),
        b: (&D::Buffer, Region),
        beta: T,
        c: (&mut D::Buffer, Region),
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0
            .timed("syr2k", || self.0.syr2k_lower(alpha, a, b, beta, c))
    }
}

/// [`Error::Shape`] unless `band` can be chased at half-bandwidth `b`:
/// `1 <= b`, storage for the bulge (`ldab >= 2b`), nothing outside `b`.
pub fn check_chase<T: Scalar>(band: &SymBand<T>, b: usize) -> Result<()> {
    if b == 0 || 2 * b > band.ldab() || band.bandwidth_used() > b {
        return Err(Error::Shape(format!(
            "chase of a band of half-bandwidth {} (ldab {}) at b = {b}",
            band.bandwidth_used(),
            band.ldab()
        )));
    }
    Ok(())
}

/// `(m, n, k)` of a GEMM after checking every operand against its buffer's
/// length (`lens` = A, B, C) and the shapes against each other.
pub fn check_gemm(
    a: (Region, Op),
    b: (Region, Op),
    c: Region,
    lens: [usize; 3],
) -> Result<(usize, usize, usize)> {
    a.0.check(lens[0], "gemm A")?;
    b.0.check(lens[1], "gemm B")?;
    c.check(lens[2], "gemm C")?;
    let (m, k) = a.1.dims(a.0);
    let (kb, n) = b.1.dims(b.0);
    if k != kb || m != c.rows || n != c.cols {
        return Err(Error::Shape(format!(
            "gemm: {m} x {k} times {kb} x {n} into {} x {}",
            c.rows, c.cols
        )));
    }
    Ok((m, n, k))
}

/// `(m, n)` of a SYMM (`A` is `m x m`, `B` and `C` are `m x n`), checked.
pub fn check_symm(a: Region, b: Region, c: Region, lens: [usize; 3]) -> Result<(usize, usize)> {
    a.check(lens[0], "symm A")?;
    b.check(lens[1], "symm B")?;
    c.check(lens[2], "symm C")?;
    if a.rows != a.cols || b.rows != a.rows || c.rows != a.rows || c.cols != b.cols {
        return Err(Error::Shape(format!(
            "symm: {} x {} times {} x {} into {} x {}",
            a.rows, a.cols, b.rows, b.cols, c.rows, c.cols
        )));
    }
    Ok((c.rows, c.cols))
}

/// `(n, k)` of a SYR2K (`A`, `B` are `n x k`, `C` is `n x n`), checked.
pub fn check_syr2k(a: Region, b: Region, c: Region, lens: [usize; 3]) -> Result<(usize, usize)> {
    a.check(lens[0], "syr2k A")?;
    b.check(lens[1], "syr2k B")?;
    c.check(lens[2], "syr2k C")?;
    if c.rows != c.cols || a.rows != c.rows || b.rows != c.rows || a.cols != b.cols {
        return Err(Error::Shape(format!(
            "syr2k: {} x {} and {} x {} into {} x {}",
            a.rows, a.cols, b.rows, b.cols, c.rows, c.cols
        )));
    }
    Ok((c.rows, a.cols))
}

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
fn view<T: Scalar>(buf: &[T], r: Region) -> MatRef<'_, T> {
    MatRef::from_column_major_slice_with_stride(
        &buf[r.offset.min(buf.len())..],
        r.rows,
        r.cols,
        r.ld,
    )
}

fn view_mut<T: Scalar>(buf: &mut [T], r: Region) -> MatMut<'_, T> {
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
        crate::linalg::sb2st::sb2st_reference(band, b, None);
        Ok(())
    }

    fn reduce_upper_band(&self, band: &mut UpperBand<T>, passes: &[Pass]) -> Result<()> {
        let mut view = band.view();
        for &pass in passes {
            crate::linalg::gb2bd::run_pass(&mut view, pass, None);
        }
        Ok(())
    }

    fn upload(&self, host: MatRef<'_, T>, dst: &mut Vec<T>, at: Region) -> Result<()> {
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

    fn download(&self, src: &Vec<T>, at: Region, mut host: MatMut<'_, T>) -> Result<()> {
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
        a: (&Vec<T>, Region, Op),
        b: (&Vec<T>, Region, Op),
        beta: T,
        c: (&mut Vec<T>, Region),
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
        a: (&Vec<T>, Region),
        b: (&Vec<T>, Region),
        beta: T,
        c: (&mut Vec<T>, Region),
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
        a: (&Vec<T>, Region),
        b: (&Vec<T>, Region),
        beta: T,
        c: (&mut Vec<T>, Region),
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
