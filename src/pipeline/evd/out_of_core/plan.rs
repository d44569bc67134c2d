//! The memory plan of an eigendecomposition with vectors: in memory when the
//! in-memory graph fits under the limit, otherwise out of core with its
//! resident memory, scratch and output figured before anything is allocated,
//! or refused with the figures and what would make it fit.

use super::super::{memory_bytes, task_count, EvdJob};
use crate::linalg::back_transform::q2;
use crate::linalg::band::sb2st::ReflectorLayout;
use crate::linalg::band::sy2sb::{panel_count, panel_rows};
use crate::linalg::tridiagonal::stedc::merge::APPLY_CHUNK;
use crate::pipeline::task::{runtime_bytes, BYTES_PER_TASK};
use crate::pipeline::EvdOptions;
use crate::sysinfo::human_bytes;
use crate::{Error, Result, Scalar};
use std::path::PathBuf;

/// Where and within what an out-of-core run may work.
#[derive(Clone, Debug)]
pub struct OutOfCore {
    /// Resident memory the whole process may use, in bytes.
    pub memory_limit: u64,
    /// Directory of the scratch files (created there without names, so a
    /// killed run leaves nothing behind).
    pub scratch: PathBuf,
    /// The runtime's stream lane that runs the reads and writes.
    pub io_lane: usize,
}

/// The space the files of a run may take.
#[derive(Clone, Copy, Debug)]
pub struct DiskSpace {
    /// Bytes free for the scratch files.
    pub scratch_free: u64,
    /// Bytes free for the output, when the output goes elsewhere; `None`
    /// when the output shares the scratch's file system (or there is none).
    pub output_free: Option<u64>,
    /// Bytes of output the run writes (the eigenvectors file, the values, a
    /// manifest; 0 when nothing is kept).
    pub output_bytes: u64,
}

/// An out-of-core run, as planned (the resident memory of its phases is
/// figured as [`plan()`] documents).
#[derive(Clone, Debug, PartialEq)]
pub struct OocPlan {
    /// Order of the matrix.
    pub n: usize,
    /// Worker threads the figures allow for.
    pub threads: usize,
    /// Output columns per pass.
    pub wide: usize,
    /// Sweep groups of the Q2 reflectors read per chunk.
    pub q2_groups: usize,
    /// Stage-1 panels read per Q1 chunk.
    pub q1_panels: usize,
    /// Stage 2 starts only once stage 1's matrix is freed.
    pub stage2_after_stage1: bool,
    /// The divide and conquer starts only once the stage-2 reflectors are
    /// freed.
    pub dc_after_stage2: bool,
    /// Peak resident bytes of each phase (stage 1, stage 2, D&C, root
    /// deflation, passes), the process's own baseline included.
    pub phases: [u64; 5],
    /// Scratch bytes, at most (the deflated vectors of the root counted as if
    /// all of them deflated).
    pub scratch_bytes: u64,
    /// Bytes of output.
    pub output_bytes: u64,
}

impl OocPlan {
    /// The largest resident figure of the phases.
    pub fn resident_bytes(&self) -> u64 {
        self.phases.iter().copied().max().unwrap_or(0)
    }

    /// One line for the user: the resident, scratch and output figures.
    pub fn describe(&self) -> String {
        format!(
            "out of core: {} resident at most, {} of scratch at most, {} of output; \
             {} pass(es) of {} columns",
            human_bytes(self.resident_bytes()),
            human_bytes(self.scratch_bytes),
            human_bytes(self.output_bytes),
            self.n.div_ceil(self.wide.max(1)),
            self.wide
        )
    }
}

/// How an eigendecomposition with vectors will run.
#[derive(Clone, Debug, PartialEq)]
pub enum MemoryPlan {
    /// The in-memory graph fits: it needs this many bytes (the baseline
    /// included).
    InMemory(u64),
    /// It does not; this out-of-core plan does.
    OutOfCore(OocPlan),
}

/// Words per element group, the figures' unit.
fn words_bytes<T>(words: u64) -> u64 {
    words.saturating_mul(std::mem::size_of::<T>() as u64)
}

