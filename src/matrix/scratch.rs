//! Scratch files of out-of-core runs: typed positioned reads and writes of
//! `f32`/`f64` slices to a file that has no name.
//!
//! A [`ScratchFile`] is created in a directory and unlinked at once, so the
//! space it holds is returned when the file is dropped or the process dies,
//! however it dies: a killed run leaves nothing behind. Elements are stored in
//! little-endian byte order, converted piecewise through a small buffer (no
//! `unsafe` casts, no second copy of a large slice in memory).
//!
//! Every file carries a [`MatrixId`], so the tasks that write and read it can
//! declare their regions in footprints (rows are element offsets, one column)
//! and [`crate::graph::TaskGraph::check_races`] checks the ordering of file
//! accesses like that of memory ones. The bytes moved are counted in an
//! [`IoStats`] shared by the files of one run.

use crate::matrix::MatrixId;
use crate::{Error, Result, Scalar};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes converted per system call.
const PIECE_BYTES: usize = 1 << 20;

/// Bytes read from and written to the files of one run (logical bytes, as the
/// run asked for them; the operating system's page cache may serve reads
/// without touching the disk).
#[derive(Debug, Default)]
pub struct IoStats {
    read: AtomicU64,
    written: AtomicU64,
}

impl IoStats {
    /// Bytes read so far.
    pub fn read_bytes(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Bytes written so far.
    pub fn written_bytes(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    pub(crate) fn add_read(&self, bytes: u64) {
        self.read.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn add_written(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// An unnamed file of elements of `T` (see the [module docs](self)).
#[derive(Debug)]
pub struct ScratchFile {
    file: File,
    /// Where the file lives (its name is gone), for error messages.
    dir: PathBuf,
    id: MatrixId,
    stats: Arc<IoStats>,
}

impl ScratchFile {
    /// Creates an empty unnamed file in `dir` (which must exist and be
    /// writable), counting its traffic in `stats`.
    ///
    /// Errors: [`Error::Io`] naming `dir` when the file cannot be created or
    /// unlinked.
    pub fn create(dir: &Path, stats: Arc<IoStats>) -> Result<Self> {
        let id = MatrixId::fresh();
        let path = dir.join(format!(
            ".eigenflow-scratch-{}-{}",
            std::process::id(),
            id.0
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_err(dir, e))?;
        std::fs::remove_file(&path).map_err(|e| io_err(dir, e))?;
        Ok(ScratchFile {
            file,
            dir: dir.to_path_buf(),
            id,
            stats,
        })
    }

    /// The id footprints name this file by (rows: element offsets).
    pub fn id(&self) -> MatrixId {
        self.id
    }

    /// The directory the file was created in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `data` at element offset `offset` (the file grows as needed).
    pub fn write_at<T: Scalar>(&self, offset: u64, data: &[T]) -> Result<()> {
        write_elements(&self.file, &self.dir, elem_offset::<T>(offset)?, data)?;
        self.stats.add_written(byte_len::<T>(data.len()));
        Ok(())
    }

    /// Reads `out.len()` elements from element offset `offset`.
    ///
    /// Errors: [`Error::Io`] for a read past the end of what was written.
    pub fn read_at<T: Scalar>(&self, offset: u64, out: &mut [T]) -> Result<()> {
        read_elements(&self.file, &self.dir, elem_offset::<T>(offset)?, out)?;
        self.stats.add_read(byte_len::<T>(out.len()));
        Ok(())
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn byte_len<T>(len: usize) -> u64 {
    (len as u64).saturating_mul(std::mem::size_of::<T>() as u64)
}

fn elem_offset<T>(offset: u64) -> Result<u64> {
    offset
        .checked_mul(std::mem::size_of::<T>() as u64)
        .ok_or_else(|| Error::InvalidArgument(format!("file offset {offset} overflows")))
}

/// Writes `data` (little-endian) at byte offset `at` of `file`.
pub(crate) fn write_elements<T: Scalar>(
    file: &File,
    path: &Path,
    mut at: u64,
    data: &[T],
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let mut buf = Vec::with_capacity(PIECE_BYTES.min(std::mem::size_of_val(data)));
    for piece in data.chunks(PIECE_BYTES / size) {
        buf.clear();
        for &x in piece {
            encode(x, &mut buf);
        }
        file.write_all_at(&buf, at).map_err(|e| io_err(path, e))?;
        at += buf.len() as u64;
    }
    Ok(())
}

/// Reads `out.len()` elements (little-endian) from byte offset `at` of `file`.
pub(crate) fn read_elements<T: Scalar>(
    file: &File,
    path: &Path,
    mut at: u64,
    out: &mut [T],
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let mut buf = vec![0u8; PIECE_BYTES.min(std::mem::size_of_val(out))];
    for piece in out.chunks_mut(PIECE_BYTES / size) {
        let bytes = &mut buf[..std::mem::size_of_val(piece)];
        file.read_exact_at(bytes, at).map_err(|e| io_err(path, e))?;
        for (x, b) in piece.iter_mut().zip(bytes.chunks_exact(size)) {
            *x = decode(b);
        }
        at += bytes.len() as u64;
    }
    Ok(())
}

/// `x` as little-endian bytes of its own width (exact for `f32` and `f64`,
/// signed zeros included).
#[inline]
fn encode<T: Scalar>(x: T, out: &mut Vec<u8>) {
    if std::mem::size_of::<T>() == 4 {
        out.extend_from_slice(&(x.f64() as f32).to_le_bytes());
    } else {
        out.extend_from_slice(&x.f64().to_le_bytes());
    }
}

/// The inverse of [`encode`].
#[inline]
fn decode<T: Scalar>(b: &[u8]) -> T {
    if b.len() == 4 {
        T::of(f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64)
    } else {
        T::of(f64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_exact_and_counted_and_leaves_no_name() {
        let dir = std::env::temp_dir();
        let stats = Arc::new(IoStats::default());
        let f = ScratchFile::create(&dir, stats.clone()).unwrap();
        let name = format!(".eigenflow-scratch-{}-{}", std::process::id(), f.id().0);
        assert!(!dir.join(name).exists(), "the file must have no name");
        // Longer than one piece, with signed zeros, subnormals and extremes.
        let mut x: Vec<f64> = (0..(PIECE_BYTES / 8 + 37))
            .map(|i| (i as f64).sin() * 10f64.powi((i % 600) as i32 - 300))
            .collect();
        x[0] = -0.0;
        x[1] = f64::MIN_POSITIVE / 4.0;
        x[2] = f64::MAX;
        f.write_at(5, &x).unwrap();
        let mut y = vec![1.0f64; x.len()];
        f.read_at(5, &mut y).unwrap();
        assert!(x.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits()));
        let bytes = 8 * x.len() as u64;
        assert_eq!((stats.written_bytes(), stats.read_bytes()), (bytes, bytes));
        let z = [-0.0f32, 1.5e-45, 3.4e38];
        f.write_at(0, &z).unwrap();
        let mut w = [0.0f32; 3];
        f.read_at(0, &mut w).unwrap();
        assert!(z.iter().zip(&w).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn errors_name_the_directory() {
        let missing = std::env::temp_dir().join("eigenflow-no-such-dir-for-scratch");
        let e = ScratchFile::create(&missing, Arc::default()).unwrap_err();
        assert!(
            e.to_string().contains("eigenflow-no-such-dir-for-scratch"),
            "{e}"
        );
        let f = ScratchFile::create(&std::env::temp_dir(), Arc::default()).unwrap();
        f.write_at(0, &[1.0f64; 4]).unwrap();
        let mut past = [0.0f64; 8];
        let e = f.read_at(0, &mut past).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }
}
