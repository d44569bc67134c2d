//! Result sets on disk that are never lost or mixed: a set of named `.npy`
//! arrays and a manifest, replaced as a unit, in a directory one process
//! holds at a time (issue 18).
//!
//! Used by the `evd` example (`eigenvalues.npy`, `eigenvectors.npy`) and meant
//! for the `svd` one (`singular_values.npy`, `u.npy`, `vt.npy`).
//!
//! # Layout
//!
//! ```text
//! DIR/.eigenflow.lock                 the lock file (holds the pid of the lock's holder)
//! DIR/.eigenflow/set-<pid>-<nanos>/   one complete result set: the arrays and result.json
//! DIR/.eigenflow/current              symbolic link to the committed set
//! DIR/eigenvalues.npy                 symbolic link to .eigenflow/current/eigenvalues.npy
//! DIR/result.json                     symbolic link to .eigenflow/current/result.json
//! ```
//!
//! # Protocol
//!
//! 1. [`OutputDir::lock`] takes an exclusive `flock` on `DIR` itself and on
//!    `DIR/.eigenflow.lock` before anything is computed (a second run is
//!    refused at once, naming the directory and the holder's pid, even if the
//!    lock file was deleted), removes the sets of killed runs and repairs the
//!    links of the current set's names.
//!    [`OutputDir::check_space`] refuses a result that will not fit.
//! 2. [`OutputDir::begin`] creates a fresh set directory; each array is written
//!    into it through a SHA-256 digest, flushed and `fsync`ed.
//! 3. [`ResultWriter::commit`] writes `result.json` into the set the same way,
//!    last, `fsync`s the set directory, makes the links of the names only the
//!    new set has under temporary hidden names, removes the names the new set
//!    does not have (so a values-only run removes the `eigenvectors.npy` of an
//!    earlier run with vectors: the whole set is replaced as a unit), and then
//!    switches `.eigenflow/current` to the new set with one `rename` of a
//!    symbolic link — the one atomic step that replaces the whole set. Only
//!    then are the new names' links renamed into place and the old set
//!    deleted. An error of the commit means the switch did not happen; what
//!    follows the switch cannot fail it.
//!
//! A run killed at any moment before the switch leaves the previous set as it
//! was (plus an unfinished set in the store, removed by the next run); killed
//! after it, the new set is complete. No link of the directory ever dangles:
//! around the switch a name that only one of the two sets has can be missing
//! (a kill there leaves it so), and the next [`OutputDir::lock`] gives every
//! name of the current set its link and removes links to names it does not
//! have. Reading a missing name fails loudly; no name ever yields another
//! run's data. A failure or a stop request ([`ResultWriter::stop_when`])
//! removes the new set's files.
//!
//! Regular files left at the result's names by eigenflow versions before this
//! layout are replaced by the links (without a manifest they belong to no set).
//!
//! # Manifest (`result.json`)
//!
//! The caller's fields (the `evd` example: `n`, `dtype`, `job`, `input`, see
//! docs/cli.md) plus `format` (`"eigenflow-result/1"`), `eigenflow_version`,
//! `created` (seconds since the Unix epoch) and `files`: for each array, its
//! `name`, `dtype` (NumPy's `descr`), `shape`, `bytes` (file size) and
//! `sha256` (hex digest of the whole file, as `sha256sum` prints it).

mod dir;
mod input;

pub use dir::{DirectoryBusy, NoSpace, OutputDir, LOCK_FILE};
pub use input::InputFile;

use crate::matrix::npy::{self, Dtype};
use crate::{Error, Result, Scalar};
use dir::sync_dir;
use faer::MatRef;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Name of the store of result sets inside an output directory.
pub const STORE: &str = ".eigenflow";

/// Name of the manifest, the last file of every set.
pub const MANIFEST: &str = "result.json";

/// Bytes reserved for the manifest in space checks (it is a few hundred).
pub const MANIFEST_RESERVE: u64 = 64 * 1024;

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One array written into a set.
#[derive(Clone, Debug)]
struct Part {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: u64,
    sha256: String,
}

/// A result set being written (see the [module docs](self)); dropped without
/// [`commit`](ResultWriter::commit), it removes what it wrote and the
/// directory keeps its previous result.
pub struct ResultWriter<'a> {
    out: &'a OutputDir,
    set: String,
    set_dir: PathBuf,
    parts: Vec<Part>,
    retired: Vec<String>,
    stop: Option<Box<dyn Fn() -> bool + 'a>>,
    committed: bool,
}

