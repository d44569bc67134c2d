//! What an SVD run needs in memory, checked before anything is allocated.

use super::{SvdJob, SvdOptions};
use crate::linalg::band::gb2bd::{schedule, storage_offsets, Pass};
use crate::linalg::bidiagonal::bdsdc::BdTree;
use crate::pipeline::ChaseGrain;
use crate::{Error, Result, Scalar};

use crate::pipeline::task::{runtime_bytes, BYTES_PER_TASK};

/// An upper estimate of the number of tasks of the SVD graph of an `m x n`
/// matrix (either shape; saturating, so it costs nothing even for absurd
/// sizes): per ge2gb step a panel, a `W` task per block and a task per tile,
/// for both the QR and the LQ half; per gb2bd pass about `n` sweeps of
/// `n / b_p + 1` steps, at the fine grain one task each, grouped into
/// super-tasks of `sweep_group` sweeps by `step_chunk` skewed steps otherwise;
/// with vectors, the divide-and-conquer tree (a leaf per 16 columns at most,
/// each merge with its root, z-hat, tile and bookkeeping tasks) and four
/// back-transformations of `n / 64 + 1` column blocks each.
pub fn task_count<T: Scalar>(m: usize, n: usize, job: SvdJob, opts: &SvdOptions) -> u64 {
    let (m, n) = (m.max(n), m.min(n));
    let b = opts.bandwidth_for(n);
    let nb = opts.tile_for(n, b) as u64;
    let (m64, n64) = (m as u64, n as u64);
    let (rt, ct) = (m64.div_ceil(nb) + 1, n64.div_ceil(nb) + 1);
    let per_step = rt
        .saturating_add(1)
        .saturating_mul(ct + 1)
        .saturating_mul(2)
        + 3;
    let stage1 = n64.div_ceil(b as u64).saturating_mul(per_step);
    let grain = opts.grain();
    let stage2 = schedule(b, opts.tile_width_for::<T>(b, job))
        .iter()
        .map(|p| {
            let steps = n64 / p.b as u64 + 1;
            match grain {
                ChaseGrain::Fine => n64.saturating_mul(steps),
                ChaseGrain::Grouped { sweeps, steps: c } => {
                    // As the EVD's sb2st: a group spans its first sweep's
                    // steps plus the lag of its last sweep.
                    let (g, c) = (sweeps.max(1) as u64, c.max(1) as u64);
                    (n64 / g + 1).saturating_mul((steps + 3 * g) / c + 1)
                }
            }
        })
        .fold(0u64, u64::saturating_add);
    let vectors = match job {
        SvdJob::Values => 0,
        SvdJob::Vectors => (n64 / 16 + 1)
            .saturating_mul(24)
            .saturating_add((n64 / 64 + 1).saturating_mul(4)),
    };
    stage1
        .saturating_add(stage2)
        .saturating_add(vectors)
        .saturating_add(2)
}

/// Words of the stage-2 reflectors of `passes` on an order-`n` band: per chase
/// task two reflectors of `d + 1` entries; a pass has `S = n - 1 - b'` sweeps
/// of at most `(n - 2 - r - b') / b + 1` steps, so at most
/// `S + S (S - 1) / (2 b)` tasks (closed form: no loop over the sweeps).
fn reflector_words(n: u64, passes: &[Pass]) -> Option<u64> {
    passes.iter().try_fold(0u64, |acc, p| {
        let s = n.saturating_sub(1 + p.b_new as u64);
        let tasks = s.checked_add(s.checked_mul(s.saturating_sub(1))? / (2 * p.b as u64))?;
        acc.checked_add(tasks.checked_mul(2 * (p.d() as u64 + 1))?)
    })
}

