//! The input file a result was computed from: refused unless it is a regular
//! file, and refused if it changed while it was read.

use super::io_err;
use crate::{Error, Result};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// An input file as it was before it was read: path, size and modification
/// time, recorded in the result's manifest and compared after the read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// The path as given.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Modification time.
    pub modified: SystemTime,
}

impl InputFile {
    /// Looks at `path` without opening it: a FIFO, socket, device or directory
    /// is refused as "not a regular file" (opening a FIFO without a writer
    /// would block forever, and a pipe's length is unknown, so its `.npy`
    /// header cannot be checked against its data). Symbolic links are followed.
    pub fn stat(path: &Path) -> Result<InputFile> {
        let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
        if !meta.is_file() {
            let kind = meta.file_type();
            use std::os::unix::fs::FileTypeExt;
            let what = if kind.is_fifo() {
                "a FIFO or pipe"
            } else if kind.is_dir() {
                "a directory"
            } else if kind.is_socket() {
                "a socket"
            } else {
                "a device"
            };
            return Err(Error::Npy {
                path: path.to_path_buf(),
                reason: format!(
                    "not a regular file ({what}); save the matrix to a file and pass its path"
                ),
            });
        }
        Ok(InputFile {
            path: path.to_path_buf(),
            size: meta.len(),
            modified: meta.modified().map_err(|e| io_err(path, e))?,
        })
    }

    /// Fails if the file's size or modification time is not what [`stat`]
    /// saw (it was rewritten while it was read, so the data read may belong
    /// to neither version), or if it is gone.
    ///
    /// [`stat`]: InputFile::stat
    pub fn check_unchanged(&self) -> Result<()> {
        super::fault::read_gate();
        let now = InputFile::stat(&self.path)?;
        if now.size != self.size || now.modified != self.modified {
            return Err(Error::Npy {
                path: self.path.clone(),
                reason: format!(
                    "the file changed while it was read (size {} -> {} bytes, modified {} -> {}); \
                     nothing was computed from it",
                    self.size,
                    now.size,
                    unix_seconds(self.modified),
                    unix_seconds(now.modified)
                ),
            });
        }
        Ok(())
    }

    /// The manifest's `input` object: `path` (absolute if it can be made so),
    /// `size` in bytes, `modified` in seconds since the Unix epoch (with the
    /// file system's sub-second part).
    pub fn to_json(&self) -> serde_json::Value {
        let path = std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone());
        serde_json::json!({
            "path": path.to_string_lossy(),
            "size": self.size,
            "modified": unix_seconds(self.modified),
        })
    }
}

/// Seconds since the Unix epoch (negative before it).
pub(super) fn unix_seconds(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}
