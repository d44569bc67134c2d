//! Tests of the parent module.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh scratch directory, removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "eigenflow-npy-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builds a file from a header dict and raw data, with the given version.
pub(super) fn raw_npy(version: (u8, u8), dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[version.0, version.1]);
    let mut header = dict.as_bytes().to_vec();
    let len_bytes = if version.0 == 1 { 2 } else { 4 };
    while !(MAGIC.len() + 2 + len_bytes + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    if version.0 == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}

pub(super) fn f64_bytes(xs: &[f64]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32_bytes(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn write_raw(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

pub(super) fn npy_reason(e: Error) -> String {
    match e {
        Error::Npy { reason, .. } => reason,
        other => panic!("expected Error::Npy, got {other:?}"),
    }
}

pub(super) fn sample<T: Scalar>(m: usize, n: usize) -> Mat<T> {
    Mat::from_fn(m, n, |i, j| {
        T::of((i as f64 + 1.0) * 0.1 - (j as f64) * 3.75 + 1.0 / (1.0 + (i * j) as f64))
    })
}

#[test]
fn round_trip_matrix_f64_and_f32() {
    let dir = TempDir::new();
    for (m, n) in [
        (0, 0),
        (1, 1),
        (3, 5),
        (7, 2),
        (64, 65),
        (0, 4),
        (1, 6),
        (6, 1),
    ] {
        let a = sample::<f64>(m, n);
        let p = dir.path("a64.npy");
        write_matrix(&p, a.as_ref()).unwrap();
        assert_eq!(read_matrix::<f64>(&p).unwrap(), a);
        let h = read_header(&p).unwrap();
        assert_eq!(h.dtype, Dtype::F64);
        assert_eq!(h.fortran_order, m > 1 && n > 1);
        assert_eq!(h.shape, vec![m, n]);
        assert_eq!(h.data_offset % 64, 0);

        let b = sample::<f32>(m, n);
        let p = dir.path("a32.npy");
        write_matrix(&p, b.as_ref()).unwrap();
        assert_eq!(read_header(&p).unwrap().dtype, Dtype::F32);
        assert_eq!(read_matrix::<f32>(&p).unwrap(), b);
        // f32 file read as f64 converts exactly.
        let b64 = read_matrix::<f64>(&p).unwrap();
        assert_eq!(b64, Mat::from_fn(m, n, |i, j| b[(i, j)] as f64));
    }
}

#[test]
fn round_trip_special_values() {
    let dir = TempDir::new();
    let v = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::MAX,
        5e-324,
    ];
    let p = dir.path("v.npy");
    write_vector(&p, &v).unwrap();
    let w = read_vector::<f64>(&p).unwrap();
    assert_eq!(v.len(), w.len());
    for (x, y) in v.iter().zip(&w) {
        assert_eq!(x.to_bits(), y.to_bits());
    }
    write_vector(&p, &[f64::NAN]).unwrap();
    assert!(read_vector::<f64>(&p).unwrap()[0].is_nan());
}

#[test]
fn round_trip_vector() {
    let dir = TempDir::new();
    for n in [0usize, 1, 17, 100_000] {
        let v: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        let p = dir.path("v.npy");
        write_vector(&p, &v).unwrap();
        assert_eq!(read_vector::<f64>(&p).unwrap(), v);
        let h = read_header(&p).unwrap();
        assert_eq!(h.shape, vec![n]);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        write_vector(&p, &v32).unwrap();
        assert_eq!(read_vector::<f32>(&p).unwrap(), v32);
        // f64 -> f32 on read rounds.
        write_vector(&p, &v).unwrap();
        assert_eq!(read_vector::<f32>(&p).unwrap(), v32);
    }
}

#[test]
fn written_header_is_what_numpy_writes() {
    let bytes = preamble(Dtype::F64, true, &[3, 4]);
    assert_eq!(bytes.len(), 128);
    let text = std::str::from_utf8(&bytes[10..]).unwrap();
    assert!(text.starts_with("{'descr': '<f8', 'fortran_order': True, 'shape': (3, 4), }"));
    assert!(text.ends_with(" \n"));
    let bytes = preamble(Dtype::F32, false, &[5]);
    let text = std::str::from_utf8(&bytes[10..]).unwrap();
    assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"));
}

#[test]
fn reads_c_order() {
    let dir = TempDir::new();
    // Row-major 2 x 3: [[1, 2, 3], [4, 5, 6]].
    let data = f64_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let p = write_raw(
        &dir,
        "c.npy",
        &raw_npy(
            (1, 0),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            &data,
        ),
    );
    let a = read_matrix::<f64>(&p).unwrap();
    let expect = Mat::from_fn(2, 3, |i, j| (3 * i + j + 1) as f64);
    assert_eq!(a, expect);
    // Same in f32, read as f32 and f64.
    let data = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let p = write_raw(
        &dir,
        "c32.npy",
        &raw_npy(
            (1, 0),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &data,
        ),
    );
    assert_eq!(read_matrix::<f64>(&p).unwrap(), expect);
    assert_eq!(
        read_matrix::<f32>(&p).unwrap(),
        Mat::from_fn(2, 3, |i, j| (3 * i + j + 1) as f32)
    );
}

#[test]
fn header_parsing_is_robust() {
    let dir = TempDir::new();
    let data = f64_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Fortran 3 x 2: columns [1 2 3], [4 5 6].
    let expect = Mat::from_fn(3, 2, |i, j| (i + 3 * j + 1) as f64);
    for dict in [
        "{'shape': (3, 2), 'fortran_order': True, 'descr': '<f8'}",
        "{  'fortran_order' :True ,'descr':'<f8',\n 'shape':( 3 ,2 ) , }",
        "{\"descr\": \"<f8\", \"fortran_order\": True, \"shape\": (3, 2)}",
        "{'descr': '=f8', 'fortran_order': True, 'shape': (3, 2)}",
        "{'descr': '|f8', 'fortran_order': True, 'shape': (3, 2)}",
        "{'descr': '<f8', 'fortran_order': True, 'shape': [3, 2]}",
        "{'descr': '<f8', 'fortran_order': True, 'shape': (3L, 2L)}",
        "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), 'extra': None}",
    ] {
        for version in [(1, 0), (2, 0), (3, 0)] {
            let p = write_raw(&dir, "h.npy", &raw_npy(version, dict, &data));
            let a = read_matrix::<f64>(&p).unwrap_or_else(|e| panic!("{dict} v{version:?}: {e}"));
            assert_eq!(a, expect, "{dict}");
            assert_eq!(read_header(&p).unwrap().version, version);
        }
    }
    // Version 3.0 allows UTF-8 in the header (e.g. in an extra key).
    let p = write_raw(
        &dir,
        "u.npy",
        &raw_npy(
            (3, 0),
            "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), 'note': 'λ'}",
            &data,
        ),
    );
    assert_eq!(read_matrix::<f64>(&p).unwrap(), expect);
}

#[test]
fn reads_half_precision() {
    let dir = TempDir::new();
    let xs = [1.5f32, -2.0, 0.25];
    let data: Vec<u8> = xs
        .iter()
        .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
        .collect();
    let p = write_raw(
        &dir,
        "h.npy",
        &raw_npy(
            (1, 0),
            "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }",
            &data,
        ),
    );
    assert_eq!(read_vector::<f32>(&p).unwrap(), xs.to_vec());
}

#[test]
fn missing_file_is_io_error() {
    let dir = TempDir::new();
    let p = dir.path("does-not-exist.npy");
    match read_matrix::<f64>(&p) {
        Err(Error::Io { path, source }) => {
            assert_eq!(path, p);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Error::Io, got {other:?}"),
    }
    let e = read_vector::<f64>(&p).unwrap_err();
    assert!(e.to_string().contains("does-not-exist.npy"), "{e}");
}

#[test]
fn bad_magic() {
    let dir = TempDir::new();
    let p = write_raw(&dir, "bad.npy", b"PK\x03\x04 this is a zip file, not npy");
    let e = read_matrix::<f64>(&p).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("bad.npy") && msg.contains("bad magic"),
        "{msg}"
    );
    let p = write_raw(&dir, "empty.npy", b"");
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("bad magic") && r.contains("empty"), "{r}");
    let p = write_raw(&dir, "short.npy", b"\x93NUM");
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("too short"), "{r}");
}

