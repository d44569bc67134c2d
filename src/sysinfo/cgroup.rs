//! cgroup memory limits. A container's memory limit is invisible in
//! `/proc/meminfo` (which describes the host): a run sized by `MemAvailable`
//! alone would be killed by the OOM killer at the cgroup limit instead of
//! being refused up front. Everything here parses text, and the file reads go
//! through a closure, so the tests stand in a fake `/proc` and `/sys`.

use super::smaller;
use std::path::{Path, PathBuf};

/// Deepest cgroup nesting followed upwards from the process's cgroup.
const MAX_CGROUP_LEVELS: usize = 64;

/// The process's cgroup paths, from `/proc/self/cgroup`.
#[derive(Debug, Default, PartialEq)]
struct CgroupPaths {
    /// cgroup v2 (the `0::<path>` line).
    unified: Option<String>,
    /// cgroup v1's memory controller (an `<id>:...memory...:<path>` line).
    memory_v1: Option<String>,
}

/// Parses `/proc/self/cgroup` (`hierarchy-id:controllers:path` per line);
/// lines that do not have that form are skipped.
fn parse_proc_cgroup(text: &str) -> CgroupPaths {
    let mut out = CgroupPaths::default();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if !path.starts_with('/') {
            continue;
        }
        if id == "0" && controllers.is_empty() {
            out.unified = Some(path.to_string());
        } else if controllers.split(',').any(|c| c == "memory") {
            out.memory_v1 = Some(path.to_string());
        }
    }
    out
}

/// Where the cgroup hierarchies are mounted: `(root, mount point)`, the root
/// being the cgroup the mount shows at its mount point.
#[derive(Debug, Default, PartialEq)]
struct CgroupMounts {
    unified: Option<(String, PathBuf)>,
    memory_v1: Option<(String, PathBuf)>,
}

/// Parses `/proc/self/mountinfo` for the cgroup2 mount and the cgroup v1
/// mount carrying the memory controller (fields: id, parent, dev, root, mount
/// point, options, optional fields, `-`, fs type, source, super options).
fn parse_mountinfo(text: &str) -> CgroupMounts {
    let mut out = CgroupMounts::default();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split_whitespace().collect();
        let post: Vec<&str> = post.split_whitespace().collect();
        let (Some(root), Some(mount), Some(fstype)) = (pre.get(3), pre.get(4), post.first()) else {
            continue;
        };
        let entry = Some((root.to_string(), PathBuf::from(mount)));
        match *fstype {
            "cgroup2" => out.unified = entry,
            "cgroup"
                if post
                    .get(2)
                    .is_some_and(|o| o.split(',').any(|o| o == "memory")) =>
            {
                out.memory_v1 = entry
            }
            _ => {}
        }
    }
    out
}

/// A byte count from a cgroup file (`memory.max`, `memory.current`,
/// `memory.limit_in_bytes`, ...). `None` for `max` (no limit) and anything
/// that is not a plain number.
fn parse_cgroup_bytes(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// A `key value` line of a cgroup `memory.stat` file.
fn parse_stat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        if k == key {
            v.trim().parse().ok()
        } else {
            None
        }
    })
}

/// The directory of cgroup `path` under a hierarchy mounted at `mount` whose
/// root is cgroup `root`. A path outside the mount's root (a cgroup namespace
/// shows the process's cgroup as `/`) resolves to the mount point itself.
fn cgroup_dir(root: &str, mount: &Path, path: &str) -> PathBuf {
    let root = root.trim_end_matches('/');
    let rel = match path.strip_prefix(root) {
        Some(rel) if rel.is_empty() || rel.starts_with('/') => rel,
        _ => "",
    };
    mount.join(rel.trim_start_matches('/'))
}

/// The file names of one cgroup version.
struct CgroupFiles {
    limit: &'static str,
    usage: &'static str,
    /// The `memory.stat` key of reclaimable page cache (counted in the usage).
    inactive_file: &'static str,
}

