//! One distributed run as the `evd` and `svd` examples start it with
//! `--distributed`: checks, per-rank read, engine, per-rank write, and the
//! one-line JSON of the single-node run plus `ranks`, `grid`, `read_s`,
//! `solve_s` and `write_s`, printed by rank 0.

use super::grid::{Grid, Mpi};
use super::io::{self, Input};
use super::layout::{bytes_per_rank, near_square, smallest_fitting_ranks, Job, Layout};
use super::output::{
    lock_output, manifest_fields, result_arrays, result_paths, retire_vectors, write_result_set,
    Shared,
};
use super::{elpa, scalapack, Engine};
use crate::matrix::npy::{self, Dtype};
use crate::results::OutputDir;
use crate::{sysinfo, Error, Result, Scalar};
use std::path::PathBuf;
use std::time::Instant;

/// Which problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Symmetric EVD through ELPA2 (the lower triangle of the input is used).
    Evd,
    /// SVD through ScaLAPACK `p?gesvd`.
    Svd,
}

/// What the example's flags ask for.
#[derive(Clone, Debug)]
pub struct Request {
    /// `--input`: a 2-D `.npy` (f2/f4/f8, C or Fortran order).
    pub input: Option<PathBuf>,
    /// Rows of the random matrix (without `--input`).
    pub m: usize,
    /// Columns of the random matrix (without `--input`).
    pub n: usize,
    /// Seed of the random matrix.
    pub seed: u64,
    /// `Some(true)` for f32, `Some(false)` for f64, `None`: follow the input.
    pub f32: Option<bool>,
    /// Vectors too (not `--values-only`).
    pub vectors: bool,
    /// `--output DIR`.
    pub output: Option<PathBuf>,
    /// `--json`: how [`run_example`] reports (ignored by [`run`]).
    pub json: bool,
    /// `--grid PxQ` (default: near-square from the rank count).
    pub grid: Option<(usize, usize)>,
    /// `--block NB`.
    pub block: usize,
}

/// What a distributed run did, as every rank returns it from [`run`].
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Which problem.
    pub problem: Problem,
    /// Rows of the matrix.
    pub m: usize,
    /// Columns of the matrix.
    pub n: usize,
    /// `"f64"` or `"f32"`: the precision of the results.
    pub precision: &'static str,
    /// Whether vectors were computed.
    pub vectors: bool,
    /// The eigenvalues (ascending) or singular values (descending), widened to
    /// `f64`; the same on every rank.
    pub values: Vec<f64>,
    /// With an output directory: the paths of the result set (`DIR/<name>`,
    /// `result.json` last); the same on every rank.
    pub files: Option<Vec<PathBuf>>,
    /// Number of ranks.
    pub ranks: usize,
    /// The process grid, rows x columns.
    pub grid: (usize, usize),
    /// The block size used (0 when the matrix was smaller than the grid).
    pub block: usize,
    /// The engine that solved it.
    pub engine: String,
    /// Wall seconds of the whole run on this rank.
    pub seconds: f64,
    /// Seconds reading (or generating) this rank's blocks.
    pub read_s: f64,
    /// Seconds in the engine.
    pub solve_s: f64,
    /// Seconds writing the result set.
    pub write_s: f64,
}

impl Outcome {
    /// The outcome of a run of `problem` on an `m x n` matrix that found
    /// `values`, on `(ranks, grid, block)`, solved by `engine`, with `[total,
    /// read, solve, write]` seconds.
    fn of<T: Scalar>(
        problem: Problem,
        req: &Request,
        (m, n): (usize, usize),
        values: &[T],
        (ranks, grid, block): (usize, (usize, usize), usize),
        engine: String,
        [seconds, read_s, solve_s, write_s]: [f64; 4],
    ) -> Outcome {
        Outcome {
            problem,
            m,
            n,
            precision: T::NAME,
            vectors: req.vectors,
            values: values.iter().map(|v| v.f64()).collect(),
            files: req
                .output
                .as_ref()
                .map(|_| result_paths(req, problem, m, n)),
            ranks,
            grid,
            block,
            engine,
            seconds,
            read_s,
            solve_s,
            write_s,
        }
    }