#[test]
fn unsupported_version() {
    let dir = TempDir::new();
    let mut bytes = raw_npy(
        (1, 0),
        "{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1), }",
        &f64_bytes(&[1.0]),
    );
    bytes[6] = 4;
    let p = write_raw(&dir, "v4.npy", &bytes);
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("unsupported .npy format version 4.0"), "{r}");
    bytes[6] = 1;
    bytes[7] = 1;
    let p = write_raw(&dir, "v11.npy", &bytes);
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("version 1.1"), "{r}");
}

#[test]
fn unparsable_header() {
    let dir = TempDir::new();
    for (dict, needle) in [
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2)",
            "unterminated",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True}",
            "missing key 'shape'",
        ),
        (
            "{'fortran_order': True, 'shape': (2, 2)}",
            "missing key 'descr'",
        ),
        (
            "{'descr': '<f8', 'shape': (2, 2)}",
            "missing key 'fortran_order'",
        ),
        (
            "{'descr': '<f8', 'fortran_order': 1, 'shape': (2, 2)}",
            "True or False",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, -2)}",
            "invalid dimension",
        ),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': 'x'}",
            "must be a tuple",
        ),
        (
            "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2, 2)}",
            "unexpected name",
        ),
        ("['descr', '<f8']", "expected a dictionary"),
        (
            "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2)} junk",
            "after the dictionary",
        ),
        ("", "unexpected end"),
    ] {
        let p = write_raw(&dir, "h.npy", &raw_npy((1, 0), dict, &f64_bytes(&[0.0; 4])));
        let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
        assert!(r.contains(needle), "{dict}: {r}");
    }
    // Header longer than the file.
    let mut bytes = raw_npy(
        (1, 0),
        "{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1), }",
        &[],
    );
    bytes.truncate(30);
    let p = write_raw(&dir, "th.npy", &bytes);
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("truncated header"), "{r}");
}

