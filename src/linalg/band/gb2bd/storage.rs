//! Band storage in a narrower type than the arithmetic: seed 000's
//! data-precision awareness (Ringoot, Alomairy and Edelman, 2025, §VI-A and
//! §VI-E). The band lives in `f16`/`bf16` (or any
//! [`BandStorage`]) between tasks; each task widens its window into an `f32`
//! scratch buffer, runs [`super::chase_step`] there and rounds the window back.
//! Memory traffic per task halves (vs f32) while the Householder arithmetic
//! stays in f32, so the error is that of rounding the band once per task
//! visit, `O(u_storage)` relative to `||A||_F`.

use super::band::GbBandMut;
use crate::matrix::access::Access;
use crate::matrix::MatrixId;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use std::cell::UnsafeCell;
use std::ops::Range;

/// A type the band can be stored in between tasks, widened to `f32` inside
/// them.
pub trait BandStorage: Copy + Send + Sync + 'static {
    /// Short name (`"f16"`, `"bf16"`, ...).
    const NAME: &'static str;
    /// Zero.
    const ZERO: Self;
    /// Widens (exact for `f16`, `bf16` and `f32`; rounds an `f64`).
    fn to_f32(self) -> f32;
    /// Rounds to nearest.
    fn from_f32(x: f32) -> Self;
    /// Widens `src` into `dst` (same length); the half types override it
    /// with the `half` crate's vectorized slice conversion.
    fn widen(src: &[Self], dst: &mut [f32]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = x.to_f32();
        }
    }
    /// Rounds `src` into `dst` (same length).
    fn narrow(src: &[f32], dst: &mut [Self]) {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = Self::from_f32(x);
        }
    }
}

impl BandStorage for f16 {
    const NAME: &'static str = "f16";
    const ZERO: Self = f16::ZERO;
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

impl BandStorage for bf16 {
    const NAME: &'static str = "bf16";
    const ZERO: Self = bf16::ZERO;
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

impl BandStorage for f32 {
    const NAME: &'static str = "f32";
    const ZERO: Self = 0.0;
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(x: f32) -> Self {
        x
    }
}

impl BandStorage for f64 {
    const NAME: &'static str = "f64";
    const ZERO: Self = 0.0;
    fn to_f32(self) -> f32 {
        self as f32
    }
    fn from_f32(x: f32) -> Self {
        x as f64
    }
}

/// An upper band in storage type `S` (the layout of
/// [`super::UpperBand`]: column `j` holds rows `j - ku ..= j + kl`), shared
/// by the tasks of one graph. Every access goes through an `Access` grant
/// of the task's declared footprint, and stays inside it.
pub struct SharedBandStore<S> {
    data: UnsafeCell<Vec<S>>,
    ptr: *mut S,
    n: usize,
    ku: usize,
    kl: usize,
    id: MatrixId,
}

// SAFETY: entries are reached only through `fill`, `for_each` and
// `chase_f32`, each confined to a window its task declared (checked by
// `Access::grant`); the graph orders tasks whose windows conflict.
unsafe impl<S: Send> Send for SharedBandStore<S> {}
unsafe impl<S: Send + Sync> Sync for SharedBandStore<S> {}

impl<S: BandStorage> SharedBandStore<S> {
    /// A zero `n x n` band with `ku` superdiagonals and `kl` subdiagonals of
    /// storage.
    pub fn zeros(n: usize, ku: usize, kl: usize) -> Self {
        let mut data = vec![S::ZERO; (ku + kl + 1) * n];
        let ptr = data.as_mut_ptr();
        SharedBandStore {
            data: UnsafeCell::new(data),
            ptr,
            n,
            ku,
            kl,
            id: MatrixId::fresh(),
        }
    }

