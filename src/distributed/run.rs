//! One distributed run as the `evd` and `svd` examples start it with
//! `--distributed`: checks, per-rank read, engine, per-rank write, and the
//! one-line JSON of the single-node run plus `ranks`, `grid`, `read_s`,
//! `solve_s` and `write_s`, printed by rank 0.

use super::grid::{Grid, Mpi};
use super::io::{self, Input};
use super::layout::{bytes_per_rank, near_square, smallest_fitting_ranks, Job, Layout};
use super::{elpa, scalapack, Engine};
use crate::matrix::npy::{self, Dtype};
use crate::results::{OutputDir, ResultWriter, MANIFEST_RESERVE};
use crate::{sysinfo, Error, Result, Scalar};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A shared output file: its name, the layout of its matrix, this rank's share.
type Shared<'a, T> = (&'a str, Layout, Vec<T>);

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
    /// `--json`.
    pub json: bool,
    /// `--grid PxQ` (default: near-square from the rank count).
    pub grid: Option<(usize, usize)>,
    /// `--block NB`.
    pub block: usize,
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
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drive(&mpi, problem, req)));
    match outcome {
        Ok(Ok(())) => {
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

fn drive(mpi: &Mpi, problem: Problem, req: &Request) -> Result<()> {
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

/// Rank 0: locks the output directory for the whole run (a second run into
/// it is refused at once) and checks that the result will fit there.
fn lock_output<T: Scalar>(dir: &Path, arrays: &[Vec<usize>]) -> Result<OutputDir> {
    let out = OutputDir::lock(dir)?;
    let needed = arrays
        .iter()
        .map(|shape| npy::file_bytes::<T>(shape))
        .fold(MANIFEST_RESERVE, u64::saturating_add);
    out.check_space(needed)?;
    Ok(out)
}

/// The names and shapes of the arrays a run writes, values first.
fn result_arrays(
    problem: Problem,
    vectors: bool,
    m: usize,
    n: usize,
) -> Vec<(&'static str, Vec<usize>)> {
    let k = m.min(n);
    match (problem, vectors) {
        (Problem::Evd, false) => vec![("eigenvalues.npy", vec![n])],
        (Problem::Evd, true) => vec![
            ("eigenvalues.npy", vec![n]),
            ("eigenvectors.npy", vec![n, n]),
        ],
        (Problem::Svd, false) => vec![("singular_values.npy", vec![k])],
        (Problem::Svd, true) => vec![
            ("singular_values.npy", vec![k]),
            ("u.npy", vec![m, k]),
            ("vt.npy", vec![k, n]),
        ],
    }
}

/// A values-only result has no vector arrays: a file of theirs left in the
/// directory by an earlier eigenflow is removed at the commit.
fn retire_vectors(w: &mut ResultWriter<'_>, problem: Problem, vectors: bool) {
    if !vectors {
        for (name, _) in result_arrays(problem, true, 1, 1).into_iter().skip(1) {
            w.retire(name);
        }
    }
}

/// The manifest fields of a distributed result (the result-set protocol adds
/// `format`, `eigenflow_version`, `created` and `files`).
fn manifest_fields<T: Scalar>(
    req: &Request,
    m: usize,
    n: usize,
    ranks: usize,
    shape: (usize, usize),
    block: usize,
) -> serde_json::Map<String, serde_json::Value> {
    let v = serde_json::json!({
        "m": m, "n": n, "dtype": Dtype::of::<T>().descr(),
        "job": if req.vectors { "vectors" } else { "values" },
        "ranks": ranks, "grid": format!("{}x{}", shape.0, shape.1),
        "block": block, "input": input_json(req),
    });
    match v {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

fn solve<T: Engine>(
    grid: &Grid<'_>,
    problem: Problem,
    req: &Request,
    input: Option<&Input<'_>>,
) -> Result<()> {
    let start = Instant::now();
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
    let k = m.min(n);
    if k == 0 {
        return Err(Error::Shape(format!(
            "the distributed path needs a non-empty matrix, got {m} x {n}"
        )));
    }
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
    let out = match &req.output {
        Some(dir) => {
            let arrays: Vec<Vec<usize>> = result_arrays(problem, req.vectors, m, n)
                .into_iter()
                .map(|(_, shape)| shape)
                .collect();
            let locked = if grid.rank() == 0 {
                lock_output::<T>(dir, &arrays).map(Some)
            } else {
                Ok(None)
            };
            grid.agree(locked)?
        }
        None => None,
    };
    // ScaLAPACK 2.2.1's pdgesvd returned info = k + 1 ("singular values not
    // identical across processes") for k = 2 and 3 on a 2x2 grid here, even
    // with every process holding a block; below 2 max(P, Q) the SVD is tiny.
    let (p, q) = grid.shape;
    let tiny_svd = problem == Problem::Svd && p * q > 1 && k < 2 * p.max(q);
    if nb == 0 || tiny_svd {
        // Fewer rows or columns than the grid has: some rank could hold no
        // block at all, which ELPA refuses. Such a matrix has a handful of
        // entries; rank 0 solves it with the single-node eigenflow.
        let solved = if grid.rank() == 0 {
            tiny::<T>(problem, req, out.as_ref(), m, n, grid.ranks(), grid.shape)
        } else {
            Ok(())
        };
        return grid.agree(solved);
    }
    if nb < req.block && grid.rank() == 0 {
        eprintln!(
            "note: --block {} lowered to {nb} so that every process of the {}x{} grid \
             holds a block of the {m} x {n} matrix (ELPA needs it)",
            req.block, grid.shape.0, grid.shape.1
        );
    }

    // Read (or generate) this rank's blocks.
    let t = Instant::now();
    let la = Layout::new(m, n, nb, grid.shape, grid.me);
    let mut a: Vec<T> = grid.agree(match (input, problem) {
        (Some(i), Problem::Evd) => i.read_symmetric(&la),
        (Some(i), Problem::Svd) => i.read_general(&la),
        (None, p) => Ok(io::generate(&la, req.seed, p == Problem::Evd)),
    })?;
    let read_s = t.elapsed().as_secs_f64();

    // Solve.
    let t = Instant::now();
    let lu = Layout::new(m, k, nb, grid.shape, grid.me);
    let lvt = Layout::new(k, n, nb, grid.shape, grid.me);
    let (values, blocks): (Vec<T>, Vec<Shared<'_, T>>) = match problem {
        Problem::Evd => {
            let (ev, q) = eigh_f64(grid, &la, a, req.vectors)?;
            (
                ev,
                q.map(|q| vec![("eigenvectors.npy", la, q)])
                    .unwrap_or_default(),
            )
        }
        Problem::Svd => {
            let (s, uv) = scalapack::svd(grid, &la, &lu, &lvt, &mut a, req.vectors)?;
            drop(a);
            let b = uv
                .map(|(u, vt)| vec![("u.npy", lu, u), ("vt.npy", lvt, vt)])
                .unwrap_or_default();
            (s, b)
        }
    };
    let solve_s = t.elapsed().as_secs_f64();

    // Write: rank 0 starts a result set and sends its directory to every
    // rank; rank 0 creates the shared files there (header first), every rank
    // writes its blocks, and rank 0 adds the values, digests the shared files
    // and commits the set (the one step that makes the result visible).
    let t = Instant::now();
    let mut files = Vec::new();
    if req.output.is_some() {
        let names = result_arrays(problem, req.vectors, m, n);
        let (values_name, _) = &names[0];
        let mut writer = match &out {
            Some(o) => grid.agree(o.begin().map(Some))?,
            None => grid.agree(Ok(None))?,
        };
        let set_dir = {
            use std::os::unix::ffi::OsStrExt;
            let mine = writer.as_ref().map(|w| w.set_dir().as_os_str().as_bytes());
            let bytes = grid.broadcast_bytes(0, mine);
            PathBuf::from(std::ffi::OsStr::from_bytes(&bytes))
        };
        let created = match &writer {
            Some(_) => (|| {
                for (name, l, _) in &blocks {
                    io::create_npy::<T>(&set_dir.join(name), &[l.rows.n, l.cols.n])?;
                }
                Ok(())
            })(),
            None => Ok(()),
        };
        grid.agree(created)?;
        let written = (|| {
            for (name, l, local) in &blocks {
                io::write_blocks(&set_dir.join(name), l, local)?;
            }
            Ok(())
        })();
        grid.agree(written)?;
        let committed = match writer.take() {
            Some(mut w) => (|| {
                retire_vectors(&mut w, problem, req.vectors);
                w.add_vector(values_name, &values)?;
                for (name, l, _) in &blocks {
                    w.add_written::<T>(name, vec![l.rows.n, l.cols.n])?;
                }
                w.commit(manifest_fields::<T>(
                    req,
                    m,
                    n,
                    grid.ranks(),
                    grid.shape,
                    nb,
                ))
            })(),
            None => Ok(Vec::new()),
        };
        files = grid.agree(committed)?;
    }
    let write_s = t.elapsed().as_secs_f64();
    let seconds = start.elapsed().as_secs_f64();

    if grid.rank() == 0 {
        let job_name = if req.vectors { "vectors" } else { "values" };
        let grid_s = format!("{}x{}", grid.shape.0, grid.shape.1);
        let files: Option<Vec<String>> = req
            .output
            .as_ref()
            .map(|_| files.iter().map(|p| p.display().to_string()).collect());
        if req.json {
            let mut line = serde_json::json!({
                "n": n, "precision": T::NAME, "job": job_name, "threads": 1,
                "seconds": seconds,
                "stages": { "read": read_s, "solve": solve_s, "write": write_s },
                "files": files, "trace": null, "k": values.len(),
                "ranks": grid.ranks(), "grid": grid_s, "block": nb,
                "read_s": read_s, "solve_s": solve_s, "write_s": write_s,
            });
            let obj = line.as_object_mut().expect("an object");
            match problem {
                Problem::Evd => {
                    obj.insert("engine".into(), "ELPA2 (2-stage)".into());
                    obj.insert("residual".into(), serde_json::Value::Null);
                    obj.insert("orthogonality".into(), serde_json::Value::Null);
                }
                Problem::Svd => {
                    obj.insert("m".into(), m.into());
                    obj.insert("engine".into(), format!("ScaLAPACK {}", T::PGESVD).into());
                    obj.insert("residual".into(), serde_json::Value::Null);
                    obj.insert("orthogonality_u".into(), serde_json::Value::Null);
                    obj.insert("orthogonality_v".into(), serde_json::Value::Null);
                }
            }
            println!("{line}");
        } else {
            println!(
                "{m} x {n} ({}), {job_name}, {} ranks on a {grid_s} grid, block {nb}: \
                 {seconds:.3} s (read {read_s:.3} s, solve {solve_s:.3} s, write {write_s:.3} s)",
                T::NAME,
                grid.ranks()
            );
            if let (Some(lo), Some(hi)) = (values.first(), values.last()) {
                println!(
                    "{} values: first {:.6e}, last {:.6e}",
                    values.len(),
                    lo.f64(),
                    hi.f64()
                );
            }
            for f in files.iter().flatten() {
                println!("wrote {f}");
            }
        }
    }
    Ok(())
}

fn input_json(req: &Request) -> serde_json::Value {
    match &req.input {
        Some(p) => serde_json::json!({ "path": p.display().to_string() }),
        None => serde_json::json!({
            "generated": "uniform(-1, 1) entries from (seed, i, j) (lower triangle mirrored for the EVD)",
            "seed": req.seed,
        }),
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

/// A matrix smaller than the process grid, solved on rank 0 by the
/// single-node eigenflow and written there.
fn tiny<T: Scalar>(
    problem: Problem,
    req: &Request,
    out: Option<&OutputDir>,
    m: usize,
    n: usize,
    ranks: usize,
    shape: (usize, usize),
) -> Result<()> {
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
    let mut files = Vec::new();
    if let Some(out) = out {
        let names = result_arrays(problem, req.vectors, m, n);
        let mut w = out.begin()?;
        retire_vectors(&mut w, problem, req.vectors);
        w.add_vector(names[0].0, &values)?;
        for (name, x) in &arrays {
            w.add_matrix(name, x.as_ref())?;
        }
        files = w.commit(manifest_fields::<T>(req, m, n, ranks, shape, 0))?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let files: Option<Vec<String>> = req
        .output
        .as_ref()
        .map(|_| files.iter().map(|p| p.display().to_string()).collect());
    let job_name = if req.vectors { "vectors" } else { "values" };
    if req.json {
        println!(
            "{}",
            serde_json::json!({
                "m": m, "n": n, "precision": T::NAME, "job": job_name, "seconds": seconds,
                "files": files, "k": values.len(), "ranks": ranks, "grid": format!("{}x{}", shape.0, shape.1), "block": 0,
                "read_s": 0.0, "solve_s": seconds, "write_s": 0.0,
                "engine": "single-node eigenflow on rank 0 (matrix smaller than the grid)",
            })
        );
    } else {
        println!(
            "{m} x {n} ({}), {job_name}: smaller than the grid, solved on rank 0 in {seconds:.3} s",
            T::NAME
        );
    }
    Ok(())
}
