//! What the machine has: memory figures for the "does it fit?" check that runs
//! before large allocations, and a byte formatter for messages.
//!
//! ```
//! use eigenflow::sysinfo;
//! // A kilobyte always fits (or the figure is unknown, which also passes).
//! sysinfo::check_fits(1024, "a tiny buffer", |_| String::new()).unwrap();
//! assert_eq!(sysinfo::human_bytes(1536), "1.5 KiB");
//! ```

use crate::{Error, Result};

mod cgroup;

use cgroup::cgroup_headroom;

const GIB: f64 = (1u64 << 30) as f64;

/// Reads one `kB` field (e.g. `"MemAvailable"`) from `/proc/meminfo`, in bytes.
fn meminfo_field(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, key)
}

/// Finds `key:   <number> kB` in meminfo-formatted text and returns bytes.
fn parse_meminfo(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name.trim() != key {
            return None;
        }
        let mut parts = rest.split_whitespace();
        let value: u64 = parts.next()?.parse().ok()?;
        let scale = match parts.next() {
            None => 1,
            Some(unit) if unit.eq_ignore_ascii_case("kb") => 1024,
            Some(unit) if unit.eq_ignore_ascii_case("mb") => 1024 * 1024,
            Some(unit) if unit.eq_ignore_ascii_case("gb") => 1024 * 1024 * 1024,
            Some(_) => return None,
        };
        value.checked_mul(scale)
    })
}

/// Memory available for new allocations without swapping, in bytes: the
/// `MemAvailable` line of `/proc/meminfo`, or less when the process's cgroup
/// leaves less: the smallest `limit - usage` of its cgroup and their ancestors
/// (v2 `memory.max` - `memory.current`, v1 `memory.limit_in_bytes` -
/// `memory.usage_in_bytes`; reclaimable page cache not counted as used).
/// `None` where neither figure is available (other operating systems, very old
/// kernels, restricted sandboxes).
pub fn available_memory_bytes() -> Option<u64> {
    smaller(
        meminfo_field("MemAvailable"),
        cgroup_headroom(&|p| std::fs::read_to_string(p).ok()),
    )
}

/// The smaller of two optional figures (either may be unknown).
fn smaller(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The memory limit a run takes by default: the available memory
/// ([`available_memory_bytes`], a cgroup limit respected) less a margin of a
/// sixteenth, at least 256 MiB, for the rest of the machine and the page
/// cache; `None` where the available memory is unknown.
pub fn default_memory_limit() -> Option<u64> {
    available_memory_bytes().map(|a| a.saturating_sub((a / 16).max(256 << 20)))
}

/// Parses a byte count: a number with an optional unit, `B`, `K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (powers of 1024; `KB`, `MB`, `GB`, `TB`
/// powers of 1000), e.g. `3GiB`, `1.5G`, `512MiB`, `2000000000`.
///
/// ```
/// use eigenflow::sysinfo::parse_bytes;
/// assert_eq!(parse_bytes("3GiB"), Ok(3 << 30));
/// assert_eq!(parse_bytes("1.5 G"), Ok(3 << 29));
/// assert_eq!(parse_bytes("2000"), Ok(2000));
/// assert!(parse_bytes("lots").is_err());
/// ```
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a number of bytes, e.g. 3GiB or 512MiB"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        u => {
            return Err(format!(
                "{s:?}: unknown unit {u:?} (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            ))
        }
    };
    let bytes = value * scale;
    if !(bytes.is_finite() && bytes < u64::MAX as f64) {
        return Err(format!("{s:?}: out of range"));
    }
    Ok(bytes.round() as u64)
}

/// The default number of worker threads: the machine's available
/// parallelism (1 if unknown). [`crate::runtime::RuntimeBuilder`] starts from it.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The peak resident memory of this process so far, in bytes: `VmHWM` of
/// `/proc/self/status` (the high-water mark of the resident set, as the
/// kernel measures it). `None` where that is not available.
pub fn peak_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_meminfo(&text, "VmHWM")
}

/// The resident memory of this process now, in bytes (`VmRSS` of
/// `/proc/self/status`); `None` where that is not available.
pub fn rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_meminfo(&text, "VmRSS")
}

/// Total physical memory in bytes (`MemTotal` of `/proc/meminfo`); `None` where
/// that is not available.
pub fn total_memory_bytes() -> Option<u64> {
    meminfo_field("MemTotal")
}

/// Bytes available to an unprivileged user on the file system holding
/// `path` (`statvfs`: `f_bavail * f_frsize`).
///
/// Errors: [`Error::Io`] naming `path` when it cannot be examined.
pub fn disk_available_bytes(path: &std::path::Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::InvalidArgument(format!("path {path:?} contains a NUL byte")))?;
    // SAFETY: `statvfs` is a C struct of integers, for which all-zero bytes
    // are a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated string that outlives the call, and `st`
    // is a valid, writable `statvfs` for the call to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Fails with [`Error::OutOfMemory`] when `needed_bytes` exceeds the available
