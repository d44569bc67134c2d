//! Reading and writing NumPy `.npy` files.
//!
//! Reading accepts format versions 1.0, 2.0 and 3.0, little-endian (or native /
//! "not applicable" byte order on a little-endian host) `f8`, `f4` and `f2`
//! dtypes, in C or Fortran order, and converts every entry to the requested
//! [`Scalar`]. Writing produces version 1.0 files in Fortran order with the
//! dtype of `T` (`'<f8'` for `f64`, `'<f4'` for `f32`), which `numpy.load`
//! reads back without copying into a column-major array.
//!
//! Every failure names the file and says what is wrong with it: a missing file
//! is an [`Error::Io`], everything else (bad magic, unsupported version,
//! unparsable header, unsupported dtype, wrong rank, truncated data, a
//! non-square matrix where a square one was asked for, a finite value beyond
//! the range of the requested precision) is an [`Error::Npy`].
//!
//! The reader is meant to survive hostile files: the header is capped at
//! 10,000 bytes (NumPy's own limit for reading) and refused before it is read,
//! the header parser bounds its nesting depth, error messages quote at most a
//! short excerpt of the header, and the data length is checked against the
//! shape before anything of the shape's size is allocated.
//!
//! ```
//! use eigenflow::matrix::npy;
//! let dir = std::env::temp_dir().join(format!("eigenflow-npy-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("a.npy");
//! let a = faer::Mat::<f64>::from_fn(3, 2, |i, j| (i + 10 * j) as f64);
//! npy::write_matrix(&path, a.as_ref()).unwrap();
//! let b: faer::Mat<f64> = npy::read_matrix(&path).unwrap();
//! assert_eq!(a, b);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use crate::{Error, Result, Scalar};
use faer::Mat;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Longest header the reader accepts, in bytes: NumPy's own limit for reading
/// (`numpy.lib.format`, `max_header_size`).
const MAX_HEADER_LEN: usize = 10_000;

/// Largest dimension of an empty matrix (one with a zero dimension) the reader
/// builds. A non-empty matrix's dimensions are bounded by its data, an empty
/// one's by nothing: `(0, 2**40)` is a valid header, but faer visits every
/// column of even an empty matrix, and above about `2**60` rows its storage
/// arithmetic overflows.
const MAX_EMPTY_DIM: usize = 1 << 24;

/// Number of elements converted per read call.
const CHUNK_ELEMS: usize = 1 << 16;

/// Element type of an `.npy` file that eigenflow can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE half precision (`'<f2'`); read only.
    F16,
    /// IEEE single precision (`'<f4'`).
    F32,
    /// IEEE double precision (`'<f8'`).
    F64,
}

impl Dtype {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Dtype::F16 => 2,
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }

    /// The little-endian NumPy descriptor (`'<f8'`, ...).
    pub fn descr(self) -> &'static str {
        match self {
            Dtype::F16 => "<f2",
            Dtype::F32 => "<f4",
            Dtype::F64 => "<f8",
        }
    }

    /// The dtype eigenflow writes for scalar type `T`.
    pub fn of<T: Scalar>() -> Dtype {
        if std::mem::size_of::<T>() == 4 {
            Dtype::F32
        } else {
            Dtype::F64
        }
    }

    /// Decodes one little-endian element (`bytes.len() == self.size()`).
    #[inline]
    fn decode(self, bytes: &[u8]) -> f64 {
        match self {
            Dtype::F16 => half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f64(),
            Dtype::F32 => f32::from_le_bytes(bytes.try_into().unwrap()) as f64,
            Dtype::F64 => f64::from_le_bytes(bytes.try_into().unwrap()),
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.descr())
    }
}

/// The parsed header of an `.npy` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version `(major, minor)`.
    pub version: (u8, u8),
    /// Element type.
    pub dtype: Dtype,
    /// Whether the data are stored in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
    /// Byte offset of the first data byte (magic + version + length + header).
    pub data_offset: u64,
}

