//! The result set of a distributed run: rank 0 locks the output directory and
//! commits the set, every rank writes its blocks of the shared files (the
//! result-set protocol of [`crate::results`]: the result appears as one unit,
//! or not at all).

use super::grid::Grid;
use super::io;
use super::layout::Layout;
use super::run::{Problem, Request};
use crate::matrix::npy::{self, Dtype};
use crate::results::{OutputDir, ResultWriter, MANIFEST_RESERVE};
use crate::{Result, Scalar};
use std::path::{Path, PathBuf};

/// A shared output file: its name, the layout of its matrix, this rank's share.
pub(super) type Shared<'a, T> = (&'a str, Layout, Vec<T>);

/// Rank 0: locks the output directory for the whole run (a second run into
/// it is refused at once) and checks that the result will fit there.
pub(super) fn lock_output<T: Scalar>(dir: &Path, arrays: &[Vec<usize>]) -> Result<OutputDir> {
    let out = OutputDir::lock(dir)?;
    let needed = arrays
        .iter()
        .map(|shape| npy::file_bytes::<T>(shape))
        .fold(MANIFEST_RESERVE, u64::saturating_add);
    out.check_space(needed)?;
    Ok(out)
}

/// The names and shapes of the arrays a run writes, values first.
pub(super) fn result_arrays(
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

/// The paths of the result set as every rank reports them: `DIR/<name>` of
/// each array, values first, then `DIR/result.json` (the order of
/// `ResultWriter::commit`).
pub(super) fn result_paths(req: &Request, problem: Problem, m: usize, n: usize) -> Vec<PathBuf> {
    let Some(dir) = &req.output else {
        return Vec::new();
    };
    result_arrays(problem, req.vectors, m, n)
        .into_iter()
        .map(|(name, _)| dir.join(name))
        .chain([dir.join(crate::results::MANIFEST)])
        .collect()
}

/// A values-only result has no vector arrays: a file of theirs left in the
/// directory by an earlier eigenflow is removed at the commit.
pub(super) fn retire_vectors(w: &mut ResultWriter<'_>, problem: Problem, vectors: bool) {
    if !vectors {
        for (name, _) in result_arrays(problem, true, 1, 1).into_iter().skip(1) {
            w.retire(name);
        }
    }
}

/// The manifest fields of a distributed result (the result-set protocol adds
/// `format`, `eigenflow_version`, `created` and `files`).
pub(super) fn manifest_fields<T: Scalar>(
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

/// The manifest's `input`: the file read, or how the matrix was generated.
fn input_json(req: &Request) -> serde_json::Value {
    match &req.input {
        Some(p) => serde_json::json!({ "path": p.display().to_string() }),
        None => serde_json::json!({
            "generated": "uniform(-1, 1) entries from (seed, i, j) (lower triangle mirrored for the EVD)",
            "seed": req.seed,
        }),
    }
}

/// Writes the result set: rank 0 starts it and sends its directory to every
/// rank; rank 0 creates the shared files there (header first), every rank
/// writes its `blocks`, and rank 0 (the holder of `out`) adds `values`,
/// digests the shared files and commits the set with `fields` (the one step
/// that makes the result visible). Every step is agreed on by all ranks.
pub(super) fn write_result_set<T: Scalar>(
    grid: &Grid<'_>,
    problem: Problem,
    vectors: bool,
    out: Option<&OutputDir>,
    values: &[T],
    blocks: &[Shared<'_, T>],
    fields: serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    let values_name = result_arrays(problem, vectors, 1, 1)[0].0;
    let mut writer = match out {
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
        Some(_) => blocks.iter().try_for_each(|(name, l, _)| {
            io::create_npy::<T>(&set_dir.join(name), &[l.rows.n, l.cols.n]).map(drop)
        }),
        None => Ok(()),
    };
    grid.agree(created)?;
    let written = blocks
        .iter()
        .try_for_each(|(name, l, local)| io::write_blocks(&set_dir.join(name), l, local));
    grid.agree(written)?;
    let committed = match writer.take() {
        Some(mut w) => (|| {
            retire_vectors(&mut w, problem, vectors);
            w.add_vector(values_name, values)?;
            for (name, l, _) in blocks {
                w.add_written::<T>(name, vec![l.rows.n, l.cols.n])?;
            }
            w.commit(fields)
        })(),
        None => Ok(Vec::new()),
    };
    grid.agree(committed)?;
    Ok(())
}