    /// The examples' one-line JSON: the single-node fields plus `ranks`,
    /// `grid`, `block`, `engine` and the per-phase seconds (docs/cli.md,
    /// docs/DISTRIBUTED.md).
    pub fn to_json(&self) -> serde_json::Value {
        let files: Option<Vec<String>> = self
            .files
            .as_ref()
            .map(|f| f.iter().map(|p| p.display().to_string()).collect());
        let mut line = serde_json::json!({
            "n": self.n, "precision": self.precision, "job": self.job_name(), "threads": 1,
            "seconds": self.seconds,
            "stages": { "read": self.read_s, "solve": self.solve_s, "write": self.write_s },
            "files": files, "trace": null, "k": self.values.len(),
            "ranks": self.ranks, "grid": self.grid_name(), "block": self.block,
            "read_s": self.read_s, "solve_s": self.solve_s, "write_s": self.write_s,
            "engine": self.engine, "residual": null,
        });
        let obj = line.as_object_mut().expect("an object");
        match self.problem {
            Problem::Evd => {
                obj.insert("orthogonality".into(), serde_json::Value::Null);
            }
            Problem::Svd => {
                obj.insert("m".into(), self.m.into());
                obj.insert("orthogonality_u".into(), serde_json::Value::Null);
                obj.insert("orthogonality_v".into(), serde_json::Value::Null);
            }
        }
        line
    }

    fn job_name(&self) -> &'static str {
        if self.vectors {
            "vectors"
        } else {
            "values"
        }
    }

    fn grid_name(&self) -> String {
        format!("{}x{}", self.grid.0, self.grid.1)
    }

    /// The examples' human-readable summary on stdout.
    fn print_text(&self) {
        println!(
            "{} x {} ({}), {}, {} ranks on a {} grid ({}): {:.3} s \
             (read {:.3} s, solve {:.3} s, write {:.3} s)",
            self.m,
            self.n,
            self.precision,
            self.job_name(),
            self.ranks,
            self.grid_name(),
            self.engine,
            self.seconds,
            self.read_s,
            self.solve_s,
            self.write_s
        );
        if let (Some(lo), Some(hi)) = (self.values.first(), self.values.last()) {
            println!(
                "{} values: first {lo:.6e}, last {hi:.6e}",
                self.values.len()
            );
        }
        for f in self.files.iter().flatten() {
            println!("wrote {}", f.display());
        }
    }
}

/// Runs `problem` as one rank of a distributed job and ends the process: 0 on
/// success; 1 after rank 0 printed `error: ...` (every rank agreed on the
/// error first, so none is left waiting); a panic aborts every rank through
/// `MPI_Abort`. MPI is finalised on every path that exits normally.
pub fn run_example(problem: Problem, req: &Request) -> ! {
    let mpi = match Mpi::init() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mpi, problem, req)));
    match outcome {
        Ok(Ok(done)) => {
            if mpi.rank() == 0 {
                if req.json {
                    println!("{}", done.to_json());
                } else {
                    done.print_text();
                }
            }
            drop(mpi);
            std::process::exit(0)
        }
        Ok(Err(e)) => {
            if mpi.rank() == 0 {
                eprintln!("error: {e}");
            }
            drop(mpi);
            std::process::exit(1)
        }
        // The other ranks may be inside a collective call: only MPI_Abort ends them.
        Err(_) => mpi.abort(1),
    }
}

/// Runs `problem` as one rank of a distributed job: every rank of the MPI
/// job calls it with the same `problem` and `req`. Reads each rank's blocks
/// of `req.input` (or generates them from `req.seed`), solves with ELPA2 (EVD)
/// or ScaLAPACK `p?gesvd` (SVD), and with `req.output` writes the result set
/// (see docs/DISTRIBUTED.md). Prints nothing (a note on stderr when the block
/// size is lowered): the caller reports the [`Outcome`].
///
/// Every failure is agreed on by all ranks before it is returned, so every
/// rank returns an error together and none is left waiting in a collective
/// call; rank 0's error is the failing rank's own (the others carry its
/// message).
pub fn run(mpi: &Mpi, problem: Problem, req: &Request) -> Result<Outcome> {
    let shape = req.grid.unwrap_or_else(|| near_square(mpi.size()));
    if req.block == 0 {
        return Err(Error::InvalidArgument("--block must be at least 1".into()));
    }
    let grid = Grid::new(mpi, shape)?;
    let input = match &req.input {
        Some(p) => Some(grid.agree(Input::open(p))?),
        None => None,
    };
    let f32 = req.f32.unwrap_or_else(|| {
        input
            .as_ref()
            .is_some_and(|i| i.header().dtype != Dtype::F64)
    });
    if f32 {
        solve::<f32>(&grid, problem, req, input.as_ref())
    } else {
        solve::<f64>(&grid, problem, req, input.as_ref())
    }
}

