//! What an EVD needs before anything is allocated: its task count and
//! memory, estimated in closed form, and the admission checks (a square input,
//! a selection that fits, a run that fits in memory) built on them.

use super::{select, EvdJob, EvdOptions};
use crate::linalg::tridiagonal::stedc::DcTree;
use crate::pipeline::task::{runtime_bytes, BYTES_PER_TASK};
use crate::{Error, Result, Scalar};

/// An upper estimate of the number of tasks of the EVD graph of order `n`
/// (closed form, so it costs nothing even for absurd `n`; saturating).
pub fn task_count(n: usize, job: EvdJob, opts: &EvdOptions) -> u64 {
    let b = opts.bandwidth_for(n, job) as u64;
    let nb = opts.tile_for(n, b as usize).max(1) as u64;
    let n64 = n as u64;
    let panels = n64 / b;
    let tiles = n64.div_ceil(nb);
    // Stage 1: per panel a QR, a SYMM per row block, form_w and the lower tiles.
    let stage1 = panels.saturating_mul(
        tiles
            .saturating_mul(tiles.saturating_add(1))
            .saturating_div(2)
            .saturating_add(tiles)
            .saturating_add(3),
    );
    // Stage 2: about n sweeps of n / b steps, grouped G x C (each group of G
    // sweeps has its steps skewed by 3 per sweep).
    let steps = n64 / b + 2;
    let stage2 = if opts.fine_stage2 {
        n64.saturating_mul(steps)
    } else {
        let (g, c) = (
            opts.sweep_group.max(1) as u64,
            opts.step_chunk.max(1) as u64,
        );
        (n64 / g + 1).saturating_mul((steps + 3 * g) / c + 1)
    };
    let rest = match (job, &opts.selection) {
        // dsterf's one task, or the values-only D&C's four.
        (EvdJob::Values, None) => 4,
        (_, Some(sel)) => select::task_estimate(n, job, opts, sel),
        (EvdJob::Vectors, None) => {
            let leaves = n64.div_ceil(opts.leaf_size.max(1) as u64);
            let col = opts.col_block_for(n).max(1) as u64;
            // Per merge: deflate, up to 8 roots, order, up to 8 lowner, free and
            // its apply tiles.
            leaves
                .saturating_mul(20)
                .saturating_add(n64.div_ceil(opts.dc_tile.max(1) as u64).saturating_mul(24))
                .saturating_add(n64.div_ceil(col).saturating_mul(2))
        }
    };
    stage1
        .saturating_add(stage2)
        .saturating_add(rest)
        .saturating_add(2)
}

/// Bytes the EVD of order `n` allocates (the working matrix and the graph's
/// bookkeeping included) on `threads` worker threads, for checking that a run
/// fits before starting it; `None` if the figure overflows `u64` (it fits
/// nowhere). Each thread may hold one back-transformation workspace at a time.
///
/// ```
/// use eigenflow::pipeline::evd::{memory_bytes, EvdJob};
/// use eigenflow::pipeline::EvdOptions;
/// let opts = EvdOptions::auto();
/// assert!(memory_bytes::<f64>(1000, EvdJob::Vectors, &opts, 2).is_some());
/// assert_eq!(memory_bytes::<f64>(1 << 61, EvdJob::Values, &opts, 2), None);
/// let mut huge_group = EvdOptions::auto();
/// huge_group.q2_group = usize::MAX;
/// assert_eq!(memory_bytes::<f64>(1000, EvdJob::Vectors, &huge_group, 2), None);
/// ```
pub fn memory_bytes<T: Scalar>(
    n: usize,
    job: EvdJob,
    opts: &EvdOptions,
    threads: usize,
) -> Option<u64> {
    let b = opts.bandwidth_for(n, job) as u64;
    let n64 = n as u64;
    let nn = n64.checked_mul(n64)?;
    let nb = n64.checked_mul(b)?;
    let mut words = [
        nn,                  // the working matrix
        nb.checked_mul(4)?,  // V and X workspaces, two of each
        nb,                  // T factors
        nb.checked_mul(2)?,  // band with bulge room
        n64.checked_mul(2)?, // tridiagonal
    ]
    .into_iter()
    .try_fold(0u64, u64::checked_add)?;
    if let (Some(sel), EvdJob::Vectors) = (&opts.selection, job) {
        words = words.checked_add(select::vector_words(n, b as usize, opts, threads, sel)?)?;
    } else if job == EvdJob::Vectors {
        let col = opts.col_block_for(n).min(n);
        let group = opts.q2_group.max(1);
        // `workspace_len` computes in `usize` without checks: make sure an
        // upper bound of each of its terms fits first (`transposed_ld(kc) <=
        // kc + 24`).
        let b = b as usize;
        [
            col.checked_add(24)?.checked_mul(n)?,
            b.checked_add(group)?.checked_mul(group)?,
            group.checked_mul(group)?,
            col.checked_mul(group)?.checked_mul(2)?,
        ]
        .into_iter()
        .try_fold(0usize, usize::checked_add)?;
        let q2_work = crate::linalg::back_transform::q2::workspace_len(n, b, group, col) as u64;
        // Each worker runs one task at a time, but its allocator keeps what a
        // task freed for the next of the same size: count per worker one merge
        // apply task (the tile's product, `n x tile`, and the rank-one problem's
        // eigenvectors, `k x tile` with `k <= n`), one Q2 task and one Q1 task
        // (`b x col`). Measured at n = 2000 to 6144 on 2 threads, leaving out
        // the Q2 task put the peak up to 5% above the figure.
        let merge_tile = n64.checked_mul(opts.dc_tile.clamp(1, n.max(1)) as u64)?;
        let per_thread = merge_tile
            .checked_mul(2)?
            .checked_add(q2_work)?
            .checked_add((b as u64).checked_mul(col as u64)?)?;
        words = [
            words,
            nn,                        // eigenvectors
            (nn / 2).checked_add(nb)?, // stage-2 reflectors
            // The merges' copies of eigenvector halves: one buffer of
            // `n * DcTree::merge_words_per_row()` words (`linalg::tridiagonal::stedc::merge`).
            n64.checked_mul(DcTree::merge_words_per_row(n, opts.leaf_size) as u64)?,
            (threads.max(1) as u64).checked_mul(per_thread)?,
        ]
        .into_iter()
        .try_fold(0u64, u64::checked_add)?;
    }
    let bytes = words.checked_mul(std::mem::size_of::<T>() as u64)?;
    bytes
        .checked_add(task_count(n, job, opts).checked_mul(BYTES_PER_TASK)?)?
        .checked_add(runtime_bytes(threads)?)
}