const V2_FILES: CgroupFiles = CgroupFiles {
    limit: "memory.max",
    usage: "memory.current",
    inactive_file: "inactive_file",
};

const V1_FILES: CgroupFiles = CgroupFiles {
    limit: "memory.limit_in_bytes",
    usage: "memory.usage_in_bytes",
    inactive_file: "total_inactive_file",
};

/// `limit - usage` of the cgroup at `dir`; `None` without a limit. The usage
/// counts page cache, whose inactive part the kernel reclaims before it
/// refuses memory, so that part is not counted as used.
fn level_headroom(read: &Reader, dir: &Path, files: &CgroupFiles) -> Option<u64> {
    let limit = parse_cgroup_bytes(&read(&dir.join(files.limit))?)?;
    let Some(usage) = read(&dir.join(files.usage)).and_then(|t| parse_cgroup_bytes(&t)) else {
        return Some(limit);
    };
    let reclaimable = read(&dir.join("memory.stat"))
        .and_then(|t| parse_stat_field(&t, files.inactive_file))
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(reclaimable)))
}

/// The tightest `limit - usage` from `leaf` up to `mount` (a parent's limit
/// binds its children too).
fn tightest(read: &Reader, leaf: &Path, mount: &Path, files: &CgroupFiles) -> Option<u64> {
    let mut best = None;
    let mut dir = Some(leaf);
    for _ in 0..MAX_CGROUP_LEVELS {
        let Some(d) = dir else { break };
        best = smaller(best, level_headroom(read, d, files));
        if d == mount {
            break;
        }
        dir = d.parent();
    }
    best
}

/// Reads a file's text (`None` if absent or unreadable).
pub(super) type Reader = dyn Fn(&Path) -> Option<String>;