/// memory.
///
/// `what` names the allocation (e.g. `"the 40000 x 40000 f64 matrix"`);
/// `suggestion` is given the available byte count and says what
/// would fit instead (e.g. `"try --n 20000"`). The error's message then reads
/// "needs 11.9 GiB but 3.2 GiB is available; the 40000 x 40000 f64 matrix
/// (11.9 GiB) does not fit: try --n 20000". When the available
/// memory is unknown the check passes.
pub fn check_fits(needed_bytes: u64, what: &str, suggestion: impl Fn(u64) -> String) -> Result<()> {
    match available_memory_bytes() {
        Some(available) => check_fits_in(needed_bytes, available, what, suggestion),
        None => Ok(()),
    }
}

/// The largest order `n <= max` with `fits(n)`, by bisection (0 when none
/// above 0 does); `fits` must be monotone (a memory figure growing with
/// `n`): what the memory checks' suggestions say fits.
pub fn largest_fitting_order(max: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// [`check_fits`] against a given `available_bytes` instead of the machine's.
pub fn check_fits_in(
    needed_bytes: u64,
    available_bytes: u64,
    what: &str,
    suggestion: impl Fn(u64) -> String,
) -> Result<()> {
    if needed_bytes <= available_bytes {
        return Ok(());
    }
    let hint = suggestion(available_bytes);
    let mut text = format!("{what} ({}) does not fit", human_bytes(needed_bytes));
    if !hint.is_empty() {
        text.push_str(": ");
        text.push_str(&hint);
    }
    Err(Error::OutOfMemory {
        needed_gib: needed_bytes as f64 / GIB,
        available_gib: available_bytes as f64 / GIB,
        suggestion: text,
    })
}

/// Formats a byte count with binary units: `"512 B"`, `"1.5 KiB"`, `"7.45 GiB"`.
///
/// Three significant digits above 1 KiB.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    // Rounding may carry into the next unit (1023.99 KiB -> "1024 KiB"); keep it
    // simple and readable rather than exact.
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    let mut s = format!("{value:.digits$}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    format!("{s} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_formats() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(10 * 1024 * 1024), "10 MiB");
        assert_eq!(human_bytes(8_000_000_000), "7.45 GiB");
        assert_eq!(human_bytes(3 << 40), "3 TiB");
        assert_eq!(human_bytes(u64::MAX), "16 EiB");
        assert_eq!(human_bytes(150 * 1024 * 1024 + 1), "150 MiB");
    }

    #[test]
    fn parses_meminfo() {
        let text = "MemTotal:       16314884 kB\nMemFree:         1000 kB\n\
                    MemAvailable:   12000000 kB\nHugePages_Total:       0\n";
        assert_eq!(parse_meminfo(text, "MemTotal"), Some(16314884 * 1024));
        assert_eq!(parse_meminfo(text, "MemAvailable"), Some(12000000 * 1024));
        assert_eq!(parse_meminfo(text, "HugePages_Total"), Some(0));
        assert_eq!(parse_meminfo(text, "Mem"), None);
        assert_eq!(parse_meminfo(text, "SwapTotal"), None);
    }

    #[test]
    fn machine_figures_are_consistent() {
        if cfg!(target_os = "linux") {
            let total = total_memory_bytes().expect("MemTotal on Linux");
            assert!(total > 0);
            if let Some(avail) = available_memory_bytes() {
                assert!(avail <= total);
            }
        }
    }

    #[test]
    fn check_fits_reports_figures() {
        assert!(check_fits_in(10, 10, "x", |_| unreachable!()).is_ok());
        let e = check_fits_in(3 << 30, 1 << 30, "the matrix", |avail| {
            format!("try --n {}", avail / 8)
        })
        .unwrap_err();
        match &e {
            Error::OutOfMemory {
                needed_gib,
                available_gib,
                suggestion,
            } => {
                assert_eq!(*needed_gib, 3.0);
                assert_eq!(*available_gib, 1.0);
                assert_eq!(
                    suggestion,
                    "the matrix (3 GiB) does not fit: try --n 134217728"
                );
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        let msg = e.to_string();
        assert_eq!(
            msg,
            "needs 3.0 GiB but 1.0 GiB is available; the matrix (3 GiB) does not fit: try --n 134217728"
        );
        // An impossible request fails on a machine with known memory.
        if available_memory_bytes().is_some() {
            assert!(matches!(
                check_fits(u64::MAX, "everything", |_| String::new()),
                Err(Error::OutOfMemory { .. })
            ));
        }
        assert!(check_fits(0, "nothing", |_| String::new()).is_ok());
    }

    #[test]
    fn available_is_the_smaller_figure() {
        assert_eq!(smaller(Some(5), Some(3)), Some(3));
        assert_eq!(smaller(Some(5), None), Some(5));
        assert_eq!(smaller(None, Some(3)), Some(3));
        assert_eq!(smaller(None, None), None);
        // On this machine the figure never exceeds the total memory. (Not
        // MemAvailable read a second time: it moves between the two reads
        // while other tests allocate, and once made this test fail.)
        if let (Some(avail), Some(total)) = (available_memory_bytes(), total_memory_bytes()) {
            assert!(avail <= total, "available {avail} > total {total}");
        }
    }
}
