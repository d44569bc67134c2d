//! Per-rank input and output: each rank reads only its own blocks of the
//! input `.npy` (positioned reads, C or Fortran order, f2/f4/f8), or generates
//! them from the seed, and writes only its own blocks into one shared output
//! `.npy` whose header rank 0 wrote first. No rank ever holds more than its
//! local share of a matrix.

use super::layout::{random_entry, random_symmetric_entry, Layout};
use crate::matrix::npy::{self, Dtype, Header};
use crate::{Error, Result, Scalar};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn decode(dtype: Dtype, b: &[u8]) -> f64 {
    match dtype {
        Dtype::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
        Dtype::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        Dtype::F64 => f64::from_le_bytes(b.try_into().expect("8 bytes")),
    }
}

/// An input `.npy` opened for positioned reads, its header checked against
/// the file's length (a truncated file is refused before any block is read).
pub struct Input<'p> {
    path: &'p Path,
    file: File,
    header: Header,
}

impl<'p> Input<'p> {
    /// Opens `path`, parses its header, and checks that it is 2-D and that the
    /// file holds all the data the shape calls for.
    pub fn open(path: &'p Path) -> Result<Input<'p>> {
        let header = npy::read_header(path)?;
        if header.shape.len() != 2 {
            return Err(Error::Npy {
                path: path.to_path_buf(),
                reason: format!(
                    "expected a 2-D array, found {} dimension(s)",
                    header.shape.len()
                ),
            });
        }
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        let len = file.metadata().map_err(|e| io_err(path, e))?.len();
        let need = header.data_offset.saturating_add(header.data_bytes());
        if len < need {
            return Err(Error::Npy {
                path: path.to_path_buf(),
                reason: format!(
                    "truncated: the shape {:?} needs {} data bytes but the file has {}",
                    header.shape,
                    header.data_bytes(),
                    len.saturating_sub(header.data_offset)
                ),
            });
        }
        Ok(Input { path, file, header })
    }

    /// The parsed header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Reads the global rectangle at `(r0, c0)` of `rows x cols` into `dst`
    /// (column-major, leading dimension `ld`), converting to `T`.
    fn read_rect<T: Scalar>(
        &self,
        r0: usize,
        c0: usize,
        rows: usize,
        cols: usize,
        dst: &mut [T],
        ld: usize,
    ) -> Result<()> {
        let h = &self.header;
        let es = h.dtype.size();
        let (m, n) = (h.shape[0], h.shape[1]);
        let io = |e| io_err(self.path, e);
        if h.fortran_order {
            // Each column of the rectangle is one contiguous run.
            let mut buf = vec![0u8; rows * es];
            for c in 0..cols {
                let off = h.data_offset + (((c0 + c) * m + r0) * es) as u64;
                self.file.read_exact_at(&mut buf, off).map_err(io)?;
                for r in 0..rows {
                    dst[r + c * ld] = T::of(decode(h.dtype, &buf[r * es..(r + 1) * es]));
                }
            }
        } else {
            // Each row of the rectangle is one contiguous run.
            let mut buf = vec![0u8; cols * es];
            for r in 0..rows {
                let off = h.data_offset + (((r0 + r) * n + c0) * es) as u64;
                self.file.read_exact_at(&mut buf, off).map_err(io)?;
                for c in 0..cols {
                    dst[r + c * ld] = T::of(decode(h.dtype, &buf[c * es..(c + 1) * es]));
                }
            }
        }
        Ok(())
    }

    /// This rank's blocks of the general matrix.
    pub fn read_general<T: Scalar>(&self, layout: &Layout) -> Result<Vec<T>> {
        let ld = layout.lld();
        let mut a = vec![T::of(0.0); layout.local_elems()];
        for (gj, lj, cj) in layout.cols.blocks() {
            for (gi, li, ri) in layout.rows.blocks() {
                self.read_rect(gi, gj, ri, cj, &mut a[li + lj * ld..], ld)?;
            }
        }
        check_finite(layout, &a, |i, j| (i, j))?;
        Ok(a)
    }

    /// This rank's blocks of the symmetric matrix whose lower triangle the
    /// file holds (its upper triangle is not read, as in the single-node
    /// path), both triangles filled, as ELPA wants them. Needs square blocks
    /// aligned on both axes (the layouts of [`super`] are).
    pub fn read_symmetric<T: Scalar>(&self, layout: &Layout) -> Result<Vec<T>> {
        let ld = layout.lld();
        let mut a = vec![T::of(0.0); layout.local_elems()];
        let mut tmp = Vec::new();
        for (gj, lj, cj) in layout.cols.blocks() {
            for (gi, li, ri) in layout.rows.blocks() {
                let dst = &mut a[li + lj * ld..];
                if gi > gj {
                    self.read_rect(gi, gj, ri, cj, dst, ld)?;
                } else if gi < gj {
                    // Strictly upper block: the transpose of block (gj, gi).
                    tmp.resize(cj * ri, T::of(0.0));
                    self.read_rect(gj, gi, cj, ri, &mut tmp, cj)?;
                    for c in 0..cj {
                        for r in 0..ri {
                            dst[r + c * ld] = tmp[c + r * cj];
                        }
                    }
                } else {
                    self.read_rect(gi, gj, ri, cj, dst, ld)?;
                    for c in 0..cj {
                        for r in 0..c.min(ri) {
                            dst[r + c * ld] = dst[c + r * ld];
                        }
                    }
                }
            }
        }
        // Every local entry now comes from the lower triangle: name it there.
        check_finite(layout, &a, |i, j| (i.max(j), i.min(j)))?;
        Ok(a)
    }
}

/// The first non-finite local entry, as [`Error::NonFinite`] at its global
/// position (mapped by `at`).
fn check_finite<T: Scalar>(
    layout: &Layout,
    a: &[T],
    at: impl Fn(usize, usize) -> (usize, usize),
) -> Result<()> {
    let ld = layout.lld();
    for lj in 0..layout.cols.local_len() {
        for li in 0..layout.rows.local_len() {
            let x = a[li + lj * ld];
            if !x.is_finite() {
                let (row, col) = at(layout.rows.to_global(li), layout.cols.to_global(lj));
                return Err(Error::NonFinite {
                    row,
                    col,
                    value: format!("{}", x.f64()),
                });
            }
        }
    }
    Ok(())
}

/// This rank's blocks of the random matrix of `seed` (symmetric or general):
/// each entry depends on `(seed, i, j)` only, so any grid gives the same matrix.
pub fn generate<T: Scalar>(layout: &Layout, seed: u64, symmetric: bool) -> Vec<T> {
    let ld = layout.lld();
    let mut a = vec![T::of(0.0); layout.local_elems()];
    for lj in 0..layout.cols.local_len() {
        let j = layout.cols.to_global(lj);
        for li in 0..layout.rows.local_len() {
            let i = layout.rows.to_global(li);
            let x = if symmetric {
                random_symmetric_entry(seed, i, j)
            } else {
                random_entry(seed, i, j)
            };
            a[li + lj * ld] = T::of(x);
        }
    }
    a
}

pub use crate::matrix::npy::{create_preallocated as create_npy, data_offset};

fn encode<T: Scalar>(x: T, out: &mut Vec<u8>) {
    if std::mem::size_of::<T>() == 4 {
        out.extend_from_slice(&(x.f64() as f32).to_le_bytes());
    } else {
        out.extend_from_slice(&x.f64().to_le_bytes());
    }
}

/// Writes this rank's blocks of the `layout.rows.n x layout.cols.n` matrix
/// `a` (local, column-major) into the Fortran-order `.npy` at `path`, which
/// rank 0 created (with [`create_npy`]) before every rank got here.
pub fn write_blocks<T: Scalar>(path: &Path, layout: &Layout, a: &[T]) -> Result<()> {
    let m = layout.rows.n;
    let offset = data_offset::<T>(&[m, layout.cols.n]);
    let es = std::mem::size_of::<T>();
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    let ld = layout.lld();
    let mut buf = Vec::new();
    for lj in 0..layout.cols.local_len() {
        let j = layout.cols.to_global(lj);
        for (gi, li, ri) in layout.rows.blocks() {
            buf.clear();
            for x in &a[li + lj * ld..li + lj * ld + ri] {
                encode(*x, &mut buf);
            }
            let off = offset + ((j * m + gi) * es) as u64;
            file.write_all_at(&buf, off).map_err(|e| io_err(path, e))?;
        }
    }
    file.sync_data().map_err(|e| io_err(path, e))?;
    Ok(())
}