/// The column unit of the passes: a multiple of the back-transformation's
/// column block and of the merge's column tile.
pub(super) fn pass_unit(n: usize, opts: &EvdOptions) -> usize {
    let col = opts.col_block_for(n).max(1);
    let tile = opts.dc_tile.max(1);
    lcm(col, tile).min(n.max(1))
}

fn lcm(a: usize, b: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    a / gcd(a, b) * b
}

/// Words of the stage-1 reflectors on disk: `V_p`, `(n - (p + 1) b) x b`, per
/// panel.
pub(super) fn q1_words(n: usize, b: usize) -> u64 {
    (0..panel_count(n, b))
        .map(|p| ((n - panel_rows(n, b, p).start) * b) as u64)
        .sum()
}

/// Words of the largest chunk of `k` sweep groups of `group` sweeps (the
/// first: earlier sweeps have more steps).
pub(super) fn q2_chunk_words(layout: &ReflectorLayout, group: usize, k: usize) -> u64 {
    let ns = crate::linalg::band::sb2st::num_sweeps(layout.n());
    layout.sweeps(0..k.saturating_mul(group).min(ns)).len() as u64
}

/// Words of the largest chunk of `k` stage-1 panels (the first).
pub(super) fn q1_chunk_words(n: usize, b: usize, k: usize) -> u64 {
    let np = panel_count(n, b);
    *crate::linalg::back_transform::q1::panel_offsets(n, b, 0..k.min(np))
        .last()
        .expect("at least 0") as u64
}