    /// The id footprints use to name this band.
    pub fn id(&self) -> MatrixId {
        self.id
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    fn ld(&self) -> usize {
        self.ku + self.kl + 1
    }

    /// The stored entries `(i, j)` of `rows x cols`, column by column.
    fn entries(
        &self,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> impl Iterator<Item = (usize, usize)> + '_ {
        cols.flat_map(move |j| {
            let (lo, len) = self.column_part(&rows, j).unwrap_or((0, 0));
            (lo..lo + len).map(move |i| (i, j))
        })
    }

    /// Slot of the stored entry `(i, j)` in the data.
    fn slot(&self, i: usize, j: usize) -> usize {
        (self.ku + i - j) + j * self.ld()
    }

    /// Writes `f(i, j)`, rounded to `S`, into every stored entry of
    /// `rows x cols`, for a task whose declared footprint writes them.
    pub(crate) fn fill(
        &self,
        acc: &Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
        mut f: impl FnMut(usize, usize) -> f32,
    ) {
        acc.grant(self.id, rows.clone(), cols.clone(), true);
        for (i, j) in self.entries(rows, cols) {
            // SAFETY: (i, j) is a stored entry (in bounds) of the granted window.
            unsafe { *self.ptr.add(self.slot(i, j)) = S::from_f32(f(i, j)) };
        }
    }

    /// Calls `f(i, j, a_ij)` (widened) on every stored entry of `rows x cols`,
    /// for a task whose declared footprint reads them.
    pub(crate) fn for_each(
        &self,
        acc: &Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
        mut f: impl FnMut(usize, usize, f32),
    ) {
        acc.grant(self.id, rows.clone(), cols.clone(), false);
        for (i, j) in self.entries(rows, cols) {
            // SAFETY: (i, j) is a stored entry (in bounds) of the granted window.
            f(i, j, unsafe { *self.ptr.add(self.slot(i, j)) }.to_f32());
        }
    }

    /// Widens the window `rows x cols` into an `f32` scratch band, runs `f`
    /// on a view of it confined to the window, and rounds the window back to
    /// `S`: one task of the half-precision chase (f32 arithmetic inside the
    /// task, `S` between tasks).
    pub(crate) fn chase_f32(
        &self,
        acc: &Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
        f: impl FnOnce(&mut GbBandMut<'_, f32>),
    ) {
        acc.grant(self.id, rows.clone(), cols.clone(), true);
        let ld = self.ld();
        let c0 = cols.start;
        let mut scratch = vec![0.0f32; ld * cols.len()];
        // Column j's stored rows of the window are contiguous in both the
        // store and the scratch band (same layout): one slice conversion each.
        for j in cols.clone() {
            let Some((lo, len)) = self.column_part(&rows, j) else {
                continue;
            };
            let at = (self.ku + lo - j) + (j - c0) * ld;
            // SAFETY: rows lo..lo + len of column j are stored entries of the
            // granted window, contiguous from slot(lo, j).
            let src = unsafe { std::slice::from_raw_parts(self.ptr.add(self.slot(lo, j)), len) };
            S::widen(src, &mut scratch[at..at + len]);
        }
        {
            let mut view = GbBandMut::scratch(
                &mut scratch,
                self.n,
                self.ku,
                self.kl,
                rows.clone(),
                cols.clone(),
            );
            f(&mut view);
        }
        for j in cols.clone() {
            let Some((lo, len)) = self.column_part(&rows, j) else {
                continue;
            };
            let at = (self.ku + lo - j) + (j - c0) * ld;
            // SAFETY: as above; the task's grant is exclusive (write).
            let dst =
                unsafe { std::slice::from_raw_parts_mut(self.ptr.add(self.slot(lo, j)), len) };
            S::narrow(&scratch[at..at + len], dst);
        }
    }

    /// First row and count of the stored entries of column `j` within `rows`.
    fn column_part(&self, rows: &Range<usize>, j: usize) -> Option<(usize, usize)> {
        let lo = rows.start.max(j.saturating_sub(self.ku));
        let hi = rows.end.min(j + self.kl + 1).min(self.n);
        (lo < hi).then(|| (lo, hi - lo))
    }
}

impl<S> SharedBandStore<S> {
    /// Bytes of storage.
    pub fn bytes(&self) -> usize {
        // SAFETY: the length is never changed after construction.
        std::mem::size_of::<S>() * unsafe { (*self.data.get()).len() }
    }
}