/// Bytes the SVD of an `m x n` matrix allocates for `job` on `threads` worker
/// threads (the working copy and the graph's bookkeeping included); `None` if
/// the figure overflows `u64` (it fits nowhere).
///
/// ```
/// use eigenflow::pipeline::svd::memory_bytes;
/// use eigenflow::pipeline::{SvdJob, SvdOptions};
/// let opts = SvdOptions::auto();
/// let values = memory_bytes::<f64>(3000, 1000, SvdJob::Values, &opts, 2).unwrap();
/// let vectors = memory_bytes::<f64>(3000, 1000, SvdJob::Vectors, &opts, 2).unwrap();
/// assert!(vectors > values);
/// assert_eq!(memory_bytes::<f64>(1 << 40, 1 << 40, SvdJob::Values, &opts, 2), None);
/// ```
pub fn memory_bytes<T: Scalar>(
    m: usize,
    n: usize,
    job: SvdJob,
    opts: &SvdOptions,
    threads: usize,
) -> Option<u64> {
    let (m, n) = (m.max(n), m.min(n));
    let b = opts.bandwidth_for(n);
    let passes = schedule(b, opts.tile_width_for::<T>(b, job));
    let (ku, kl) = storage_offsets(b, &passes);
    let (m64, n64, b64) = (m as u64, n as u64, b as u64);
    let words = [
        m64.checked_mul(n64)?,                  // the working copy
        m64.checked_mul(b64)?.checked_mul(4)?,  // V and W of the QR half, two of each
        n64.checked_mul(b64)?.checked_mul(6)?,  // V and W of the LQ half, T factors
        n64.checked_mul((ku + kl + 1) as u64)?, // band storage with bulge room
        n64.checked_mul(6)?,                    // the bidiagonal and the dqds qd array
    ]
    .into_iter()
    .try_fold(0u64, u64::checked_add)?;
    // The QR pre-reduction (geqrf.rs) adds R and the workspaces of the
    // ge2gb on it.
    let words = if super::geqrf::use_qr(m, n, opts.qr_ratio_for(job)) {
        words
            .checked_add(n64.checked_mul(n64)?)?
            .checked_add(n64.checked_mul(b64)?.checked_mul(6)?)?
    } else {
        words
    };
    let words = match job {
        SvdJob::Values => words,
        SvdJob::Vectors => {
            let nn = n64.checked_mul(n64)?;
            let refl = reflector_words(n64, &passes)?;
            // The divide and conquer: U_bd and V_bd, the merges' shared
            // workspace (`BdTree::merge_words_per_row`) and per worker one
            // apply task's products (`n x tile` for U and for V) and
            // coefficients (two `k x tile`, `k <= n`).
            let w = BdTree::merge_words_per_row(n, opts.leaf_size) as u64;
            let tile = opts.dc_tile.clamp(1, n.max(1)) as u64;
            // Per worker too (its allocator keeps what a task freed for the
            // next of the same size): a back-transformation task's transposed
            // copy of its column block and its block reflector workspace.
            let col = opts.col_block_for(n).min(n.max(1));
            let back = (crate::linalg::back_transform::chain::transposed_ld(col) as u64)
                .checked_mul(n64)?
                .checked_add(((opts.q2_group.max(1) + b) as u64).checked_mul(col as u64 * 2)?)?;
            let dc = [
                nn.checked_mul(2)?,
                n64.checked_add(1)?.checked_mul(w)?,
                (threads.max(1) as u64)
                    .checked_mul(n64.checked_mul(tile)?.checked_mul(4)?.checked_add(back)?)?,
            ]
            .into_iter()
            .try_fold(0u64, u64::checked_add)?;
            // A selection of k triplets (select.rs): the 2n x k eigenvectors
            // of T_GK, U_bd and V_bd, and k columns out instead of n.
            let sel = opts
                .selection
                .as_ref()
                .map(|s| s.indices(n).map_or(n, |r| r.len()));
            let (bd, k) = match sel {
                Some(k) => (n64.checked_mul(k as u64)?.checked_mul(4)?, k as u64),
                None => (dc, n64),
            };
            // The back-transformations work in place on U_bd and V_bd, except
            // that a tall U gets its own m x k buffer.
            let u_out = if m == n { 0 } else { m64.checked_mul(k)? };
            let run = [words, refl, bd, u_out]
                .into_iter()
                .try_fold(0u64, u64::checked_add)?;
            // After the run (the graph and its stores dropped): U, V and the
            // transposed copy returned as V^T.
            let results = m64.checked_add(n64.checked_mul(2)?)?.checked_mul(k)?;
            run.max(results)
        }
    };
    let bytes = words.checked_mul(std::mem::size_of::<T>() as u64)?;
    bytes
        .checked_add(task_count::<T>(m, n, job, opts).checked_mul(BYTES_PER_TASK)?)?
        .checked_add(runtime_bytes(threads)?)
}

/// Refuses, with [`Error::OutOfMemory`], an SVD that does not fit in the
/// memory available (the smaller of the machine's and the cgroup limit),
/// before anything is allocated.
pub(super) fn admit<T: Scalar>(m: usize, n: usize, job: SvdJob, opts: &SvdOptions) -> Result<()> {
    // The graph may run on any runtime: assume the default one's threads.
    let threads = crate::sysinfo::default_threads();
    let needed = memory_bytes::<T>(m, n, job, opts, threads).ok_or_else(|| Error::OutOfMemory {
        needed_gib: f64::INFINITY,
        available_gib: crate::sysinfo::available_memory_bytes().unwrap_or(0) as f64
            / (1u64 << 30) as f64,
        suggestion: format!("the memory figure for {m} x {n} overflows 64 bits"),
    })?;
    crate::sysinfo::check_fits(needed, &describe::<T>(m, n, job), |_| String::new())
}

/// What an SVD computes, for the messages of a refusal: "the singular values
/// of a 300 x 200 f64 matrix".
pub(super) fn describe<T>(m: usize, n: usize, job: SvdJob) -> String {
    format!(
        "the {} of a {m} x {n} {} matrix",
        match job {
            SvdJob::Values => "singular values",
            SvdJob::Vectors => "SVD with vectors",
        },
        std::any::type_name::<T>()
    )
}
