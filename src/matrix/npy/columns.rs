//! A 2-D `.npy` file in Fortran order written and read by blocks of columns at
//! their offsets: how a run whose result does not fit in memory hands it to
//! disk (the out-of-core eigenvectors), and how several processes fill one
//! shared file (the distributed path).

use super::{io_err, write::preamble, Dtype};
use crate::matrix::scratch::{read_elements, write_elements, IoStats};
use crate::{Error, Result, Scalar};
use faer::reborrow::*;
use faer::{MatMut, MatRef};
use std::fs::File;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether an array of `shape` is written in Fortran order: like NumPy, C order
/// is said when the two orders coincide (at most one dimension longer than 1).
fn fortran(shape: &[usize]) -> bool {
    shape.iter().filter(|&&d| d > 1).count() > 1
}

/// Creates `path` (replacing whatever is at that name, a symbolic link
/// included, without following it) as an `.npy` of `shape` and dtype `T`:
/// header written, data area zero-filled to full length (a sparse file until
/// written). Returns the data offset.
pub fn create_preallocated<T: Scalar>(path: &Path, shape: &[usize]) -> Result<u64> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path, e)),
    }
    let pre = preamble(Dtype::of::<T>(), fortran(shape), shape);
    let elems = shape.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    file.write_all_at(&pre, 0).map_err(|e| io_err(path, e))?;
    file.set_len(pre.len() as u64 + elems.saturating_mul(std::mem::size_of::<T>() as u64))
        .map_err(|e| io_err(path, e))?;
    Ok(pre.len() as u64)
}

/// The data offset of the header [`create_preallocated`] writes for `shape`
/// and `T`.
pub fn data_offset<T: Scalar>(shape: &[usize]) -> u64 {
    preamble(Dtype::of::<T>(), fortran(shape), shape).len() as u64
}

/// An `nrows x ncols` Fortran-order `.npy` of `T`, open for writing and
/// reading whole columns at their offsets (column `j` is the contiguous run of
/// `nrows` elements at `data_offset + j nrows`). Traffic is counted in an
/// [`IoStats`].
#[derive(Debug)]
pub struct ColumnFile<T> {
    file: File,
    /// The file's path, or for an unnamed file the directory it is in.
    path: PathBuf,
    nrows: usize,
    ncols: usize,
    offset: u64,
    stats: Arc<IoStats>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Scalar> ColumnFile<T> {
    /// Creates `path` as an `nrows x ncols` `.npy` ([`create_preallocated`])
    /// and opens it.
    ///
    /// Errors: [`Error::Io`] naming the file.
    pub fn create(path: &Path, nrows: usize, ncols: usize, stats: Arc<IoStats>) -> Result<Self> {
        let offset = create_preallocated::<T>(path, &[nrows, ncols])?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_err(path, e))?;
        Ok(ColumnFile {
            file,
            path: path.to_path_buf(),
            nrows,
            ncols,
            offset,
            stats,
            _t: PhantomData,
        })
    }

    /// An unnamed file of the same layout in `dir` (gone when dropped), for a
    /// result that is computed but not kept.
    pub fn anonymous(dir: &Path, nrows: usize, ncols: usize, stats: Arc<IoStats>) -> Result<Self> {
        let name = format!(
            ".eigenflow-columns-{}-{}",
            std::process::id(),
            crate::matrix::MatrixId::fresh().0
        );
        let path = dir.join(name);
        let mut f = Self::create(&path, nrows, ncols, stats)?;
        std::fs::remove_file(&path).map_err(|e| io_err(dir, e))?;
        f.path = dir.to_path_buf();
        Ok(f)
    }

    /// Rows of the matrix.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Columns of the matrix.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The traffic counted so far.
    pub fn stats(&self) -> &IoStats {
        &self.stats
    }

    /// The file's path (for an unnamed file, its directory).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check(&self, j0: usize, rows: usize, cols: usize) -> Result<u64> {
        if rows != self.nrows || j0.checked_add(cols).is_none_or(|e| e > self.ncols) {
            return Err(Error::Shape(format!(
                "{}: columns {j0}..{} of {} rows asked of an {} x {} file",
                self.path.display(),
                j0.saturating_add(cols),
                rows,
                self.nrows,
                self.ncols
            )));
        }
        let size = std::mem::size_of::<T>() as u64;
        Ok(self.offset + j0 as u64 * self.nrows as u64 * size)
    }

    /// Writes the columns of `a` (`nrows x w`) as columns `j0..j0 + w`.
    pub fn write_columns(&self, j0: usize, a: MatRef<'_, T>) -> Result<()> {
        let mut at = self.check(j0, a.nrows(), a.ncols())?;
        let step = (self.nrows * std::mem::size_of::<T>()) as u64;
        let mut buf = Vec::new();
        for j in 0..a.ncols() {
            let col = a.col(j);
            match col.try_as_col_major() {
                Some(c) => write_elements(&self.file, &self.path, at, c.as_slice())?,
                None => {
                    buf.clear();
                    buf.extend(col.iter().copied());
                    write_elements(&self.file, &self.path, at, &buf)?;
                }
            }
            at += step;
        }
        self.stats
            .add_written(step.saturating_mul(a.ncols() as u64));
        Ok(())
    }

    /// Reads columns `j0..j0 + w` into `out` (`nrows x w`).
    pub fn read_columns(&self, j0: usize, mut out: MatMut<'_, T>) -> Result<()> {
        let mut at = self.check(j0, out.nrows(), out.ncols())?;
        let step = (self.nrows * std::mem::size_of::<T>()) as u64;
        let mut buf = vec![T::zero(); self.nrows];
        for j in 0..out.ncols() {
            match out.rb_mut().col_mut(j).try_as_col_major_mut() {
                Some(c) => read_elements(&self.file, &self.path, at, c.as_slice_mut())?,
                None => {
                    read_elements(&self.file, &self.path, at, &mut buf)?;
                    out.rb_mut()
                        .col_mut(j)
                        .iter_mut()
                        .zip(&buf)
                        .for_each(|(o, &x)| *o = x);
                }
            }
            at += step;
        }
        self.stats.add_read(step.saturating_mul(out.ncols() as u64));
        Ok(())
    }

    /// Flushes the file's data to the device.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| io_err(&self.path, e))
    }
}