#[test]
fn unsupported_dtype() {
    let dir = TempDir::new();
    for (descr, needle) in [
        ("'<i8'", "'<i8'"),
        ("'>f8'", "big-endian"),
        ("'>f4'", "'>f4'"),
        ("'<c16'", "'<c16'"),
        ("'|u1'", "'|u1'"),
        ("[('a', '<f8')]", "structured"),
    ] {
        let dict = format!("{{'descr': {descr}, 'fortran_order': True, 'shape': (2, 2), }}");
        let p = write_raw(&dir, "d.npy", &raw_npy((1, 0), &dict, &[0u8; 32]));
        let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
        assert!(
            r.contains("unsupported dtype") && r.contains(needle),
            "{descr}: {r}"
        );
    }
}

#[test]
fn wrong_rank() {
    let dir = TempDir::new();
    let p = dir.path("v.npy");
    write_vector(&p, &[1.0f64, 2.0, 3.0]).unwrap();
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("2-D") && r.contains("(3,)"), "{r}");
    let p = dir.path("m.npy");
    write_matrix(&p, sample::<f64>(2, 3).as_ref()).unwrap();
    let r = npy_reason(read_vector::<f64>(&p).unwrap_err());
    assert!(r.contains("1-D") && r.contains("(2, 3)"), "{r}");
    for (shape, shown) in [("()", "()"), ("(2, 2, 2)", "(2, 2, 2)")] {
        let dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
        let n = if shape == "()" { 1 } else { 8 };
        let p = write_raw(&dir, "r.npy", &raw_npy((1, 0), &dict, &vec![0u8; 8 * n]));
        let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
        assert!(r.contains(shown), "{r}");
    }
}

#[test]
fn truncated_data() {
    let dir = TempDir::new();
    let p = dir.path("m.npy");
    write_matrix(&p, sample::<f64>(4, 4).as_ref()).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.truncate(bytes.len() - 12);
    let p = write_raw(&dir, "t.npy", &bytes);
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(
        r.contains("truncated data") && r.contains("128") && r.contains("116"),
        "{r}"
    );
    // Trailing garbage is reported too.
    let mut bytes = std::fs::read(dir.path("m.npy")).unwrap();
    bytes.extend_from_slice(&[0u8; 8]);
    let p = write_raw(&dir, "x.npy", &bytes);
    let r = npy_reason(read_matrix::<f64>(&p).unwrap_err());
    assert!(r.contains("8 unexpected bytes"), "{r}");
}

#[test]
fn non_square() {
    let dir = TempDir::new();
    let p = dir.path("m.npy");
    write_matrix(&p, sample::<f32>(3, 4).as_ref()).unwrap();
    let r = npy_reason(read_square_matrix::<f32>(&p).unwrap_err());
    assert!(r.contains("square") && r.contains("(3, 4)"), "{r}");
    assert_eq!(read_matrix::<f32>(&p).unwrap().shape(), (3, 4));
    write_matrix(&p, sample::<f32>(4, 4).as_ref()).unwrap();
    assert_eq!(read_square_matrix::<f32>(&p).unwrap(), sample::<f32>(4, 4));
    write_vector(&p, &[1.0f32]).unwrap();
    let r = npy_reason(read_square_matrix::<f32>(&p).unwrap_err());
    assert!(r.contains("2-D"), "{r}");
}

#[test]
fn write_to_missing_directory_is_io_error() {
    let dir = TempDir::new();
    let p = dir.path("no/such/dir/a.npy");
    assert!(matches!(write_vector(&p, &[1.0f64]), Err(Error::Io { .. })));
}