impl OutputDir {
    /// Starts a new result set in this directory.
    pub fn begin(&self) -> Result<ResultWriter<'_>> {
        let store = self.store();
        std::fs::create_dir_all(&store).map_err(|e| io_err(&store, e))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let set = format!("set-{}-{nanos}", std::process::id());
        let set_dir = store.join(&set);
        std::fs::create_dir(&set_dir).map_err(|e| io_err(&set_dir, e))?;
        Ok(ResultWriter {
            out: self,
            set,
            set_dir,
            parts: Vec::new(),
            retired: Vec::new(),
            stop: None,
            committed: false,
        })
    }
}

impl<'a> ResultWriter<'a> {
    /// Makes the writer give up with [`Error::Cancelled`] as soon as `stop`
    /// returns true (checked at least every MiB written and before the
    /// switch), e.g. after SIGTERM.
    pub fn stop_when(&mut self, stop: impl Fn() -> bool + 'a) {
        self.stop = Some(Box::new(stop));
    }

    /// Says that this result has no array `name` (e.g. `eigenvectors.npy` of a
    /// values-only run): a file or link of that name in the directory, left by
    /// an earlier result, is removed when this one is committed.
    pub fn retire(&mut self, name: &str) {
        self.retired.push(name.to_string());
    }

    /// Writes the 1-D array `v` as `name` (e.g. `eigenvalues.npy`).
    pub fn add_vector<T: Scalar>(&mut self, name: &str, v: &[T]) -> Result<()> {
        self.add::<T>(name, vec![v.len()], |w| npy::write_vector_to(w, v))
    }

    /// Writes the matrix `a` as `name` (Fortran order, as
    /// [`npy::write_matrix`]).
    pub fn add_matrix<T: Scalar>(&mut self, name: &str, a: MatRef<'_, T>) -> Result<()> {
        let shape = vec![a.nrows(), a.ncols()];
        self.add::<T>(name, shape, |w| npy::write_matrix_to(w, a))
    }

    /// Writes an array of any `shape` as `name` in C order, the elements
    /// given in that order ([`npy::write_c_order_to`]).
    pub fn add_array_c<T: Scalar>(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        elems: impl Iterator<Item = T>,
    ) -> Result<()> {
        let s = shape.clone();
        self.add::<T>(name, shape, move |w| npy::write_c_order_to(w, &s, elems))
    }

    /// The set's directory, where [`add_written`](Self::add_written) expects
    /// files that other processes wrote (e.g. every rank of a distributed run
    /// writing its blocks into one shared `.npy`). Nothing in it is visible
    /// under the directory's result names before [`commit`](Self::commit).
    pub fn set_dir(&self) -> &Path {
        &self.set_dir
    }