/// The largest `k >= 1` with `words(k) <= budget` (`words` nondecreasing),
/// 1 when none fits; at most `2^20`.
fn most_fitting(budget: u64, words: impl Fn(usize) -> u64) -> usize {
    let (mut lo, mut hi) = (1usize, 1usize << 20);
    if words(lo) > budget {
        return 1;
    }
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if words(mid) <= budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Tasks of the out-of-core graph, at most (for the bookkeeping figure).
fn ooc_tasks(n: usize, opts: &EvdOptions, wide: usize, q2c: u64, q1c: u64) -> u64 {
    let col = opts.col_block_for(n).max(1) as u64;
    let passes = n.div_ceil(wide.max(1)) as u64;
    let per_pass = (wide as u64).div_ceil(col).saturating_mul(q2c + q1c) + q2c + q1c + 4;
    task_count(n, EvdJob::Vectors, opts)
        .saturating_add(passes.saturating_mul(per_pass))
        .saturating_add(q2c + (panel_count(n, opts.bandwidth_for(n, EvdJob::Vectors)) as u64))
}

/// Plans the eigendecomposition with vectors of order `n` on `threads`
/// workers under `limit` bytes of resident memory (the whole process:
/// `baseline` is what it holds already; `extra_in_memory` what the in-memory
/// run would hold besides, e.g. a copy of the matrix kept for a check), with
/// the files in `disk`.
///
/// # The resident memory out of core, phase by phase (words of `T`)
///
/// With `N = n^2`, `b` the bandwidth, `n1 = floor(n / 2)`, `n2 = n - n1` (the
/// halves of the root merge) and `h = max(n1, n2)`:
///
/// | phase | what is resident |
/// |---|---|
/// | stage 1 (sy2sb) | the matrix `N`, its workspaces `5 n b`, the band `2 n b`; with stage 2 overlapped also the stage-2 reflectors `~N / 2` |
/// | stage 2 (sb2st) | the band, the stage-2 reflectors `~N / 2`; with the divide and conquer overlapped also its children |
/// | D&C below the root | the children's vectors `n1^2 + n2^2 ~ N / 2`, their merges' workspace `n ceil(h / 2) ~ N / 4`, per thread a merge tile |
/// | root deflation | the children, the root's workspace `<= h n ~ N / 2` |
/// | passes | the root's workspace, one block of `W` output columns `n W`, each chain of reflectors (Q2, Q1) whole (`~N / 2`, read once) or in two chunk buffers, per thread a Q2 workspace and a merge tile |
///
/// The matrix is freed once stage 1 and its spill are done, the stage-2
/// reflectors once they are on disk (always before the root deflation), the
/// children once the root has deflated. The plan overlaps stage 2 with stage 1,
/// and the divide and conquer with stage 2, only where the sums fit. For the
/// passes it holds the reflector chains whole where that still leaves a pass
/// with a column block for every worker (Q2 first: a chunked Q2 transposes
/// each column block once per chunk), and takes `W` as large as the limit
/// allows, in whole rounds of column blocks for the workers (a multiple of
/// the back-transformation's column block and of the merge's column tile, so
/// every task is the one the in-memory graph runs and the bits are the same).
///
/// Errors: [`Error::OutOfMemory`] when neither plan fits in memory, or the
/// out-of-core one not on disk, with the figures and what would make it fit;
/// [`Error::InvalidArgument`] when the figures overflow 64 bits.
pub fn plan<T: Scalar>(
    n: usize,
    opts: &EvdOptions,
    threads: usize,
    limit: u64,
    baseline: u64,
    extra_in_memory: u64,
    disk: DiskSpace,
) -> Result<MemoryPlan> {
    let threads = threads.max(1);
    let what = format!("the {n} x {n} {} eigendecomposition with vectors", T::NAME);
    let in_memory = memory_bytes::<T>(n, EvdJob::Vectors, opts, threads)
        .map(|m| m.saturating_add(baseline).saturating_add(extra_in_memory));
    if let Some(m) = in_memory {
        if m <= limit {
            return Ok(MemoryPlan::InMemory(m));
        }
    }
    let too_big = || {
        Error::InvalidArgument(format!(
            "{what} is too large: the memory it needs does not fit in 64 bits"
        ))
    };
    let b = opts.bandwidth_for(n, EvdJob::Vectors);
    let leaf = opts.leaf_size.max(1);
    if n <= leaf || n < 4 {
        // One leaf, no root merge to split: nothing to gain out of core.
        return Err(Error::OutOfMemory {
            needed_gib: in_memory.unwrap_or(u64::MAX) as f64 / (1u64 << 30) as f64,
            available_gib: limit as f64 / (1u64 << 30) as f64,
            suggestion: format!("{what} does not fit under the memory limit"),
        });
    }
    let w = |x: u64| words_bytes::<T>(x);
    let (n64, b64) = (n as u64, b as u64);
    let nn = n64.checked_mul(n64).ok_or_else(too_big)?;
    let nb = n64.checked_mul(b64).ok_or_else(too_big)?;
    let (n1, n2) = ((n / 2) as u64, (n - n / 2) as u64);
    let h = n1.max(n2);
    let q2_len = ReflectorLayout::new(n, b).len() as u64;
    let q1_len = q1_words(n, b);
    let col = opts.col_block_for(n).min(n);
    let group = opts.q2_group.max(1);
    let tile = opts.dc_tile.clamp(1, n) as u64;
    // Per thread: one Q2 task's workspace, one merge tile's product and
    // eigenvectors (`n x tile` each, at most APPLY_CHUNK columns at a time),
    // one Q1 task's `b x col` products.
    let per_thread = (q2::workspace_len(n, b, group, col) as u64)
        .saturating_add(2 * n64 * tile.min(APPLY_CHUNK as u64))
        .saturating_add(2 * b64 * col as u64);
    let threads_words = per_thread.saturating_mul(threads as u64);
    let always = baseline
        .saturating_add(runtime_bytes(threads).ok_or_else(too_big)?)
        .saturating_add(w(nb)) // T factors of stage 1
        .saturating_add(w(4 * n64)) // d, e, tridiagonal
        // The Q2 plan's block list (45 MiB at n = 49152, b = 64, groups of 16).
        .saturating_add(q2::Q2Plan::list_bytes(n, b, group));
    let stage1_alone = w(nn + 7 * nb);
    let stage2_alone = w(q2_len + 2 * nb);
    let children = w(n1 * n1 + n2 * n2 + n64 * h.div_ceil(2)).saturating_add(w(threads_words));
    let root = w(n1 * n1 + n2 * n2 + h * n64 + 4 * n64);
    let pass = choose_passes::<T>(
        n,
        b,
        opts,
        threads,
        limit,
        always,
        w(h * n64 + threads_words),
    );
    let (wide, q2_groups, q1_panels, passes) =
        (pass.wide, pass.q2_groups, pass.q1_panels, pass.bytes);
    let always = always.saturating_add(pass.tasks_bytes);
    // Stage 2 may run beside stage 1, and the divide and conquer beside
    // stage 2 (and then beside stage 1 too), where the sums fit.
    let stage2_after_stage1 = always.saturating_add(stage1_alone + stage2_alone) > limit;
    let dc_after_stage2 = always.saturating_add(stage2_alone + children) > limit
        || (!stage2_after_stage1
            && always.saturating_add(stage1_alone + stage2_alone + children) > limit);
    let with_stage2 = if stage2_after_stage1 { 0 } else { stage2_alone };
    let with_dc = if dc_after_stage2 { 0 } else { children };
    let phases = [
        always
            .saturating_add(stage1_alone + with_stage2 + if with_stage2 > 0 { with_dc } else { 0 }),
        always.saturating_add(stage2_alone + with_dc),
        always.saturating_add(children + if dc_after_stage2 { 0 } else { stage2_alone }),
        always.saturating_add(root),
        passes,
    ];
    let scratch_bytes = w(q1_len + q2_len + nn);
    let p = OocPlan {
        n,
        threads,
        wide,
        q2_groups,
        q1_panels,
        stage2_after_stage1,
        dc_after_stage2,
        phases,
        scratch_bytes,
        output_bytes: disk.output_bytes,
    };
    check_out_of_core_fits(&p, limit, in_memory, &disk, &what)?;
    Ok(MemoryPlan::OutOfCore(p))
}

/// [`Error::OutOfMemory`] when the out-of-core plan `p` does not fit either:
/// its resident memory over `limit`, or its scratch and output over the
/// disks' free space (`in_memory`: the in-memory plan's bytes, for the
/// message).
fn check_out_of_core_fits(
    p: &OocPlan,
    limit: u64,
    in_memory: Option<u64>,
    disk: &DiskSpace,
    what: &str,
) -> Result<()> {
    let resident = p.resident_bytes();
    if resident > limit {
        return Err(Error::OutOfMemory {
            needed_gib: resident as f64 / (1u64 << 30) as f64,
            available_gib: limit as f64 / (1u64 << 30) as f64,
            suggestion: format!(
                "{what} needs {} in memory, or out of core {} resident (stage 1 holds the \
                 whole matrix, the root merge its two halves and their workspace) with \
                 {} of scratch; raise the memory limit to at least {}",
                in_memory.map_or("more than 16 EiB".into(), human_bytes),
                human_bytes(resident),
                human_bytes(p.scratch_bytes),
                human_bytes(resident)
            ),
        });
    }
    let disk_needed = match disk.output_free {
        None => p.scratch_bytes.saturating_add(disk.output_bytes),
        Some(_) => p.scratch_bytes,
    };
    let short_output = disk.output_free.is_some_and(|f| f < disk.output_bytes);
    if disk_needed > disk.scratch_free || short_output {
        return Err(Error::OutOfMemory {
            needed_gib: in_memory.unwrap_or(u64::MAX) as f64 / (1u64 << 30) as f64,
            available_gib: limit as f64 / (1u64 << 30) as f64,
            suggestion: format!(
                "{what} does not fit in memory, and out of core it needs {} of scratch \
                 (at most){} where {} is free{}: point the scratch directory at a larger \
                 disk, or raise the memory limit to {}",
                human_bytes(p.scratch_bytes),
                match disk.output_free {
                    None if disk.output_bytes > 0 => format!(
                        " plus {} of output on the same file system",
                        human_bytes(disk.output_bytes)
                    ),
                    _ => String::new(),
                },
                human_bytes(disk.scratch_free),
                match disk.output_free {
                    Some(f) if short_output => format!(
                        ", and {} of output where {} is free",
                        human_bytes(disk.output_bytes),
                        human_bytes(f)
                    ),
                    _ => String::new(),
                },
                in_memory.map_or("more than 16 EiB".into(), human_bytes)
            ),
        });
    }
    Ok(())
}

/// How the back-transformation passes of [`plan`] hold the reflectors and how
/// wide they are.
struct Passes {
    /// Output columns per pass.
    wide: usize,
    /// Q2 sweep groups per chunk (all of them: the chain held whole).
    q2_groups: usize,
    /// Q1 panels per chunk (all of them: the chain held whole).
    q1_panels: usize,
    /// Resident bytes during a pass.
    bytes: u64,
    /// The task bookkeeping of the narrowest pass.
    tasks_bytes: u64,
}

/// The passes of [`plan`]: `always` is what every phase holds, `resident` the
/// root's workspace and the per-thread buffers a pass keeps beside its
/// columns and the reflectors' buffers.
fn choose_passes<T: Scalar>(
    n: usize,
    b: usize,
    opts: &EvdOptions,
    threads: usize,
    limit: u64,
    always: u64,
    resident: u64,
) -> Passes {
    let w = |x: u64| words_bytes::<T>(x);
    let n64 = n as u64;
    let group = opts.q2_group.max(1);
    let col = opts.col_block_for(n).min(n);
    // The reflectors of the passes: each chain (Q2, Q1) held whole, loaded
    // once for every pass, where that leaves room for a pass of `unit`
    // columns (Q2 first: a chunked Q2 transposes every column block once per
    // chunk); otherwise read a chunk at a time into two buffers of about a
    // sixteenth of the limit (whole groups / panels; the first chunk of each
    // chain is the largest, earlier sweeps and panels being longer).
    let layout = ReflectorLayout::new(n, b);
    let unit = pass_unit(n, opts);
    let ns = crate::linalg::band::sb2st::num_sweeps(n) as u64;
    let all_groups = ns.div_ceil(group as u64).max(1) as usize;
    let all_panels = panel_count(n, b).max(1);
    let chunk_words = (limit / 16).clamp(1 << 20, 1 << 30) / std::mem::size_of::<T>() as u64;
    let chunked_q2 =
        most_fitting(chunk_words, |k| q2_chunk_words(&layout, group, k)).min(all_groups);
    let chunked_q1 = most_fitting(chunk_words, |k| q1_chunk_words(n, b, k)).min(all_panels);
    // Words of a chain's buffers: one whole, or two chunks.
    let q2_buffers =
        |k: usize| q2_chunk_words(&layout, group, k) * if k >= all_groups { 1 } else { 2 };
    let q1_buffers = |k: usize| q1_chunk_words(n, b, k) * if k >= all_panels { 1 } else { 2 };
    // Task bookkeeping, counted for the narrowest pass (the most tasks).
    let tasks_bytes = |q2k: usize, q1k: usize| {
        let (q2c, q1c) = (
            all_groups.div_ceil(q2k) as u64,
            all_panels.div_ceil(q1k) as u64,
        );
        ooc_tasks(n, opts, unit, q2c, q1c).saturating_mul(BYTES_PER_TASK)
    };
    let pass_bytes = |q2k: usize, q1k: usize, cols: usize| {
        always
            .saturating_add(tasks_bytes(q2k, q1k))
            .saturating_add(resident)
            .saturating_add(w(n64 * cols as u64))
            .saturating_add(w(q2_buffers(q2k) + q1_buffers(q1k)))
    };
    // The widest pass that fits next to the reflectors' buffers.
    let widest = |q2k: usize, q1k: usize| {
        let room = limit.saturating_sub(pass_bytes(q2k, q1k, 0));
        let cols = (room / w(n64).max(1)) as usize;
        (cols / unit * unit).min(n.next_multiple_of(unit))
    };
    // A pass keeps every worker busy with at least one column block of its
    // own; take the first way of holding the reflectors that leaves such a
    // pass (whole chains first), else the one with the widest pass.
    let busy = (threads * col).min(n.next_multiple_of(unit));
    let ways = [
        (all_groups, all_panels),
        (all_groups, chunked_q1),
        (chunked_q2, chunked_q1),
    ];
    let (q2_groups, q1_panels) = ways
        .into_iter()
        .find(|&(a, b)| widest(a, b) >= busy)
        .unwrap_or_else(|| {
            ways.into_iter()
                .max_by_key(|&(a, b)| (widest(a, b), std::cmp::Reverse(all_groups.div_ceil(a))))
                .expect("three ways")
        });
    // Whole rounds of column blocks for the workers, where there are enough.
    let wide = match widest(q2_groups, q1_panels) {
        w if w >= busy && busy.is_multiple_of(unit) => w / busy * busy,
        w => w.max(unit),
    };
    Passes {
        wide,
        q2_groups,
        q1_panels,
        bytes: pass_bytes(q2_groups, q1_panels, wide.min(n)),
        tasks_bytes: tasks_bytes(q2_groups, q1_panels),
    }
}
