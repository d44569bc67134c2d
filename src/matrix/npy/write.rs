//! Writing `.npy` files (version 1.0, Fortran order).

use super::{io_err, shape_str, Dtype, MAGIC};
use crate::{Result, Scalar};
use faer::MatRef;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Builds a version 1.0 preamble (magic, version, length, padded header).
pub(crate) fn preamble(dtype: Dtype, fortran_order: bool, shape: &[usize]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
        dtype.descr(),
        if fortran_order { "True" } else { "False" },
        shape_str(shape)
    );
    // Pad with spaces and a final newline so the data start 64-byte aligned.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let header_len = total - MAGIC.len() - 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes the elements of an array of `shape`, given in Fortran order.
fn write_array<T: Scalar>(
    path: &Path,
    shape: &[usize],
    elems: impl Iterator<Item = T>,
) -> Result<()> {
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let io = |e| io_err(path, e);
    write_array_to(&mut w, shape, elems).map_err(io)?;
    w.flush().map_err(io)?;
    Ok(())
}

/// Writes the preamble and the elements (in Fortran order) of an array of
/// `shape` to `w` (unbuffered: wrap `w` in a `BufWriter` if it is a file).
fn write_array_to<T: Scalar>(
    w: &mut impl Write,
    shape: &[usize],
    elems: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    // Like NumPy, say C order when the two orders coincide (at most one
    // dimension longer than 1): the bytes are the same and so is the file.
    let fortran_order = shape.iter().filter(|&&d| d > 1).count() > 1;
    let dtype = Dtype::of::<T>();
    w.write_all(&preamble(dtype, fortran_order, shape))?;
    for x in elems {
        match dtype {
            Dtype::F64 => w.write_all(&x.f64().to_le_bytes()),
            // Exact: `x` is an f32 already.
            _ => w.write_all(&(x.f64() as f32).to_le_bytes()),
        }?;
    }
    Ok(())
}

/// The size in bytes of the `.npy` file [`write_matrix`] or [`write_vector`]
/// writes for an array of `shape` and element type `T` (for free-space checks
/// before writing).
pub fn file_bytes<T: Scalar>(shape: &[usize]) -> u64 {
    let fortran_order = shape.iter().filter(|&&d| d > 1).count() > 1;
    let elems = shape.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
    (preamble(Dtype::of::<T>(), fortran_order, shape).len() as u64)
        .saturating_add(elems.saturating_mul(std::mem::size_of::<T>() as u64))
}

/// Like [`write_matrix`], into any writer (the bytes are the same); used by
/// [`crate::results`] to write through a checksum into a temporary file.
pub fn write_matrix_to<T: Scalar>(w: &mut impl Write, a: MatRef<'_, T>) -> std::io::Result<()> {
    let (m, n) = a.shape();
    let elems = (0..n).flat_map(move |j| (0..m).map(move |i| a[(i, j)]));
    write_array_to(w, &[m, n], elems)
}

/// Writes an array of any `shape` in C order (last index fastest; the
/// elements given in that order) to any writer, as `numpy.save` writes a
/// C-contiguous array (batches of matrices for the batched SVD).
pub fn write_c_order_to<T: Scalar>(
    w: &mut impl Write,
    shape: &[usize],
    elems: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    let dtype = Dtype::of::<T>();
    w.write_all(&preamble(dtype, false, shape))?;
    for x in elems {
        match dtype {
            Dtype::F64 => w.write_all(&x.f64().to_le_bytes()),
            _ => w.write_all(&(x.f64() as f32).to_le_bytes()),
        }?;
    }
    Ok(())
}

/// Like [`write_vector`], into any writer (the bytes are the same).
pub fn write_vector_to<T: Scalar>(w: &mut impl Write, v: &[T]) -> std::io::Result<()> {
    write_array_to(w, &[v.len()], v.iter().copied())
}

/// Writes a matrix as a version 1.0 `.npy` file in Fortran order, with dtype
/// `'<f8'` for `f64` and `'<f4'` for `f32`. The file is byte-for-byte what
/// `numpy.save` writes for the same Fortran-ordered array (for a single row or
/// column, where C and Fortran order coincide, the header says C order, as
/// NumPy's does).
pub fn write_matrix<T: Scalar>(path: &Path, a: MatRef<'_, T>) -> Result<()> {
    let (m, n) = a.shape();
    let elems = (0..n).flat_map(move |j| (0..m).map(move |i| a[(i, j)]));
    write_array(path, &[m, n], elems)
}

/// Writes a vector as a version 1.0 1-D `.npy` file, with dtype `'<f8'` for
/// `f64` and `'<f4'` for `f32`.
pub fn write_vector<T: Scalar>(path: &Path, v: &[T]) -> Result<()> {
    write_array(path, &[v.len()], v.iter().copied())
}
