//! The output directory: its lock, its free space and its store of result sets.

use super::{io_err, STORE};
use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Name of the lock file inside an output directory.
pub const LOCK_FILE: &str = ".eigenflow.lock";

/// A second run was refused because another process holds the directory.
#[derive(Debug)]
pub struct DirectoryBusy {
    /// The output directory.
    pub dir: PathBuf,
    /// The holder's process id, as it wrote it into the lock file (`None` if
    /// it had not written it yet).
    pub pid: Option<u32>,
}

impl std::fmt::Display for DirectoryBusy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let holder = match self.pid {
            Some(pid) => format!("pid {pid}"),
            None => "a process that has not written its pid yet".to_string(),
        };
        write!(
            f,
            "output directory {} is in use by another eigenflow run ({holder}); \
             wait for it or choose another --output",
            self.dir.display()
        )
    }
}

impl std::error::Error for DirectoryBusy {}

/// The output would not fit on the output directory's file system.
#[derive(Debug)]
pub struct NoSpace {
    /// The output directory.
    pub dir: PathBuf,
    /// Bytes the new result needs.
    pub needed: u64,
    /// Bytes available to this user on that file system.
    pub available: u64,
}

impl std::fmt::Display for NoSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not enough space in {}: the result needs {} bytes ({}), {} bytes ({}) are available",
            self.dir.display(),
            self.needed,
            crate::sysinfo::human_bytes(self.needed),
            self.available,
            crate::sysinfo::human_bytes(self.available)
        )
    }
}

impl std::error::Error for NoSpace {}