/// Ranks on this node (Open MPI's `OMPI_COMM_WORLD_LOCAL_SIZE`, else 1): they
/// share its memory.
fn ranks_on_node() -> u64 {
    std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1u64)
        .max(1)
}

fn check_memory<T: Scalar>(grid: &Grid<'_>, job: Job, m: usize, n: usize, nb: usize) -> Result<()> {
    // The EVD runs ELPA in f64 whatever T is (see `eigh_f64`).
    let es = match job {
        Job::EvdValues | Job::EvdVectors => 8,
        _ => std::mem::size_of::<T>(),
    };
    let what = match job {
        Job::EvdValues => "eigenvalues",
        Job::EvdVectors => "eigenvalues and eigenvectors",
        Job::SvdValues => "singular values",
        Job::SvdVectors => "singular values and vectors",
    };
    let (p, q) = grid.shape;
    let problem = format!(
        "the {m} x {n} {} problem ({what}) on a {p}x{q} grid, per rank",
        T::NAME
    );
    let Some(needed) = bytes_per_rank(job, m, n, nb, grid.shape, es) else {
        return Err(Error::InvalidArgument(format!(
            "{problem}: the memory it needs does not fit in 64 bits"
        )));
    };
    let Some(avail) = sysinfo::available_memory_bytes() else {
        return Ok(());
    };
    let per_rank = avail / ranks_on_node();
    sysinfo::check_fits_in(
        needed,
        per_rank,
        &problem,
        |per_rank| match smallest_fitting_ranks(job, m, n, nb, es, per_rank, 1 << 20) {
            Some(r) => format!(
                "{} per rank is available; the smallest rank count that fits is {r} \
                 (with the same memory per rank)",
                sysinfo::human_bytes(per_rank)
            ),
            None => format!(
                "{} per rank is available; more than {} ranks would be needed",
                sysinfo::human_bytes(per_rank),
                1 << 20
            ),
        },
    )
}

/// One rank's run: checks, the output directory locked (rank 0), this rank's
/// blocks read, the engine, the result set written; every step agreed on by
/// all ranks, so an error on one is the error of all.
fn solve<T: Engine>(
    grid: &Grid<'_>,
    problem: Problem,
    req: &Request,
    input: Option<&Input<'_>>,
) -> Result<Outcome> {
    let start = Instant::now();
    let (m, n) = matrix_shape(problem, req, input)?;
    let nb = effective_block(req.block, m, n, grid.shape);
    let job = match (problem, req.vectors) {
        (Problem::Evd, false) => Job::EvdValues,
        (Problem::Evd, true) => Job::EvdVectors,
        (Problem::Svd, false) => Job::SvdValues,
        (Problem::Svd, true) => Job::SvdVectors,
    };
    grid.agree(check_memory::<T>(grid, job, m, n, nb.max(1)))?;
    // Rank 0 holds the output directory's lock from here to the end of the
    // run; the result appears there as one unit, or not at all (the
    // result-set protocol of `crate::results`).
    let out = lock_result_dir::<T>(grid, problem, req, m, n)?;
    // ScaLAPACK 2.2.1's pdgesvd returned info = k + 1 ("singular values not
    // identical across processes") for k = 2 and 3 on a 2x2 grid here, even
    // with every process holding a block; below 2 max(P, Q) the SVD is tiny.
    let (p, q) = grid.shape;
    let tiny_svd = problem == Problem::Svd && p * q > 1 && m.min(n) < 2 * p.max(q);
    if nb == 0 || tiny_svd {
        // Fewer rows or columns than the grid has: some rank could hold no
        // block at all, which ELPA refuses. Such a matrix has a handful of
        // entries; rank 0 solves it with the single-node eigenflow.
        let solved = tiny::<T>(problem, req, out.as_ref(), m, n, grid.ranks(), grid.shape);
        return grid.agree(solved);
    }
    if nb < req.block && grid.rank() == 0 {
        eprintln!(
            "note: --block {} lowered to {nb} so that every process of the {}x{} grid \
             holds a block of the {m} x {n} matrix (ELPA needs it)",
            req.block, grid.shape.0, grid.shape.1
        );
    }

    let t = Instant::now();
    let la = Layout::new(m, n, nb, grid.shape, grid.me);
    let a: Vec<T> = grid.agree(match (input, problem) {
        (Some(i), Problem::Evd) => i.read_symmetric(&la),
        (Some(i), Problem::Svd) => i.read_general(&la),
        (None, p) => Ok(io::generate(&la, req.seed, p == Problem::Evd)),
    })?;
    let read_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let (values, blocks) = solve_blocks(grid, problem, req.vectors, la, a)?;
    let solve_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    if req.output.is_some() {
        let fields = manifest_fields::<T>(req, m, n, grid.ranks(), grid.shape, nb);
        write_result_set(
            grid,
            problem,
            req.vectors,
            out.as_ref(),
            &values,
            &blocks,
            fields,
        )?;
    }
    let write_s = t.elapsed().as_secs_f64();
    let seconds = start.elapsed().as_secs_f64();

    Ok(Outcome::of::<T>(
        problem,
        req,
        (m, n),
        &values,
        (grid.ranks(), grid.shape, nb),
        match problem {
            Problem::Evd => "ELPA2 (2-stage)".to_string(),
            Problem::Svd => format!("ScaLAPACK {}", T::PGESVD),
        },
        [seconds, read_s, solve_s, write_s],
    ))
}

