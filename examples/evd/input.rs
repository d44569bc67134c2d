//! The input of a run: its order from the file's header, the memory it needs
//! (checked before anything is allocated), and the matrix read or generated.

use super::{args, Args};
use eigenflow::gallery::Rng;
use eigenflow::matrix::npy;
use eigenflow::pipeline::evd::{memory_bytes, one_stage_memory_bytes};
use eigenflow::pipeline::{EvdJob, EvdOptions};
use eigenflow::results::InputFile;
use eigenflow::{Error, Result, Scalar};
use faer::Mat;
use std::path::Path;

/// The largest n (a multiple of 1024) whose run fits in `available` bytes.
pub fn largest_fitting<T: Scalar>(
    available: u64,
    job: EvdJob,
    opts: &EvdOptions,
    threads: usize,
) -> usize {
    args::largest_fitting(1 << 20, |n| {
        memory_bytes::<T>(n, job, opts, threads).is_some_and(|b| b <= available)
    })
}

/// Bytes the run needs (the copy kept for `--check` included), on the
/// one-stage path with `one_stage`, else on the task graph; fails if they
/// do not fit in the available memory or do not even fit in a `u64`.
pub fn check_memory<T: Scalar>(
    n: usize,
    job: EvdJob,
    check: bool,
    opts: &EvdOptions,
    threads: usize,
    limit: Option<u64>,
    one_stage: bool,
) -> Result<u64> {
    let what = match job {
        EvdJob::Values => "eigenvalues",
        EvdJob::Vectors => "eigenvalues and eigenvectors",
    };
    let problem = format!("the {n} x {n} {} problem ({what})", T::NAME);
    let suggestion = |avail: u64| {
        let f = |j| {
            (
                largest_fitting::<f64>(avail, j, opts, threads),
                largest_fitting::<f32>(avail, j, opts, threads),
            )
        };
        let (v64, v32) = f(EvdJob::Vectors);
        let (e64, e32) = f(EvdJob::Values);
        format!(
            "this machine fits --n {v64} (f64) or {v32} (f32) with vectors, \
             --n {e64} (f64) or {e32} (f32) with --values-only"
        )
    };
    args::check_run_memory(
        &problem,
        if one_stage {
            one_stage_memory_bytes::<T>(n, job, threads)
        } else {
            memory_bytes::<T>(n, job, opts, threads)
        },
        args::check_copy_bytes::<T>(n, n, check),
        limit,
        suggestion,
    )
}

/// The order of the square matrix in `path`, from its header alone (the data
/// length is checked too): the shape is checked before any memory figure.
pub fn square_order(path: &Path, header: &npy::Header) -> Result<usize> {
    match header.shape[..] {
        [m, n] if m == n => Ok(n),
        _ => {
            let dims: Vec<String> = header.shape.iter().map(|d| d.to_string()).collect();
            let shape = match dims.len() {
                1 => format!("({},)", dims[0]),
                _ => format!("({})", dims.join(", ")),
            };
            Err(Error::Npy {
                path: path.to_path_buf(),
                reason: format!("expected a square 2-D matrix, found shape {shape}"),
            })
        }
    }
}

/// The matrix of `--input` (checked unchanged since it was looked at) or of
/// `--seed`.
pub fn load_matrix<T: Scalar>(
    args: &Args,
    input: &Option<(InputFile, npy::Header)>,
    n: usize,
) -> Result<Mat<T>> {
    Ok(match input {
        Some((file, _)) => {
            let a = npy::read_square_matrix::<T>(&file.path)?;
            file.check_unchanged()?;
            a
        }
        None => random_symmetric(n, args.seed),
    })
}

pub fn random_symmetric<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    // Only the lower triangle is read; fill it in place (one n x n allocation).
    let mut a = Mat::<T>::zeros(n, n);
    random_lower_columns::<T>(n, seed, |j, col| {
        a.as_mut()
            .col_mut(j)
            .subrows_mut(j, n - j)
            .iter_mut()
            .zip(col)
            .for_each(|(x, &y)| *x = y)
    });
    a
}

/// The lower triangle of the matrix of `--seed`, column `j` from the
/// diagonal down handed to `f(j, column)` in order (what [`random_symmetric`]
/// stores, generated again for a check that must not hold the matrix).
pub fn random_lower_columns<T: Scalar>(n: usize, seed: u64, mut f: impl FnMut(usize, &[T])) {
    let mut rng = Rng::new(seed);
    let mut col = Vec::with_capacity(n);
    for j in 0..n {
        col.clear();
        col.extend((j..n).map(|_| T::of(rng.uniform_in(-1.0, 1.0))));
        f(j, &col);
    }
}