/// An output directory held exclusively by this process (advisory `flock`s
/// on the directory itself and on [`LOCK_FILE`], released when this value is
/// dropped or the process dies, however it dies).
///
/// The directory's own lock is the one that counts: deleting the lock file
/// during a run does not let a second run in. The lock file holds the
/// holder's pid, and is locked too for eigenflow versions that lock only it
/// (and on file systems that do not lock directories, where it is the only
/// lock: there it is checked, after it is taken, to be the file at its path).
///
/// Every process writing eigenflow results into the directory takes the lock
/// before computing, so two runs never write the same result set; a second run
/// is refused at once ([`DirectoryBusy`]) rather than waiting, since it would
/// otherwise compute for hours and then overwrite the first run's result.
#[derive(Debug)]
pub struct OutputDir {
    pub(super) dir: PathBuf,
    _dir_lock: Option<File>,
    _lock: File,
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(false)` if
/// another open file description holds it.
fn try_flock(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock on a file descriptor this `File` owns and keeps open.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// The refusal of a directory another process holds, with the pid the
/// holder wrote into the lock file (it writes it just after taking the lock:
/// given a moment, up to ~0.25 s, rather than reported missing).
fn busy(dir: &Path, lock_path: &Path) -> Error {
    let mut pid = None;
    for _ in 0..50 {
        let text = std::fs::read_to_string(lock_path).unwrap_or_default();
        pid = text.trim().parse().ok();
        if pid.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Error::external(DirectoryBusy {
        dir: dir.to_path_buf(),
        pid,
    })
}

impl OutputDir {
    /// Creates `dir` if needed, takes its lock (writing this process's pid into
    /// the lock file) and removes what killed runs left behind (unfinished
    /// result sets in the store; the directory's committed result is kept).
    ///
    /// Fails with [`Error::External`] holding a [`DirectoryBusy`] if another
    /// process holds the lock, or [`Error::Io`] if the directory cannot be
    /// created or written.
    pub fn lock(dir: &Path) -> Result<OutputDir> {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let lock_path = dir.join(LOCK_FILE);
        let dir_file = File::open(dir).map_err(|e| io_err(dir, e))?;
        // A file system that cannot lock a directory (an error other than
        // "held") leaves the lock file as the only lock.
        let dir_lock = match try_flock(&dir_file) {
            Ok(true) => Some(dir_file),
            Ok(false) => return Err(busy(dir, &lock_path)),
            Err(_) => None,
        };
        let mut file = loop {
            // Neither truncated nor created exclusively: the file stays from
            // run to run, and only the lock on it says whether it is held.
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&lock_path)
                .map_err(|e| io_err(&lock_path, e))?;
            if !try_flock(&file).map_err(|e| io_err(&lock_path, e))? {
                return Err(busy(dir, &lock_path));
            }
            // A lock file deleted or replaced between the open and the lock
            // is not the one the next run opens: lock the one at the path.
            let held = file.metadata().map_err(|e| io_err(&lock_path, e))?;
            let at_path = std::fs::metadata(&lock_path);
            if at_path.is_ok_and(|m| (m.dev(), m.ino()) == (held.dev(), held.ino())) {
                break file;
            }
        };
        let pid = format!("{}\n", std::process::id());
        file.set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(pid.as_bytes()))
            .map_err(|e| io_err(&lock_path, e))?;
        super::fault::gate();
        let out = OutputDir {
            dir: dir.to_path_buf(),
            _dir_lock: dir_lock,
            _lock: file,
        };
        out.remove_leftovers()?;
        Ok(out)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Bytes available to an unprivileged user on the directory's file system
    /// (`statvfs`: `f_bavail * f_frsize`).
    pub fn available_bytes(&self) -> Result<u64> {
        crate::sysinfo::disk_available_bytes(&self.dir)
    }

    /// Refuses a result of `needed` bytes that does not fit in the space
    /// available ([`NoSpace`] in an [`Error::External`]). The previous result
    /// stays until the new one is complete, so `needed` is the new result's
    /// whole size, not its growth.
    pub fn check_space(&self, needed: u64) -> Result<()> {
        let available = self.available_bytes()?;
        if needed > available {
            return Err(Error::external(NoSpace {
                dir: self.dir.clone(),
                needed,
                available,
            }));
        }
        Ok(())
    }

    /// The store of result sets, `DIR/.eigenflow`.
    pub(super) fn store(&self) -> PathBuf {
        self.dir.join(STORE)
    }

    /// The set directory `DIR/.eigenflow/current` points to, if any.
    pub(super) fn current_set(&self) -> Option<String> {
        let target = std::fs::read_link(self.store().join("current")).ok()?;
        target.to_str().map(str::to_string)
    }

    /// Removes every set in the store but the current one (sets of killed
    /// runs, and a replaced set whose removal was interrupted) and stray
    /// temporary links, and repairs the links of the directory's names (see
    /// [`repair_links`](Self::repair_links)). Safe only under the lock.
    fn remove_leftovers(&self) -> Result<()> {
        let store = self.store();
        let current = self.current_set();
        let Ok(entries) = std::fs::read_dir(&store) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let path = entry.path();
            if name.starts_with("set-") && Some(name) != current.as_deref() {
                std::fs::remove_dir_all(&path).map_err(|e| io_err(&path, e))?;
            } else if name.starts_with("current.new-") {
                std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_str().is_some_and(|n| n.starts_with(".link-")) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        self.repair_links(current.as_deref())
    }

    /// Gives every file of the current set its link in the directory, and
    /// removes the links into the store's current set whose file that set
    /// does not have (what a run killed around its switch, or a version
    /// before issue 58 killed after it, leaves: a missing or a dangling
    /// link).
    fn repair_links(&self, current: Option<&str>) -> Result<()> {
        let mut names = Vec::new();
        if let Some(set) = current {
            let set = self.store().join(set);
            let entries = std::fs::read_dir(&set).map_err(|e| io_err(&set, e))?;
            for entry in entries.flatten() {
                if let Ok(name) = entry.file_name().into_string() {
                    names.push(name);
                }
            }
        }
        let prefix = Path::new(STORE).join("current");
        let entries = std::fs::read_dir(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let into_store = std::fs::read_link(entry.path()).is_ok_and(|t| t.starts_with(&prefix));
            if into_store && !names.contains(&name) {
                let path = entry.path();
                std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            }
        }
        for name in &names {
            let link = self.dir.join(name);
            if std::fs::symlink_metadata(&link).is_err() {
                std::os::unix::fs::symlink(prefix.join(name), &link)
                    .map_err(|e| io_err(&link, e))?;
            }
        }
        sync_dir(&self.dir)
    }
}

/// `fsync` of a directory, so the renames and links made in it are durable.
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}