/// The order of the matrix: the input file's shape, or the requested one;
/// refused when empty, or not square for the EVD.
fn matrix_shape(
    problem: Problem,
    req: &Request,
    input: Option<&Input<'_>>,
) -> Result<(usize, usize)> {
    let (m, n) = match input {
        Some(i) => (i.header().shape[0], i.header().shape[1]),
        None if problem == Problem::Evd => (req.n, req.n),
        None => (req.m, req.n),
    };
    if problem == Problem::Evd && m != n {
        return Err(Error::Npy {
            path: req.input.clone().unwrap_or_default(),
            reason: format!("expected a square 2-D matrix, found shape ({m}, {n})"),
        });
    }
    if m.min(n) == 0 {
        return Err(Error::Shape(format!(
            "the distributed path needs a non-empty matrix, got {m} x {n}"
        )));
    }
    Ok((m, n))
}

/// Rank 0 locks `req.output` (if any) and checks its space; every rank learns
/// whether that worked. Only rank 0 holds the directory.
fn lock_result_dir<T: Scalar>(
    grid: &Grid<'_>,
    problem: Problem,
    req: &Request,
    m: usize,
    n: usize,
) -> Result<Option<OutputDir>> {
    let Some(dir) = &req.output else {
        return Ok(None);
    };
    let arrays: Vec<Vec<usize>> = result_arrays(problem, req.vectors, m, n)
        .into_iter()
        .map(|(_, shape)| shape)
        .collect();
    let locked = if grid.rank() == 0 {
        lock_output::<T>(dir, &arrays).map(Some)
    } else {
        Ok(None)
    };
    grid.agree(locked)
}

/// The engine on this rank's blocks `a` of layout `la`: the values, and with
/// `vectors` the shared output files with this rank's blocks of each.
fn solve_blocks<T: Engine>(
    grid: &Grid<'_>,
    problem: Problem,
    vectors: bool,
    la: Layout,
    mut a: Vec<T>,
) -> Result<(Vec<T>, Vec<Shared<'static, T>>)> {
    match problem {
        Problem::Evd => {
            let (ev, q) = eigh_f64(grid, &la, a, vectors)?;
            let blocks = q.map(|q| vec![("eigenvectors.npy", la, q)]);
            Ok((ev, blocks.unwrap_or_default()))
        }
        Problem::Svd => {
            let (m, n, nb) = (la.rows.n, la.cols.n, la.rows.nb);
            let k = m.min(n);
            let lu = Layout::new(m, k, nb, grid.shape, grid.me);
            let lvt = Layout::new(k, n, nb, grid.shape, grid.me);
            let (s, uv) = scalapack::svd(grid, &la, &lu, &lvt, &mut a, vectors)?;
            drop(a);
            let blocks = uv.map(|(u, vt)| vec![("u.npy", lu, u), ("vt.npy", lvt, vt)]);
            Ok((s, blocks.unwrap_or_default()))
        }
    }
}

