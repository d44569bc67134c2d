//! The result-set protocol in process: lock, space, names, stop, replacement.

use super::*;

/// A fresh scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("eigenflow-results-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn visible(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.') && std::fs::metadata(dir.join(n)).is_ok())
        .collect();
    names.sort();
    names
}

#[test]
fn a_second_lock_is_refused_with_the_directory_and_pid() {
    let tmp = Scratch::new("lock");
    let held = OutputDir::lock(&tmp.0).unwrap();
    // flock locks belong to the open file description, so a second open in
    // the same process conflicts like another process would.
    let err = OutputDir::lock(&tmp.0).unwrap_err().to_string();
    assert!(err.contains(&tmp.0.display().to_string()), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    drop(held);
    OutputDir::lock(&tmp.0).unwrap();
}

#[test]
fn space_beyond_what_is_available_is_refused_with_both_figures() {
    let tmp = Scratch::new("space");
    let out = OutputDir::lock(&tmp.0).unwrap();
    let available = out.available_bytes().unwrap();
    out.check_space(1).unwrap();
    let err = out.check_space(u64::MAX).unwrap_err().to_string();
    assert!(err.contains(&format!("needs {} bytes", u64::MAX)), "{err}");
    // The figure is read again at the check; on a busy file system it moves,
    // so only its presence is checked.
    assert!(
        err.contains("bytes") && err.contains("available"),
        "{err} ({available})"
    );
}

#[test]
fn a_committed_set_replaces_the_previous_one_as_a_unit() {
    let tmp = Scratch::new("replace");
    let out = OutputDir::lock(&tmp.0).unwrap();
    let mut set = out.begin().unwrap();
    set.add_vector("values.npy", &[1.0f64, 2.0]).unwrap();
    let m = faer::Mat::<f32>::from_fn(3, 2, |i, j| (i + 3 * j) as f32);
    set.add_matrix("vectors.npy", m.as_ref()).unwrap();
    let paths = set.commit(serde_json::Map::new()).unwrap();
    assert_eq!(paths.last().unwrap(), &tmp.0.join(MANIFEST));
    assert_eq!(
        visible(&tmp.0),
        ["result.json", "values.npy", "vectors.npy"]
    );
    let back: faer::Mat<f32> = npy::read_matrix(&tmp.0.join("vectors.npy")).unwrap();
    assert_eq!(back, m);
    // A set without vectors: the old name disappears with the old set.
    let mut set = out.begin().unwrap();
    set.add_vector("values.npy", &[5.0f64]).unwrap();
    set.commit(serde_json::Map::new()).unwrap();
    assert_eq!(visible(&tmp.0), ["result.json", "values.npy"]);
    assert_eq!(
        npy::read_vector::<f64>(&tmp.0.join("values.npy")).unwrap(),
        [5.0]
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.0.join(MANIFEST)).unwrap()).unwrap();
    assert_eq!(manifest["files"].as_array().unwrap().len(), 1, "{manifest}");
    assert_eq!(manifest["files"][0]["shape"], serde_json::json!([1]));
}

#[test]
fn an_abandoned_or_stopped_set_leaves_the_previous_one() {
    let tmp = Scratch::new("abandon");
    let out = OutputDir::lock(&tmp.0).unwrap();
    let mut set = out.begin().unwrap();
    set.add_vector("values.npy", &[1.0f64]).unwrap();
    set.commit(serde_json::Map::new()).unwrap();
    {
        let mut set = out.begin().unwrap();
        set.add_vector("values.npy", &[2.0f64, 3.0]).unwrap();
        // Dropped without commit.
    }
    {
        let mut set = out.begin().unwrap();
        set.stop_when(|| true);
        let err = set.add_vector("values.npy", &[4.0f64]).unwrap_err();
        assert!(matches!(err, Error::Cancelled), "{err}");
    }
    assert_eq!(
        npy::read_vector::<f64>(&tmp.0.join("values.npy")).unwrap(),
        [1.0]
    );
    let sets = std::fs::read_dir(out.store())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("set-")
        })
        .count();
    assert_eq!(sets, 1);
}

#[test]
fn bad_part_names_are_refused() {
    let tmp = Scratch::new("names");
    let out = OutputDir::lock(&tmp.0).unwrap();
    let mut set = out.begin().unwrap();
    for name in ["", ".hidden", "a/b", MANIFEST] {
        assert!(set.add_vector(name, &[1.0f64]).is_err(), "{name:?}");
    }
    set.add_vector("x.npy", &[1.0f64]).unwrap();
    assert!(set.add_vector("x.npy", &[1.0f64]).is_err());
}

#[test]
fn an_input_rewritten_during_the_read_is_refused() {
    let tmp = Scratch::new("input");
    std::fs::create_dir_all(&tmp.0).unwrap();
    let path = tmp.0.join("a.npy");
    std::fs::write(&path, b"first").unwrap();
    let seen = InputFile::stat(&path).unwrap();
    seen.check_unchanged().unwrap();
    std::fs::write(&path, b"second, longer").unwrap();
    let err = seen.check_unchanged().unwrap_err().to_string();
    assert!(err.contains("changed while it was read"), "{err}");
    // A directory is not a regular file either.
    let err = InputFile::stat(&tmp.0).unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_file_written_into_the_set_by_others_is_checked_and_digested() {
    let tmp = Scratch::new("written");
    let out = OutputDir::lock(&tmp.0).unwrap();
    let m = faer::Mat::<f64>::from_fn(4, 3, |i, j| (i * 10 + j) as f64);
    // The digest of the same array written through the writer: the oracle.
    let mut set = out.begin().unwrap();
    set.add_matrix("x.npy", m.as_ref()).unwrap();
    set.commit(serde_json::Map::new()).unwrap();
    let manifest = |dir: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(MANIFEST)).unwrap()).unwrap()
    };
    let want = manifest(&tmp.0)["files"][0]["sha256"].clone();

    let mut set = out.begin().unwrap();
    npy::write_matrix(&set.set_dir().join("x.npy"), m.as_ref()).unwrap();
    // Not visible before the commit: the directory still shows the old set.
    assert_eq!(visible(&tmp.0), ["result.json", "x.npy"]);
    // A wrong shape (so a wrong size) is refused, naming the file.
    let err = set.add_written::<f64>("x.npy", vec![4, 4]).unwrap_err();
    assert!(err.to_string().contains("x.npy"), "{err}");
    set.add_written::<f64>("x.npy", vec![4, 3]).unwrap();
    set.commit(serde_json::Map::new()).unwrap();
    let got = manifest(&tmp.0);
    assert_eq!(got["files"][0]["sha256"], want, "{got}");
    assert_eq!(got["files"][0]["shape"], serde_json::json!([4, 3]));
    let back: faer::Mat<f64> = npy::read_matrix(&tmp.0.join("x.npy")).unwrap();
    assert_eq!(back, m);
}