/// Memory the process's cgroup still grants it, in bytes: the smallest
/// `limit - usage` over its cgroup and the cgroup's ancestors, for cgroup v2
/// (`memory.max` - `memory.current`) and v1 (`memory.limit_in_bytes` -
/// `memory.usage_in_bytes`), with reclaimable page cache (`inactive_file` of
/// `memory.stat`) not counted as used. `None` when no limit is set or nothing
/// can be read. `read` returns a file's text, so that tests can stand in a
/// fake `/proc` and `/sys`.
pub(super) fn cgroup_headroom(read: &Reader) -> Option<u64> {
    let paths = parse_proc_cgroup(&read(Path::new("/proc/self/cgroup"))?);
    let mounts = match read(Path::new("/proc/self/mountinfo")) {
        Some(text) => parse_mountinfo(&text),
        // The usual places, where mountinfo cannot be read.
        None => CgroupMounts {
            unified: Some(("/".into(), "/sys/fs/cgroup".into())),
            memory_v1: Some(("/".into(), "/sys/fs/cgroup/memory".into())),
        },
    };
    let mut best = None;
    for (path, mount, files) in [
        (paths.unified, mounts.unified, &V2_FILES),
        (paths.memory_v1, mounts.memory_v1, &V1_FILES),
    ] {
        if let (Some(path), Some((root, mount))) = (path, mount) {
            let leaf = cgroup_dir(&root, &mount, &path);
            best = smaller(best, tightest(read, &leaf, &mount, files));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake file system: path -> contents.
    fn fake(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: std::collections::HashMap<std::path::PathBuf, String> = files
            .iter()
            .map(|(p, t)| (std::path::PathBuf::from(p), t.to_string()))
            .collect();
        move |p: &Path| map.get(p).cloned()
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn parses_cgroup_limits() {
        assert_eq!(parse_cgroup_bytes("1073741824\n"), Some(1 << 30));
        assert_eq!(parse_cgroup_bytes(" 42 "), Some(42));
        assert_eq!(parse_cgroup_bytes("max\n"), None);
        assert_eq!(parse_cgroup_bytes(""), None);
        assert_eq!(parse_cgroup_bytes("-1"), None);
        assert_eq!(parse_cgroup_bytes("12 MiB"), None);
        assert_eq!(parse_cgroup_bytes("99999999999999999999999"), None);
        assert_eq!(parse_cgroup_bytes("\u{0}\u{ff}garbage"), None);
        let stat = "anon 100\nfile 5000\ninactive_file 4096\ntotal_inactive_file 8192\n";
        assert_eq!(parse_stat_field(stat, "inactive_file"), Some(4096));
        assert_eq!(parse_stat_field(stat, "total_inactive_file"), Some(8192));
        assert_eq!(parse_stat_field(stat, "active_file"), None);
        assert_eq!(parse_stat_field("inactive_file x\n", "inactive_file"), None);
    }

    #[test]
    fn parses_proc_self_cgroup() {
        let v2 = parse_proc_cgroup("0::/user.slice/session-1.scope\n");
        assert_eq!(v2.unified.as_deref(), Some("/user.slice/session-1.scope"));
        assert_eq!(v2.memory_v1, None);
        // cgroup v1 with an empty v2 line (a hybrid layout, as in many containers).
        let v1 = parse_proc_cgroup(
            "9:name=systemd:/\n4:memory:/process_api/7ee5\n3:cpu,cpuacct:/\n0::/\n",
        );
        assert_eq!(v1.memory_v1.as_deref(), Some("/process_api/7ee5"));
        assert_eq!(v1.unified.as_deref(), Some("/"));
        let joint = parse_proc_cgroup("5:cpuset,memory,pids:/a/b\n");
        assert_eq!(joint.memory_v1.as_deref(), Some("/a/b"));
        assert_eq!(joint.unified, None);
        let junk = parse_proc_cgroup("garbage\n::\n7:memoryx:/no\n\u{0}\n");
        assert_eq!((junk.memory_v1, junk.unified), (None, None));
    }

    #[test]
    fn parses_mountinfo() {
        let text = "\
            31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
            35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n\
            garbage line\n";
        let m = parse_mountinfo(text);
        assert_eq!(
            m.memory_v1,
            Some(("/docker/abc".into(), "/sys/fs/cgroup/memory".into()))
        );
        assert_eq!(
            m.unified,
            Some(("/".into(), "/sys/fs/cgroup/unified".into()))
        );
        let none = parse_mountinfo("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
        assert_eq!((none.memory_v1, none.unified), (None, None));
    }

    #[test]
    fn cgroup_v2_headroom_is_the_tightest_level() {
        let proc_cgroup = ("/proc/self/cgroup", "0::/job/task\n");
        let mountinfo = (
            "/proc/self/mountinfo",
            "30 23 0:26 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n",
        );
        // The process's cgroup: 2 GiB limit, 600 MiB used of which 100 MiB is
        // reclaimable page cache: 2048 - 500 = 1548 MiB left.
        let leaf = [
            ("/sys/fs/cgroup/job/task/memory.max", "2147483648\n"),
            ("/sys/fs/cgroup/job/task/memory.current", "629145600\n"),
            (
                "/sys/fs/cgroup/job/task/memory.stat",
                "anon 1\ninactive_file 104857600\n",
            ),
        ];
        let mut files = vec![proc_cgroup, mountinfo];
        files.extend(leaf);
        files.push(("/sys/fs/cgroup/job/memory.max", "max\n"));
        assert_eq!(cgroup_headroom(&fake(&files)), Some(1548 * MIB));
        // A parent limit that is tighter wins: 1 GiB with 900 MiB used.
        files.push(("/sys/fs/cgroup/job/memory.max", "1073741824\n"));
        files.push(("/sys/fs/cgroup/job/memory.current", "943718400\n"));
        assert_eq!(cgroup_headroom(&fake(&files)), Some(124 * MIB));
        // Usage above the limit leaves nothing (no wrap).
        let over = [
            proc_cgroup,
            mountinfo,
            ("/sys/fs/cgroup/job/task/memory.max", "1000\n"),
            ("/sys/fs/cgroup/job/task/memory.current", "5000\n"),
        ];
        assert_eq!(cgroup_headroom(&fake(&over)), Some(0));
        // "max" everywhere, absent files, garbage: no cgroup figure.
        let unlimited = [
            proc_cgroup,
            mountinfo,
            ("/sys/fs/cgroup/job/task/memory.max", "max\n"),
            ("/sys/fs/cgroup/job/task/memory.current", "5000\n"),
        ];
        assert_eq!(cgroup_headroom(&fake(&unlimited)), None);
        assert_eq!(cgroup_headroom(&fake(&[proc_cgroup, mountinfo])), None);
        assert_eq!(cgroup_headroom(&fake(&[])), None);
        let garbage = [
            ("/proc/self/cgroup", "\u{1}\u{2}junk"),
            ("/proc/self/mountinfo", "junk"),
            ("/sys/fs/cgroup/memory.max", "lots"),
        ];
        assert_eq!(cgroup_headroom(&fake(&garbage)), None);
        // A limit whose usage cannot be read still bounds the figure.
        let no_usage = [
            proc_cgroup,
            mountinfo,
            ("/sys/fs/cgroup/job/task/memory.max", "4096\n"),
            ("/sys/fs/cgroup/job/task/memory.current", "n/a\n"),
        ];
        assert_eq!(cgroup_headroom(&fake(&no_usage)), Some(4096));
    }

    #[test]
    fn cgroup_v1_and_namespaces() {
        // v1: limit_in_bytes - (usage_in_bytes - total_inactive_file).
        let v1 = [
            ("/proc/self/cgroup", "4:memory:/process_api/7ee5\n0::/\n"),
            (
                "/proc/self/mountinfo",
                "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
            ),
            (
                "/sys/fs/cgroup/memory/process_api/7ee5/memory.limit_in_bytes",
                "1073741824\n",
            ),
            (
                "/sys/fs/cgroup/memory/process_api/7ee5/memory.usage_in_bytes",
                "536870912\n",
            ),
            (
                "/sys/fs/cgroup/memory/process_api/7ee5/memory.stat",
                "inactive_file 1\ntotal_inactive_file 268435456\n",
            ),
            // v1's "no limit" is a huge number: a figure, never the minimum.
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ];
        assert_eq!(cgroup_headroom(&fake(&v1)), Some(768 * MIB));
        // A cgroup namespace: the process sees its own cgroup as "/" and the
        // mount's root is that cgroup.
        let ns = [
            ("/proc/self/cgroup", "0::/\n"),
            (
                "/proc/self/mountinfo",
                "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/sys/fs/cgroup/memory.max", "3221225472\n"),
            ("/sys/fs/cgroup/memory.current", "1073741824\n"),
        ];
        assert_eq!(cgroup_headroom(&fake(&ns)), Some(2 << 30));
        // A mount whose root is the process's cgroup (a bind mount into a
        // container without a namespace): the mount point is that cgroup.
        let bind = [
            ("/proc/self/cgroup", "0::/docker/abc\n"),
            (
                "/proc/self/mountinfo",
                "30 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/sys/fs/cgroup/memory.max", "3000\n"),
            ("/sys/fs/cgroup/memory.current", "1000\n"),
        ];
        assert_eq!(cgroup_headroom(&fake(&bind)), Some(2000));
        // No mountinfo: the usual mount points are assumed.
        let default_mount = [
            ("/proc/self/cgroup", "0::/a\n"),
            ("/sys/fs/cgroup/a/memory.max", "3000\n"),
            ("/sys/fs/cgroup/a/memory.current", "1000\n"),
        ];
        assert_eq!(cgroup_headroom(&fake(&default_mount)), Some(2000));
    }
}
