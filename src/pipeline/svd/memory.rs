//! What an SVD run needs in memory, checked before anything is allocated.

use super::{SvdJob, SvdOptions};
use crate::linalg::gb2bd::{schedule, storage_offsets};
use crate::{Error, Result, Scalar};

/// Bytes of graph bookkeeping per task: the task and its footprint, its edges,
/// the runtime's plan and per-task record (the EVD's generous average).
const BYTES_PER_TASK: u64 = 640;

/// An upper estimate of the number of tasks of the SVD graph of an `m x n`
/// matrix (either shape; saturating, so it costs nothing even for absurd
/// sizes): per ge2gb step a panel, a `W` task per block and a task per tile,
/// for both the QR and the LQ half; per gb2bd pass about `n` sweeps of
/// `n / b_p + 1` steps; with vectors, the divide-and-conquer tree (a leaf per
/// 16 columns at most, each merge with its root, tile and bookkeeping tasks)
/// and four back-transformations of `n / 64 + 1` column blocks each.
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
    let stage2 = schedule(b, opts.tile_width_for::<T>(b))
        .iter()
        .map(|p| n64.saturating_mul(n64 / p.b as u64 + 1))
        .fold(0u64, u64::saturating_add);
    let vectors = match job {
        SvdJob::Values => 0,
        SvdJob::Vectors => (n64 / 16 + 1)
            .saturating_mul(16)
            .saturating_add((n64 / 64 + 1).saturating_mul(4)),
    };
    stage1
        .saturating_add(stage2)
        .saturating_add(vectors)
        .saturating_add(2)
}

/// Bytes the SVD of an `m x n` matrix allocates for `job` (the working copy
/// and the graph's bookkeeping included); `None` if the figure overflows `u64`
/// (it fits nowhere).
///
/// ```
/// use eigenflow::pipeline::svd::memory_bytes;
/// use eigenflow::pipeline::{SvdJob, SvdOptions};
/// let opts = SvdOptions::auto();
/// let values = memory_bytes::<f64>(3000, 1000, SvdJob::Values, &opts).unwrap();
/// let vectors = memory_bytes::<f64>(3000, 1000, SvdJob::Vectors, &opts).unwrap();
/// assert!(vectors > values);
/// assert_eq!(memory_bytes::<f64>(1 << 40, 1 << 40, SvdJob::Values, &opts), None);
/// ```
pub fn memory_bytes<T: Scalar>(m: usize, n: usize, job: SvdJob, opts: &SvdOptions) -> Option<u64> {
    let (m, n) = (m.max(n), m.min(n));
    let b = opts.bandwidth_for(n);
    let passes = schedule(b, opts.tile_width_for::<T>(b));
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
            // Reflectors of each pass: two slots of d + 1 per task, at most
            // n (n / b_p + 1) tasks.
            let refl = passes.iter().try_fold(0u64, |acc, p| {
                let tasks = n64.checked_mul(n64 / p.b as u64 + 1)?;
                acc.checked_add(tasks.checked_mul(2 * (p.d() as u64 + 1))?)
            })?;
            // A selection of k triplets (select.rs): the 2n x k eigenvectors
            // of T_GK, U_bd and V_bd, and k columns out instead of n.
            let sel = opts
                .selection
                .as_ref()
                .map(|s| s.indices(n).map_or(n, |r| r.len()));
            let (bd, k) = match sel {
                Some(k) => (n64.checked_mul(k as u64)?.checked_mul(4)?, k as u64),
                None => (nn.checked_mul(5)?, n64),
            };
            [
                words,
                refl,
                bd, // U_bd, V_bd and the root merge's workspace (or T_GK's vectors)
                m64.checked_mul(k)?.checked_mul(2)?, // thin U and its copy out
                n64.checked_mul(k)?.checked_mul(2)?, // V^T out, and the copy of a wide input's factor
            ]
            .into_iter()
            .try_fold(0u64, u64::checked_add)?
        }
    };
    let bytes = words.checked_mul(std::mem::size_of::<T>() as u64)?;
    bytes.checked_add(task_count::<T>(m, n, job, opts).checked_mul(BYTES_PER_TASK)?)
}

/// Refuses, with [`Error::OutOfMemory`], an SVD that does not fit in the
/// memory available (the smaller of the machine's and the cgroup limit),
/// before anything is allocated.
pub(super) fn admit<T: Scalar>(m: usize, n: usize, job: SvdJob, opts: &SvdOptions) -> Result<()> {
    let needed = memory_bytes::<T>(m, n, job, opts).ok_or_else(|| Error::OutOfMemory {
        needed_gib: f64::INFINITY,
        available_gib: crate::sysinfo::available_memory_bytes().unwrap_or(0) as f64
            / (1u64 << 30) as f64,
        suggestion: format!("the memory figure for {m} x {n} overflows 64 bits"),
    })?;
    let what = format!(
        "the {} of a {m} x {n} {} matrix",
        match job {
            SvdJob::Values => "singular values",
            SvdJob::Vectors => "SVD with vectors",
        },
        std::any::type_name::<T>()
    );
    crate::sysinfo::check_fits(needed, &what, |_| String::new())
}