/// Refuses, with [`Error::OutOfMemory`], an EVD that does not fit in the memory
/// available (the smaller of the machine's and the cgroup limit), before anything
/// is allocated. `owned` says whether the working matrix already exists.
fn check_memory<T: Scalar>(
    n: usize,
    job: EvdJob,
    opts: &EvdOptions,
    threads: usize,
    owned: bool,
) -> Result<()> {
    let needed = memory_bytes::<T>(n, job, opts, threads).ok_or_else(|| Error::OutOfMemory {
        needed_gib: f64::INFINITY,
        available_gib: crate::sysinfo::available_memory_bytes().unwrap_or(0) as f64
            / (1u64 << 30) as f64,
        suggestion: format!("the memory figure for n = {n} overflows 64 bits"),
    })?;
    let already = if owned {
        (n as u64)
            .saturating_mul(n as u64)
            .saturating_mul(std::mem::size_of::<T>() as u64)
    } else {
        0
    };
    let what = format!(
        "the {n} x {n} {} eigendecomposition",
        std::any::type_name::<T>()
    );
    crate::sysinfo::check_fits(needed.saturating_sub(already), &what, |avail| {
        format!(
            "with these options n <= {} fits",
            largest_fitting::<T>(avail, job, opts, threads)
        )
    })
}

/// The largest order whose EVD fits in `bytes` (see [`memory_bytes`]).
pub fn largest_fitting<T: Scalar>(
    bytes: u64,
    job: EvdJob,
    opts: &EvdOptions,
    threads: usize,
) -> usize {
    crate::sysinfo::largest_fitting_order((1usize << 32) - 1, |n| {
        memory_bytes::<T>(n, job, opts, threads).is_some_and(|m| m <= bytes)
    })
}

/// The checks before anything is allocated: a square input, and a run that
/// fits in memory on `threads` workers (the machine's cores when not known).
pub(super) fn admit<T: Scalar>(
    m: usize,
    n: usize,
    job: EvdJob,
    opts: &EvdOptions,
    threads: Option<usize>,
    owned: bool,
) -> Result<()> {
    check_square(m, n)?;
    check_selection(n, opts)?;
    let threads = threads.unwrap_or_else(crate::sysinfo::default_threads);
    check_memory::<T>(n, job, opts, threads, owned)
}

/// [`Error::InvalidArgument`] for a selection that does not fit order `n`.
pub(super) fn check_selection(n: usize, opts: &EvdOptions) -> Result<()> {
    match &opts.selection {
        Some(sel) => sel.indices(n).map(|_| ()),
        None => Ok(()),
    }
}

pub(super) fn check_square(m: usize, n: usize) -> Result<()> {
    if m == n {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "symmetric eigendecomposition needs a square matrix, got {m} x {n}"
        )))
    }
}