    /// Adds the array `name` of element type `T` and `shape` that was written
    /// directly into [`set_dir`](Self::set_dir) by someone else: checks that
    /// the file has exactly the size of such an `.npy`, `fsync`s it and takes
    /// its SHA-256 by reading it back (so the manifest describes the bytes on
    /// disk, whoever wrote them).
    pub fn add_written<T: Scalar>(&mut self, name: &str, shape: Vec<usize>) -> Result<()> {
        self.check_name(name)?;
        let path = self.set_dir.join(name);
        let expected = npy::file_bytes::<T>(&shape);
        let mut file = File::open(&path).map_err(|e| io_err(&path, e))?;
        let bytes = file.metadata().map_err(|e| io_err(&path, e))?.len();
        if bytes != expected {
            return Err(Error::Npy {
                path,
                reason: format!("{bytes} bytes written, expected {expected} for shape {shape:?}"),
            });
        }
        let mut digest = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            if self.stopped() {
                return Err(Error::Cancelled);
            }
            let got = std::io::Read::read(&mut file, &mut buf).map_err(|e| io_err(&path, e))?;
            if got == 0 {
                break;
            }
            digest.update(&buf[..got]);
        }
        file.sync_all().map_err(|e| io_err(&path, e))?;
        self.parts.push(Part {
            name: name.to_string(),
            dtype: Dtype::of::<T>(),
            shape,
            bytes,
            sha256: hex(&digest.finalize()),
        });
        Ok(())
    }

    /// Refuses a part name that is empty, hidden, a path, the manifest's or
    /// already taken, and any part after a stop request.
    fn check_name(&self, name: &str) -> Result<()> {
        let bad = name.is_empty()
            || name.starts_with('.')
            || name.contains('/')
            || name == MANIFEST
            || self.parts.iter().any(|p| p.name == name);
        if bad {
            return Err(Error::InvalidArgument(format!(
                "result part name {name:?} is empty, hidden, a path, reserved or repeated"
            )));
        }
        if self.stopped() {
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s())
    }

    fn add<T: Scalar>(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        write: impl FnOnce(&mut BufWriter<PartWriter<'_>>) -> std::io::Result<()>,
    ) -> Result<()> {
        self.check_name(name)?;
        let expected = npy::file_bytes::<T>(&shape);
        let index = self.parts.len();
        let (bytes, sha256) = self.write_file(name, expected, index, write)?;
        self.parts.push(Part {
            name: name.to_string(),
            dtype: Dtype::of::<T>(),
            shape,
            bytes,
            sha256,
        });
        if index == 0 {
            fault::point("after-first-file");
        }
        Ok(())
    }

    /// Writes one file of the set through a digest; flushes and `fsync`s it.
    /// Returns its size and hex SHA-256.
    fn write_file(
        &self,
        name: &str,
        expected: u64,
        index: usize,
        write: impl FnOnce(&mut BufWriter<PartWriter<'_>>) -> std::io::Result<()>,
    ) -> Result<(u64, String)> {
        let path = self.set_dir.join(name);
        let file = File::create(&path).map_err(|e| io_err(&path, e))?;
        let stop = || self.stopped();
        let part = PartWriter {
            file,
            digest: Sha256::new(),
            bytes: 0,
            expected,
            index,
            stop: &stop,
        };
        let mut w = BufWriter::with_capacity(1 << 20, part);
        let result = write(&mut w).and_then(|_| w.flush());
        if let Err(e) = result {
            return Err(if self.stopped() {
                Error::Cancelled
            } else {
                io_err(&path, e)
            });
        }
        let part = w.into_inner().map_err(|e| io_err(&path, e.into_error()))?;
        part.file.sync_all().map_err(|e| io_err(&path, e))?;
        Ok((part.bytes, hex(&part.digest.finalize())))
    }

    /// Writes the manifest (the caller's `fields` plus the files, the format
    /// and eigenflow's version), then switches the directory to this set (see
    /// the [module docs](self)). Returns the paths of the set's files as the
    /// user sees them (`DIR/<name>`), manifest last.
    pub fn commit(
        mut self,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<PathBuf>> {
        fault::point("before-manifest");
        let mut manifest = fields;
        let files: Vec<serde_json::Value> = self
            .parts
            .iter()
            .map(|p| {
                serde_json::json!({
                    "name": p.name, "dtype": p.dtype.descr(), "shape": p.shape,
                    "bytes": p.bytes, "sha256": p.sha256,
                })
            })
            .collect();
        manifest.insert("format".into(), "eigenflow-result/1".into());
        manifest.insert("eigenflow_version".into(), env!("CARGO_PKG_VERSION").into());
        manifest.insert(
            "created".into(),
            input::unix_seconds(std::time::SystemTime::now()).into(),
        );
        manifest.insert("files".into(), files.into());
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(manifest))
            .expect("JSON values serialize")
            + "\n";
        self.write_file(MANIFEST, text.len() as u64, usize::MAX, |w| {
            w.write_all(text.as_bytes())
        })?;
        sync_dir(&self.set_dir)?;
        let store = self.out.store();
        sync_dir(&store)?;
        fault::point("before-commit");
        if self.stopped() {
            return Err(Error::Cancelled);
        }
        let dir = self.out.dir.clone();
        let mut names: Vec<String> = self.parts.iter().map(|p| p.name.clone()).collect();
        names.push(MANIFEST.to_string());
        // Before the switch, the names the new set does not have are removed
        // and the links it adds are made under temporary (hidden) names, so
        // that no link of the directory ever dangles.
        self.remove_stale(&dir, &names)?;
        let mut staged = Vec::new();
        for name in &names {
            let link = dir.join(name);
            let target = Path::new(STORE).join("current").join(name);
            if std::fs::read_link(&link).is_ok_and(|t| t == target) {
                continue;
            }
            let tmp = dir.join(format!(".link-{}-{name}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(&target, &tmp).map_err(|e| io_err(&tmp, e))?;
            staged.push((tmp, link));
        }
        sync_dir(&dir)?;
        // The switch: one rename replaces the whole set.
        let old = self.out.current_set();
        let tmp = store.join(format!("current.new-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&self.set, &tmp).map_err(|e| io_err(&tmp, e))?;
        let current = store.join("current");
        std::fs::rename(&tmp, &current).map_err(|e| io_err(&current, e))?;
        self.committed = true;
        // Committed: what follows completes the directory's links and
        // removes the replaced set. The next lock redoes it if it fails or
        // is killed ([`OutputDir::lock`]), so it cannot fail the commit (an
        // error now would report a committed result as not written).
        let durable = sync_dir(&store).is_ok();
        for (tmp, link) in staged {
            let _ = std::fs::rename(&tmp, &link);
        }
        let _ = sync_dir(&dir);
        fault::point("after-commit");
        // The replaced set goes only once the switch is on disk.
        if let Some(old) = old.filter(|o| durable && *o != self.set) {
            let _ = std::fs::remove_dir_all(store.join(old));
        }
        Ok(names.iter().map(|n| dir.join(n)).collect())
    }

    /// Removes the names the new set does not have: those retired by the
    /// caller and any link into the store's current set (before the switch,
    /// so that none of them dangles after it).
    fn remove_stale(&self, dir: &Path, names: &[String]) -> Result<()> {
        let prefix = Path::new(STORE).join("current");
        let entries = std::fs::read_dir(dir).map_err(|e| io_err(dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if names.contains(&name) {
                continue;
            }
            let into_store = std::fs::read_link(entry.path()).is_ok_and(|t| t.starts_with(&prefix));
            if into_store || self.retired.contains(&name) {
                let path = entry.path();
                std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            }
        }
        Ok(())
    }
}

impl Drop for ResultWriter<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.set_dir);
        }
    }
}

/// The file end of a part: digests and counts what it writes, and honours the
/// stop request and the `mid-second-file` fault point.
struct PartWriter<'s> {
    file: File,
    digest: Sha256,
    bytes: u64,
    expected: u64,
    index: usize,
    stop: &'s dyn Fn() -> bool,
}

impl Write for PartWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.stop)() {
            return Err(std::io::Error::other("stopped"));
        }
        let mut take = buf.len();
        let half = self.expected / 2;
        let mid = self.index == 1 && self.bytes < half && self.bytes + take as u64 >= half;
        if mid && fault::armed("mid-second-file") {
            take = (half - self.bytes) as usize;
        }
        let n = self.file.write(&buf[..take])?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        if mid && self.bytes >= half {
            fault::point("mid-second-file");
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Test-only fault points (cargo feature `fault-injection`): the process kills
/// itself with SIGKILL at the point named by `EIGENFLOW_FAULT`
/// (`after-first-file`, `mid-second-file`, `before-manifest`, `before-commit`,
/// `after-commit`), so the integration tests can check what a kill at exactly
/// that moment leaves on disk. With `EIGENFLOW_FAULT_GATE=<path>` as well, the
/// process pauses there instead (see `wait_at_gate` below), so a test can act at
/// exactly that moment (signal it, run another process). Without the feature
/// the variables are ignored.
mod fault {
    /// Whether `EIGENFLOW_FAULT` names `point` (always false without the feature).
    pub(super) fn armed(point: &str) -> bool {
        cfg!(feature = "fault-injection")
            && std::env::var("EIGENFLOW_FAULT").is_ok_and(|v| v == point)
    }

    /// With `EIGENFLOW_GATE=<path>` (and the feature), waits after taking the
    /// directory's lock until `path` exists, so a test can hold the lock for
    /// exactly as long as it needs (four runs at once: one holds, the others
    /// must be refused).
    pub(super) fn gate() {
        if !cfg!(feature = "fault-injection") {
            return;
        }
        if let Some(path) = std::env::var_os("EIGENFLOW_GATE") {
            while !std::path::Path::new(&path).exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }

    /// Creates `<gate>.reached`, then waits until `gate` exists.
    fn wait_at_gate(gate: &std::path::Path) {
        let mut reached = gate.as_os_str().to_owned();
        reached.push(".reached");
        let _ = std::fs::write(&reached, b"");
        while !gate.exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// With `EIGENFLOW_READ_GATE=<path>` (and the feature), pauses at the
    /// gate (see [`wait_at_gate`]) after an input file is read and before it
    /// is checked unchanged, so a test can rewrite the input in between.
    pub(super) fn read_gate() {
        if !cfg!(feature = "fault-injection") {
            return;
        }
        if let Some(gate) = std::env::var_os("EIGENFLOW_READ_GATE") {
            wait_at_gate(std::path::Path::new(&gate));
        }
    }

    /// Kills the process here if `point` is armed (pauses at
    /// `EIGENFLOW_FAULT_GATE` instead when that is set).
    pub(super) fn point(point: &str) {
        if armed(point) {
            if let Some(gate) = std::env::var_os("EIGENFLOW_FAULT_GATE") {
                wait_at_gate(std::path::Path::new(&gate));
                return;
            }
            // SAFETY: plain libc calls; SIGKILL ends the process at once, as
            // the kill being simulated would.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests;