/// The block size used: `block`, lowered so that every process row and
/// column of `grid` holds at least one block of the `m x n` matrix (ELPA
/// refuses a process without one, and `p?gesvd` then reports disagreeing
/// singular values); 0 when even blocks of 1 cannot (fewer rows than process
/// rows or fewer columns than process columns).
pub(crate) fn effective_block(block: usize, m: usize, n: usize, grid: (usize, usize)) -> usize {
    let fit = |len: usize, procs: usize| {
        if procs <= 1 {
            usize::MAX
        } else {
            // The last process holds something iff len > (procs - 1) nb.
            (len - 1) / (procs - 1)
        }
    };
    block.min(fit(m, grid.0)).min(fit(n, grid.1))
}

/// The EVD through ELPA in f64: the Debian/Ubuntu ELPA build (2022.11) has no
/// single precision (its `_f` entry points fail with
/// `ELPA_ERROR_DURING_COMPUTATION` and print "ELPA is not compiled with
/// single-precision support"), so an f32 problem is solved in f64 and its
/// results rounded to f32 — more accurate, at twice the memory (which the
/// per-rank memory check counts).
#[allow(clippy::type_complexity)]
fn eigh_f64<T: Scalar>(
    grid: &Grid<'_>,
    la: &Layout,
    a: Vec<T>,
    vectors: bool,
) -> Result<(Vec<T>, Option<Vec<T>>)> {
    let mut a64: Vec<f64> = a.iter().map(|x| x.f64()).collect();
    drop(a);
    let (ev, q) = elpa::eigh::<f64>(grid, la, &mut a64, vectors)?;
    drop(a64);
    let back = |v: Vec<f64>| v.into_iter().map(T::of).collect::<Vec<T>>();
    Ok((back(ev), q.map(back)))
}

/// A matrix smaller than the process grid: every rank solves it with the
/// single-node eigenflow (a handful of entries, and the same bits on every
/// rank), rank 0 (the holder of `out`) writes it.
fn tiny<T: Scalar>(
    problem: Problem,
    req: &Request,
    out: Option<&OutputDir>,
    m: usize,
    n: usize,
    ranks: usize,
    shape: (usize, usize),
) -> Result<Outcome> {
    let start = Instant::now();
    let a: faer::Mat<T> = match &req.input {
        Some(p) => npy::read_matrix(p)?,
        None => faer::Mat::from_fn(m, n, |i, j| {
            T::of(match problem {
                Problem::Evd => super::layout::random_symmetric_entry(req.seed, i, j),
                Problem::Svd => super::layout::random_entry(req.seed, i, j),
            })
        }),
    };
    let mut arrays: Vec<(&str, faer::Mat<T>)> = Vec::new();
    let values = match problem {
        Problem::Evd if req.vectors => {
            let e = crate::eigh(a.as_ref())?;
            arrays.push(("eigenvectors.npy", e.vectors));
            e.values
        }
        Problem::Evd => crate::eigvalsh(a.as_ref())?,
        Problem::Svd if req.vectors => {
            let r = crate::svd(a.as_ref())?;
            arrays.push(("u.npy", r.u));
            arrays.push(("vt.npy", r.vt));
            r.values
        }
        Problem::Svd => crate::svdvals(a.as_ref())?,
    };
    if let Some(out) = out {
        let names = result_arrays(problem, req.vectors, m, n);
        let mut w = out.begin()?;
        retire_vectors(&mut w, problem, req.vectors);
        w.add_vector(names[0].0, &values)?;
        for (name, x) in &arrays {
            w.add_matrix(name, x.as_ref())?;
        }
        w.commit(manifest_fields::<T>(req, m, n, ranks, shape, 0))?;
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Outcome::of::<T>(
        problem,
        req,
        (m, n),
        &values,
        (ranks, shape, 0),
        "single-node eigenflow on every rank (matrix smaller than the grid)".into(),
        [seconds, 0.0, seconds, 0.0],
    ))
}