impl Header {
    /// Number of elements (product of the shape). The reader refuses shapes
    /// whose product overflows; for a hand-made header it saturates.
    pub fn len(&self) -> usize {
        self.shape.iter().fold(1usize, |a, &d| a.saturating_mul(d))
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of data bytes the shape and dtype call for.
    pub fn data_bytes(&self) -> u64 {
        (self.len() as u64).saturating_mul(self.dtype.size() as u64)
    }

    /// Bytes needed to hold the array in memory as `T` (for memory checks before
    /// reading).
    /// Saturates at `u64::MAX` (an f2 file read as f64 takes 4 times its size).
    pub fn bytes_as<T: Scalar>(&self) -> u64 {
        (self.len() as u64).saturating_mul(std::mem::size_of::<T>() as u64)
    }
}

/// Formats a shape the way NumPy does: `(3,)`, `(3, 4)`, `()`.
fn shape_str(shape: &[usize]) -> String {
    match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// Where element `k` (in file order) sits, for messages: `row i, column j` of
/// a matrix, `index k` of a vector.
fn position(header: &Header, k: usize) -> String {
    match header.shape[..] {
        [m, n] => {
            let (i, j) = if header.fortran_order {
                (k % m, k / m)
            } else {
                (k / n, k % n)
            };
            format!("row {i}, column {j}")
        }
        _ => format!("index {k}"),
    }
}

fn npy_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Npy {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

mod columns;
mod header;
mod write;

pub use columns::{create_preallocated, data_offset, ColumnFile};

#[cfg(test)]
use header::parse_header_dict;
use header::read_header_from;
// The distributed path (feature `mpi`) writes its own headers; tests check them.
#[allow(unused_imports)]
pub(crate) use write::preamble;
pub use write::{
    file_bytes, write_c_order_to, write_matrix, write_matrix_to, write_vector, write_vector_to,
};

// ---------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------

/// An `.npy` stream positioned at its first data byte, its header parsed and
/// its length checked against the header.
struct NpyReader<R> {
    path: PathBuf,
    header: Header,
    reader: R,
}

fn open(path: &Path) -> Result<NpyReader<BufReader<File>>> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let file_len = file.metadata().map_err(|e| io_err(path, e))?.len();
    NpyReader::new(path, BufReader::new(file), file_len)
}

impl<R: Read> NpyReader<R> {
    /// Parses the preamble of `reader`, a stream of `len` bytes in all, and
    /// checks that the data length is what the header says. `path` only names
    /// the source in errors (the tests feed in-memory bytes through here).
    fn new(path: &Path, mut reader: R, len: u64) -> Result<Self> {
        let header = read_header_from(path, &mut reader, len)?;
        let found = len.saturating_sub(header.data_offset);
        let expected = header.data_bytes();
        if found < expected {
            return Err(npy_err(
                path,
                format!(
                    "truncated data: shape {} of {} needs {expected} bytes, found {found}",
                    shape_str(&header.shape),
                    header.dtype
                ),
            ));
        }
        if found > expected {
            return Err(npy_err(
                path,
                format!(
                    "{} unexpected bytes after the data: shape {} of {} needs {expected} \
                     bytes, found {found}",
                    found - expected,
                    shape_str(&header.shape),
                    header.dtype
                ),
            ));
        }
        Ok(NpyReader {
            path: path.to_path_buf(),
            header,
            reader,
        })
    }

    /// Reads all `len` elements in file order, handing each (converted) to `sink`.
    ///
    /// A finite value that does not fit `T` (an f64 above `f32::MAX` read in
    /// f32) is an error naming its position: converted, it would turn into an
    /// infinity that the solver could only report as a non-finite input.
    fn for_each<T: Scalar>(mut self, mut sink: impl FnMut(T)) -> Result<()> {
        let size = self.header.dtype.size();
        let dtype = self.header.dtype;
        let mut left = self.header.len();
        let mut buf = vec![0u8; CHUNK_ELEMS.min(left.max(1)) * size];
        let mut done = 0u64;
        while left > 0 {
            let k = left.min(CHUNK_ELEMS);
            let bytes = &mut buf[..k * size];
            if let Err(e) = self.reader.read_exact(bytes) {
                return Err(if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    npy_err(
                        &self.path,
                        format!(
                            "truncated data: needs {} bytes, the file ended after about {done}",
                            self.header.data_bytes()
                        ),
                    )
                } else {
                    io_err(&self.path, e)
                });
            }
            for (k, chunk) in bytes.chunks_exact(size).enumerate() {
                let x = dtype.decode(chunk);
                let y = T::of(x);
                if !y.is_finite() && x.is_finite() {
                    let at = (done / size as u64) as usize + k;
                    return Err(npy_err(
                        &self.path,
                        format!(
                            "the entry at {} is {x:e}, out of {} range (largest finite {}); \
                             read it in f64 precision or rescale the data",
                            position(&self.header, at),
                            T::NAME,
                            T::max_value().f64()
                        ),
                    ));
                }
                sink(y);
            }
            left -= k;
            done += (k * size) as u64;
        }
        Ok(())
    }

    fn into_matrix<T: Scalar>(self) -> Result<Mat<T>> {
        let (m, n) = match self.header.shape[..] {
            [m, n] => (m, n),
            _ => {
                return Err(npy_err(
                    &self.path,
                    format!(
                        "expected a 2-D array (matrix), found shape {}",
                        shape_str(&self.header.shape)
                    ),
                ))
            }
        };
        if (m == 0 || n == 0) && m.max(n) > MAX_EMPTY_DIM {
            return Err(npy_err(
                &self.path,
                format!(
                    "shape {} is empty but has a dimension too large (above {MAX_EMPTY_DIM}); \
                     the file is probably corrupt",
                    shape_str(&self.header.shape)
                ),
            ));
        }
        let mut a = Mat::<T>::zeros(m, n);
        if m == 0 || n == 0 {
            return Ok(a);
        }
        let (mut i, mut j) = (0usize, 0usize);
        if self.header.fortran_order {
            self.for_each(|x: T| {
                a[(i, j)] = x;
                i += 1;
                if i == m {
                    i = 0;
                    j += 1;
                }
            })?;
        } else {
            self.for_each(|x: T| {
                a[(i, j)] = x;
                j += 1;
                if j == n {
                    j = 0;
                    i += 1;
                }
            })?;
        }
        Ok(a)
    }

    fn into_vector<T: Scalar>(self) -> Result<Vec<T>> {
        if self.header.shape.len() != 1 {
            return Err(npy_err(
                &self.path,
                format!(
                    "expected a 1-D array (vector), found shape {}",
                    shape_str(&self.header.shape)
                ),
            ));
        }
        let mut v = Vec::with_capacity(self.header.len());
        self.for_each(|x: T| v.push(x))?;
        Ok(v)
    }
}

/// Reads only the header of an `.npy` file (and checks the data length), so a
/// caller can check shape and memory before reading the data.
pub fn read_header(path: &Path) -> Result<Header> {
    open(path).map(|r| r.header)
}

/// Reads a 2-D `.npy` array (`f8`, `f4` or `f2`; C or Fortran order) as a matrix
/// of `T`, converting the element type if needed.
pub fn read_matrix<T: Scalar>(path: &Path) -> Result<Mat<T>> {
    open(path)?.into_matrix()
}

/// Like [`read_matrix`], but fails unless the matrix is square.
pub fn read_square_matrix<T: Scalar>(path: &Path) -> Result<Mat<T>> {
    let reader = open(path)?;
    if let [m, n] = reader.header.shape[..] {
        if m != n {
            return Err(npy_err(
                path,
                format!(
                    "expected a square matrix, found shape {}",
                    shape_str(&reader.header.shape)
                ),
            ));
        }
    }
    reader.into_matrix()
}

/// Streams a 2-D `.npy` file one storage lane at a time: `lane(k, values)`
/// gets row `k` of a C-order file, or column `k` of a Fortran-order one,
/// converted to `T` (as [`read_matrix`] converts), in order. Returns the
/// header. Holds one lane in memory, never the matrix.
pub fn for_each_lane<T: Scalar>(path: &Path, mut lane: impl FnMut(usize, &[T])) -> Result<Header> {
    let reader = open(path)?;
    let header = reader.header.clone();
    let len = match header.shape[..] {
        [m, n] => {
            if header.fortran_order {
                m
            } else {
                n
            }
        }
        _ => {
            return Err(npy_err(
                path,
                format!(
                    "expected a 2-D array (matrix), found shape {}",
                    shape_str(&header.shape)
                ),
            ))
        }
    };
    let mut buf = Vec::with_capacity(len);
    let mut k = 0;
    reader.for_each(|x: T| {
        buf.push(x);
        if buf.len() == len {
            lane(k, &buf);
            buf.clear();
            k += 1;
        }
    })?;
    Ok(header)
}

/// Reads an `.npy` array of any shape (`f8`, `f4` or `f2`) as its header and
/// its elements of `T` in file order (C or Fortran, as the header says).
pub fn read_array<T: Scalar>(path: &Path) -> Result<(Header, Vec<T>)> {
    let reader = open(path)?;
    let header = reader.header.clone();
    let mut v = Vec::with_capacity(header.len());
    reader.for_each(|x: T| v.push(x))?;
    Ok((header, v))
}

/// Reads a 1-D `.npy` array (`f8`, `f4` or `f2`) as a vector of `T`.
pub fn read_vector<T: Scalar>(path: &Path) -> Result<Vec<T>> {
    open(path)?.into_vector()
}

#[cfg(test)]
mod hostile;
#[cfg(test)]
mod tests;
