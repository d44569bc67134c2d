//! The dense BLAS-3 operations the hybrid pipelines (the EVD's
//! [`super::evd::hybrid`], the SVD's [`super::svd::hybrid`]) ask of a device
//! ([`BlasDevice`]), the blocks they address ([`DeviceRegion`]), and [`HostBlas`],
//! the same operations on the host: the oracle that tests the hybrid drivers
//! on machines without a GPU (the cuBLAS implementation is
//! `CublasDevice` in `pipeline::device::cuda`, feature `cuda`).
//!
//! Every operation names its operands as (buffer, [`DeviceRegion`]); the checks
//! here ([`check_gemm`], [`check_symm`], [`check_syr2k`], [`DeviceRegion::check`])
//! are what every implementation runs before touching memory, so a wrong
//! region is an [`Error::Shape`], never an access outside a buffer.

#[cfg(feature = "cuda")]
pub mod cuda;
mod driver;
mod host;

#[cfg(test)]
pub(crate) use driver::assert_device_edges_needed;
pub(crate) use driver::{
    apply_block_reflector, device_lane, fit_device, trace_timings, uploaded, zero_below_diagonal,
    DeviceFlow,
};
pub use host::HostBlas;

use crate::linalg::band::gb2bd::{Pass, UpperBand};
use crate::matrix::SymBand;
use crate::{Error, Result, Scalar};
use faer::{MatMut, MatRef};
use std::time::Instant;

/// A column-major block of a device buffer: `rows x cols` entries, entry
/// `(i, j)` at element `offset + i + j ld` (the BLAS convention of a pointer
/// and a leading dimension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRegion {
    /// Element index of entry (0, 0).
    pub offset: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements between the starts of two columns (`>= rows`).
    pub ld: usize,
}

impl DeviceRegion {
    /// A whole `rows x cols` matrix stored contiguously from element 0.
    pub fn whole(rows: usize, cols: usize) -> Self {
        DeviceRegion {
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
    pub fn sub(&self, r: usize, c: usize, rows: usize, cols: usize) -> DeviceRegion {
        assert!(
            r + rows <= self.rows && c + cols <= self.cols,
            "block ({r}, {c}) of {rows} x {cols} outside a {} x {} region",
            self.rows,
            self.cols
        );
        DeviceRegion {
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
    pub fn dims(self, r: DeviceRegion) -> (usize, usize) {
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
/// back-transformation (Wang et al., PPoPP 2025, §2.3 and §4.3). Operations are issued in
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
    fn upload(&self, host: MatRef<'_, T>, dst: &mut Self::Buffer, at: DeviceRegion) -> Result<()>;

    /// Copies `src` at `at` into `host` (same shape), after every operation
    /// issued before it; the data is on the host when this returns.
    fn download(&self, src: &Self::Buffer, at: DeviceRegion, host: MatMut<'_, T>) -> Result<()>;

    /// `C = alpha op_a(A) op_b(B) + beta C` (GEMM).
    fn gemm(
        &self,
        alpha: T,
        a: (&Self::Buffer, DeviceRegion, Op),
        b: (&Self::Buffer, DeviceRegion, Op),
        beta: T,
        c: (&mut Self::Buffer, DeviceRegion),
    ) -> Result<()>;

    /// `C = alpha A B + beta C` with `A` symmetric, only its lower triangle
    /// read (SYMM, left side, lower).
    fn symm_lower(
        &self,
        alpha: T,
        a: (&Self::Buffer, DeviceRegion),
        b: (&Self::Buffer, DeviceRegion),
        beta: T,
        c: (&mut Self::Buffer, DeviceRegion),
    ) -> Result<()>;

    /// The lower triangle of `C = alpha (A B^T + B A^T) + beta C`; the strict
    /// upper triangle is not touched (SYR2K, lower, no transpose).
    fn syr2k_lower(
        &self,
        alpha: T,
        a: (&Self::Buffer, DeviceRegion),
        b: (&Self::Buffer, DeviceRegion),
        beta: T,
        c: (&mut Self::Buffer, DeviceRegion),
    ) -> Result<()>;

    /// Whether [`BlasDevice::chase_band`] runs on this device; if not, the
    /// hybrid EVD chases the band on the CPU.
    fn chases_bands(&self) -> bool {
        false
    }

    /// Reduces the symmetric band `band` (lower storage, half-bandwidth `b`,
    /// `ldab >= 2b`) to tridiagonal form on the device, in place, as
    /// [`crate::linalg::band::sb2st::sb2st_reference`] does (stage 2's bulge
    /// chasing; no reflectors kept: for eigenvalues only). The default
    /// refuses.
    fn chase_band(&self, band: &mut SymBand<T>, b: usize) -> Result<()> {
        let _ = (band, b);
        Err(no_band_chase())
    }

    /// Reduces the upper band `band` to upper bidiagonal form on the device
    /// by the bandwidth-reduction `passes` (as [`crate::linalg::band::gb2bd::run_pass`]
    /// does, pass by pass; no reflectors kept: singular values only). Runs
    /// where [`BlasDevice::chases_bands`] says so; the default refuses.
    fn reduce_upper_band(&self, band: &mut UpperBand<T>, passes: &[Pass]) -> Result<()> {
        let _ = (band, passes);
        Err(no_band_chase())
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

/// The refusal of a device without the band chases.
fn no_band_chase() -> Error {
    Error::InvalidArgument("this device does not chase bands (see BlasDevice::chases_bands)".into())
}

/// A [`BlasDevice`] the tasks of a hybrid graph can share (across the
/// runtime's threads, for the graph's lifetime): what
/// `evd_graph_hybrid` and `svd_graph_hybrid` take.
pub trait GraphDevice<T: Scalar>:
    BlasDevice<T, Buffer: Send + 'static> + Send + Sync + 'static
{
}

impl<T: Scalar, D> GraphDevice<T> for D
where
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
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
        at: DeviceRegion,
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0.timed("upload", || self.0.upload(host, dst, at))
    }

    pub fn download<T: Scalar>(
        &self,
        src: &D::Buffer,
        at: DeviceRegion,
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
        a: (&D::Buffer, DeviceRegion, Op),
        b: (&D::Buffer, DeviceRegion, Op),
        beta: T,
        c: (&mut D::Buffer, DeviceRegion),
    ) -> Result<()>
    where
        D: BlasDevice<T>,
    {
        self.0.timed("gemm", || self.0.gemm(alpha, a, b, beta, c))
    }

    pub fn symm_lower<T: Scalar>(
        &self,
        alpha: T,
        a: (&D::Buffer, DeviceRegion),
        b: (&D::Buffer, DeviceRegion),
        beta: T,
        c: (&mut D::Buffer, DeviceRegion),
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
        a: (&D::Buffer, DeviceRegion),
        b: (&D::Buffer, DeviceRegion),
        beta: T,
        c: (&mut D::Buffer, DeviceRegion),
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
    a: (DeviceRegion, Op),
    b: (DeviceRegion, Op),
    c: DeviceRegion,
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
pub fn check_symm(
    a: DeviceRegion,
    b: DeviceRegion,
    c: DeviceRegion,
    lens: [usize; 3],
) -> Result<(usize, usize)> {
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
pub fn check_syr2k(
    a: DeviceRegion,
    b: DeviceRegion,
    c: DeviceRegion,
    lens: [usize; 3],
) -> Result<(usize, usize)> {
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
