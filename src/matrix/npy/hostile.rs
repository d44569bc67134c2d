//! Hostile input (issue 8): every malformed, truncated, oversized or absurd
//! `.npy` file ends in a short, clear error, never a crash, hang or silent
//! wrap. Targeted cases first, then a fuzz-style loop over well over 100,000
//! mutated and random headers and files, fed from memory with a fixed seed
//! (reproducible; a failure names the case). Every case must end in `Ok` or
//! `Err`, never a panic, and every `Ok` must agree with an independent decoding
//! of the bytes.

use super::tests::{f64_bytes, npy_reason, raw_npy, sample, TempDir};
use super::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Parses in-memory bytes as a whole `.npy` file.
fn from_bytes(bytes: &[u8]) -> Result<NpyReader<&[u8]>> {
    NpyReader::new(Path::new("mem.npy"), bytes, bytes.len() as u64)
}

/// A version-2.0 file whose header (dict, space padding, newline) is exactly
/// `header_len` bytes, holding one f64.
fn npy_with_header_len(header_len: usize) -> Vec<u8> {
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }";
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[2, 0]);
    out.extend_from_slice(&(header_len as u32).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(12 + header_len - 1, b' ');
    out.push(b'\n');
    out.extend_from_slice(&f64_bytes(&[7.0]));
    out
}

#[test]
fn header_length_is_capped_at_numpys_limit() {
    // NumPy reads headers of up to 10000 bytes and refuses longer ones.
    let ok = npy_with_header_len(MAX_HEADER_LEN);
    let h = from_bytes(&ok).unwrap().header;
    assert_eq!((h.shape, h.data_offset), (vec![1], 12 + 10_000));
    let long = npy_with_header_len(MAX_HEADER_LEN + 1);
    let r = npy_reason(from_bytes(&long).map(|_| ()).unwrap_err());
    assert!(r.contains("10001") && r.contains("10000"), "{r}");

    // A header length of 4 GiB in a (claimed) 8 GiB stream is refused after the
    // 12 preamble bytes, before anything of that size is read or allocated.
    struct Counting<'a>(&'a [u8], usize);
    impl Read for Counting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let k = self.0.read(buf)?;
            self.1 += k;
            Ok(k)
        }
    }
    let mut preamble = MAGIC.to_vec();
    preamble.extend_from_slice(&[2, 0]);
    preamble.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut src = Counting(&preamble, 0);
    let e = read_header_from(Path::new("big.npy"), &mut src, 8 << 30).unwrap_err();
    let r = npy_reason(e);
    assert!(r.contains("4294967295") && r.contains("10000"), "{r}");
    assert_eq!(src.1, 12, "read past the header length field");
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    // One megabyte of '[' (the parser alone, without the length cap), on a
    // thread with a small stack: an error naming the nesting, not a crash.
    let deep = "[".repeat(1 << 20);
    let r = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || parse_header_dict(&deep).unwrap_err())
        .unwrap()
        .join()
        .expect("the parser must not overflow its stack");
    assert!(r.contains("nest"), "{r}");
    assert!(r.len() < 300, "{} bytes: {r}", r.len());
    // Under the cap, through the reader: the same refusal.
    let inner = format!("{}{}", "(".repeat(3000), ")".repeat(3000));
    let dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': (1,), 'x': {inner}}}");
    let r = npy_reason(
        from_bytes(&raw_npy((2, 0), &dict, &f64_bytes(&[1.0])))
            .map(|_| ())
            .unwrap_err(),
    );
    assert!(r.contains("nest"), "{r}");
    // Ordinary nesting (a structured dtype) still parses, to its own error.
    let dict = "{'descr': [('a', '<f8', (2, (3,)))], 'fortran_order': False, 'shape': (1,)}";
    let r = npy_reason(
        from_bytes(&raw_npy((1, 0), dict, &[0u8; 48]))
            .map(|_| ())
            .unwrap_err(),
    );
    assert!(r.contains("structured"), "{r}");
}

#[test]
fn errors_quote_only_a_short_excerpt_of_the_header() {
    let long = "x".repeat(8000);
    let digits = "9".repeat(6000);
    let ok_rest = "'fortran_order': False, 'shape': (1,)";
    for (dict, needle) in [
        (
            format!("{{'descr': '<f8', 'fortran_order': False, 'pad': '{long}'}}"),
            "missing key 'shape'",
        ),
        (
            format!("{{'descr': '<{long}', {ok_rest}}}"),
            "unsupported dtype",
        ),
        (
            format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({digits},)}}"),
            "invalid integer",
        ),
        (
            format!("{{'descr': '<f8', 'fortran_order': T{long}, 'shape': (1,)}}"),
            "unexpected name",
        ),
        (
            format!("{{'descr': '<f8', 'fortran_order': False, 'shape': '{long}'}}"),
            "must be a tuple",
        ),
        (
            format!("{{'descr': [('{long}', '<f8')], {ok_rest}}}"),
            "structured",
        ),
        (
            format!("{{'descr': '<f8', {ok_rest}}} {long}"),
            "after the dictionary",
        ),
        (
            format!("{{'descr': '<f8', 'fortran_order': False, 'shape': (1, {long})}}"),
            "unexpected name",
        ),
        (format!("[{}]", "1, ".repeat(2000)), "expected a dictionary"),
    ] {
        let bytes = raw_npy((2, 0), &dict, &f64_bytes(&[1.0]));
        let r = npy_reason(from_bytes(&bytes).map(|_| ()).unwrap_err());
        assert!(r.contains(needle), "{needle}: {}", &r[..r.len().min(400)]);
        assert!(r.len() < 300, "{needle}: {} bytes", r.len());
    }
}

#[test]
fn f64_beyond_f32_range_is_reported_as_out_of_range() {
    let dir = TempDir::new();
    // Fortran order (what write_matrix writes): the entry at row 1, column 2.
    let mut a = sample::<f64>(3, 4);
    a[(1, 2)] = 1e300;
    let p = dir.path("big.npy");
    write_matrix(&p, a.as_ref()).unwrap();
    let r = npy_reason(read_matrix::<f32>(&p).unwrap_err());
    assert!(
        r.contains("out of f32 range") && r.contains("row 1, column 2") && r.contains("1e300"),
        "{r}"
    );
    assert_eq!(read_matrix::<f64>(&p).unwrap(), a);
    // C order: row 0, column 2 of a 2 x 3 matrix is the third element.
    let data = f64_bytes(&[1.0, 2.0, -4e38, 4.0, 5.0, 6.0]);
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
    let bytes = raw_npy((1, 0), dict, &data);
    let e = from_bytes(&bytes)
        .unwrap()
        .into_matrix::<f32>()
        .unwrap_err();
    let r = npy_reason(e);
    assert!(
        r.contains("out of f32 range") && r.contains("row 0, column 2"),
        "{r}"
    );
    // A vector names the index.
    write_vector(&p, &[0.0, 1.0, f64::MAX]).unwrap();
    let r = npy_reason(read_vector::<f32>(&p).unwrap_err());
    assert!(
        r.contains("out of f32 range") && r.contains("index 2"),
        "{r}"
    );
    // Infinities and NaN are not out of range: they convert as they are (the
    // solver's finiteness check names them); the largest f32 converts exactly.
    write_vector(&p, &[f64::INFINITY, f64::NAN, f32::MAX as f64, 1e-300]).unwrap();
    let v = read_vector::<f32>(&p).unwrap();
    assert_eq!(v[0], f32::INFINITY);
    assert!(v[1].is_nan());
    assert_eq!((v[2], v[3]), (f32::MAX, 0.0));
}

// ---------------------------------------------------------------------------
// Fuzz-style loop.
// ---------------------------------------------------------------------------

/// Number of cases; each is read as a header, then as f64 and f32 data.
const CASES: usize = 120_000;

/// SplitMix64: a fixed, dependency-free stream for a given seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const DESCRS: &[&str] = &[
    "'<f8'",
    "'<f4'",
    "'<f2'",
    "'|f8'",
    "'=f4'",
    "'f8'",
    "'d'",
    "'<e'",
    "'>f8'",
    "'<i8'",
    "'<c16'",
    "''",
    "'<'",
    "'f8f8'",
    "'<f16'",
    "'<f8",
    "[('a', '<f8')]",
    "3",
    "None",
    "('<f8',)",
    "'\\x00'",
    "'<f8' '<f4'",
    "{'a': 1}",
];
const ORDERS: &[&str] = &[
    "True", "False", "False", "True", "1", "0", "None", "'True'", "Tru", "", "[]",
];
/// Dimensions that break naive arithmetic: beyond u32, i64, u64 and i128.
const HUGE_DIMS: &[&str] = &[
    "2147483648",
    "4294967296",
    "1099511627776",
    "2305843009213693952",
    "4611686018427387904",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000000000000000000000000",
    "1000000000000000000000000000000000000000000",
    "-1",
    "-9223372036854775808",
    "0",
];
const GARBAGE_SHAPES: &[&str] = &[
    "(",
    "(,)",
    "(1,,2)",
    "((2,),)",
    "[2, [3]]",
    "'2'",
    "2.5",
    "(1e3,)",
    "(0x10,)",
    "(+3, -0)",
    "(1_000,)",
    "(3L, 2l)",
    "()",
    "(2)",
    "2",
    "[]",
    "(None,)",
    "(True, 2)",
    "((((((((((1))))))))))",
    "(2, 3",
    "2, 3)",
];
/// Characters that steer the literal parser into its different branches.
const STRUCTURAL: &[u8] = b"{}[](),:'\"\\ \t\n\r\x000123456789-+_LlTrueFalsNo<>|=f8e";

/// A small array's shape: rank 0 to 3, dimensions 0 to 5.
fn small_shape(rng: &mut Rng) -> Vec<usize> {
    (0..rng.below(4)).map(|_| rng.below(6)).collect()
}

fn shape_text(rng: &mut Rng, shape: &[usize]) -> String {
    let mut s = shape_str(shape);
    if rng.chance(10) {
        s = s.replace('(', "[").replace(')', "]").replace(",]", "]");
    }
    s
}

/// A header dictionary: mostly well formed, often with one hostile field,
/// sometimes with keys missing, repeated, reordered or extra.
fn dict_text(rng: &mut Rng, dtype: Dtype, fortran: bool, shape: &[usize]) -> String {
    let descr = if rng.chance(75) {
        format!("'{}'", dtype.descr())
    } else {
        rng.pick(DESCRS).to_string()
    };
    let order = if rng.chance(80) {
        (if fortran { "True" } else { "False" }).to_string()
    } else {
        rng.pick(ORDERS).to_string()
    };
    let shape = match rng.below(10) {
        0 | 1 => {
            let rank = 1 + rng.below(3);
            let dims: Vec<&str> = (0..rank)
                .map(|_| {
                    if rng.chance(60) {
                        rng.pick(HUGE_DIMS)
                    } else {
                        rng.pick(&["1", "2", "3", "0"])
                    }
                })
                .collect();
            format!("({},)", dims.join(", "))
        }
        // Products that overflow 64 bits while each factor fits.
        2 => rng
            .pick(&[
                "(4294967296, 4294967296)",
                "(2097152, 2097152, 2097152)",
                "(3037000500, 3037000500)",
                "(65536, 65536, 65536, 65536, 2)",
                "(0, 18446744073709551615)",
                "(18446744073709551615, 0)",
                "(9223372036854775807, 0, 9223372036854775807)",
            ])
            .to_string(),
        3 => rng.pick(GARBAGE_SHAPES).to_string(),
        _ => shape_text(rng, shape),
    };
    let mut entries = vec![
        format!("'descr': {descr}"),
        format!("'fortran_order': {order}"),
        format!("'shape': {shape}"),
    ];
    if rng.chance(10) {
        entries.remove(rng.below(3));
    }
    if rng.chance(10) {
        let i = rng
            .below(entries.len().max(1))
            .min(entries.len().saturating_sub(1));
        if let Some(e) = entries.get(i).cloned() {
            entries.push(e);
        }
    }
    if rng.chance(10) {
        let depth = rng.below(200);
        entries.push(format!(
            "'extra': {}None{}",
            "[".repeat(depth),
            "]".repeat(depth)
        ));
    }
    if rng.chance(20) {
        let (i, j) = (rng.below(entries.len()), rng.below(entries.len()));
        entries.swap(i, j);
    }
    let comma = if rng.chance(50) { ", " } else { "" };
    format!("{{{}{comma}}}", entries.join(", "))
}

/// A well-formed or nearly well-formed file: preamble, padded header and
/// data of (usually) the right length.
fn synthetic_file(rng: &mut Rng) -> Vec<u8> {
    let version = [(1u8, 0u8), (2, 0), (3, 0)][rng.below(3)];
    let dtype = [Dtype::F64, Dtype::F32, Dtype::F16][rng.below(3)];
    let fortran = rng.chance(50);
    let shape = small_shape(rng);
    let dict = dict_text(rng, dtype, fortran, &shape);
    let len_bytes = if version.0 == 1 { 2 } else { 4 };
    let mut header = dict.into_bytes();
    if rng.chance(90) {
        while !(MAGIC.len() + 2 + len_bytes + header.len() + 1).is_multiple_of(64) {
            header.push(b' ');
        }
        header.push(b'\n');
    }
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[version.0, version.1]);
    let mut header_len = header.len() as u64;
    if rng.chance(8) {
        header_len = match rng.below(3) {
            0 => rng.next() & 0xffff,
            1 => rng.next() & 0xffff_ffff,
            _ => (header_len as i64 + rng.below(9) as i64 - 4).max(0) as u64,
        };
    }
    if len_bytes == 2 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(&header);
    let mut data_len = shape.iter().product::<usize>() * dtype.size();
    if rng.chance(10) {
        // Data shorter or longer than the header claims.
        data_len = (data_len as i64 + rng.below(33) as i64 - 16).max(0) as usize;
    }
    // Random bits make NaNs, infinities, subnormals and f32 overflows.
    out.extend((0..data_len).map(|_| rng.next() as u8));
    out
}

/// Bit flips, byte overwrites (biased to the header), insertions, deletions and
/// truncation.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if bytes.is_empty() {
            bytes.push(rng.next() as u8);
        }
        let span = if rng.chance(75) {
            bytes.len().min(128)
        } else {
            bytes.len()
        };
        let at = rng.below(span);
        match rng.below(5) {
            0 => bytes[at] ^= 1 << rng.below(8),
            1 => bytes[at] = STRUCTURAL[rng.below(STRUCTURAL.len())],
            2 => bytes[at] = rng.next() as u8,
            3 => {
                let k = 1 + rng.below(8);
                let fill: Vec<u8> = (0..k)
                    .map(|_| STRUCTURAL[rng.below(STRUCTURAL.len())])
                    .collect();
                bytes.splice(at..at, fill);
            }
            _ => bytes.truncate(at),
        }
    }
}

/// Fully random bytes, half of them behind a valid magic string and version.
fn random_file(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    if rng.chance(50) {
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[1 + rng.below(3) as u8, 0]);
    }
    let n = rng.below(200);
    out.extend((0..n).map(|_| rng.next() as u8));
    out
}

/// Decodes element `k` of the data independently of the reader.
fn reference(bytes: &[u8], h: &Header, k: usize) -> f64 {
    let size = h.dtype.size();
    let at = h.data_offset as usize + k * size;
    let e = &bytes[at..at + size];
    match h.dtype {
        Dtype::F16 => half::f16::from_bits(u16::from_le_bytes([e[0], e[1]])).to_f64(),
        Dtype::F32 => f32::from_bits(u32::from_le_bytes(e.try_into().unwrap())) as f64,
        Dtype::F64 => f64::from_bits(u64::from_le_bytes(e.try_into().unwrap())),
    }
}

/// Same value, NaN equal to NaN.
fn same<T: Scalar>(x: T, y: T) -> bool {
    x == y || (x.is_nan() && y.is_nan())
}

/// Reads `bytes` (of claimed length `len`) every way the reader can, and checks
/// that each `Ok` agrees with the header and with [`reference`].
fn check(bytes: &[u8], len: u64) -> Stats {
    let path = Path::new("fuzz.npy");
    let mut stats = Stats::default();
    let Ok(reader) = NpyReader::new(path, bytes, len) else {
        return stats;
    };
    stats.headers += 1;
    let h = reader.header.clone();
    let elems = h.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    assert_eq!(elems, Some(h.len()), "element count of {:?}", h.shape);
    assert!(matches!(h.version, (1, 0) | (2, 0) | (3, 0)));
    assert_eq!(h.data_offset + h.data_bytes(), len, "length accounting");
    let real = bytes.len() as u64 >= len;
    match h.shape[..] {
        [m, n] => {
            let at = |i: usize, j: usize| {
                if h.fortran_order {
                    i + j * m
                } else {
                    i * n + j
                }
            };
            match reader.into_matrix::<f64>() {
                Ok(a) => {
                    assert!(real, "read past the end of the bytes");
                    assert_eq!(a.shape(), (m, n));
                    for j in 0..n {
                        for i in 0..m {
                            assert!(same(a[(i, j)], reference(bytes, &h, at(i, j))));
                        }
                    }
                    stats.data += 1;
                }
                // An empty matrix may have a dimension no matrix can have.
                Err(Error::Npy { reason, .. }) if reason.contains("too large") => {
                    assert_eq!(m.min(n), 0, "{reason}");
                    return stats;
                }
                Err(e) => assert!(!real, "valid data refused: {e}"),
            }
            let reader = NpyReader::new(path, bytes, len).unwrap();
            match reader.into_matrix::<f32>() {
                Ok(a) => {
                    for j in 0..n {
                        for i in 0..m {
                            let x = reference(bytes, &h, at(i, j));
                            assert!(same(a[(i, j)], x as f32));
                            assert!(a[(i, j)].is_finite() || !x.is_finite());
                        }
                    }
                }
                Err(Error::Npy { reason, .. }) if reason.contains("out of f32 range") => {
                    assert!((0..m * n).any(|k| {
                        let x = reference(bytes, &h, k);
                        x.is_finite() && !(x as f32).is_finite()
                    }));
                }
                Err(e) => assert!(!real, "valid data refused: {e}"),
            }
        }
        [n] => match NpyReader::new(path, bytes, len)
            .unwrap()
            .into_vector::<f64>()
        {
            Ok(v) => {
                assert_eq!(v.len(), n);
                for (k, &x) in v.iter().enumerate() {
                    assert!(same(x, reference(bytes, &h, k)));
                }
                stats.data += 1;
            }
            Err(e) => assert!(!real, "valid data refused: {e}"),
        },
        _ => {
            let e = reader.into_matrix::<f64>().unwrap_err();
            assert!(matches!(e, Error::Npy { .. }), "{e}");
        }
    }
    stats
}

#[derive(Default)]
struct Stats {
    headers: usize,
    data: usize,
}

#[test]
fn fuzz_reader_never_panics() {
    let mut rng = Rng(0x00e1_6e9f_1057);
    let (mut headers, mut data) = (0, 0);
    for case in 0..CASES {
        let mut bytes = match rng.below(10) {
            0 => random_file(&mut rng),
            1..=4 => synthetic_file(&mut rng),
            _ => {
                let mut b = synthetic_file(&mut rng);
                mutate(&mut rng, &mut b);
                b
            }
        };
        if rng.chance(2) {
            // A deep or long header, to hit the nesting and length limits.
            let k = rng.below(20_000);
            let at = 10.min(bytes.len());
            bytes.splice(at..at, std::iter::repeat_n(b'[', k));
        }
        // Usually the true length; sometimes a stream shorter or longer than
        // its claimed length (a file that changed under the reader).
        let len = match rng.below(20) {
            0 => bytes.len() as u64 + rng.below(64) as u64 + 1,
            1 => bytes.len().saturating_sub(rng.below(16) + 1) as u64,
            _ => bytes.len() as u64,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&bytes, len)));
        match outcome {
            Ok(s) => {
                headers += s.headers;
                data += s.data;
            }
            Err(_) => {
                let shown: String = bytes.iter().take(160).map(|b| format!("{b:02x}")).collect();
                panic!("case {case} (len {len}, {} bytes): {shown}", bytes.len());
            }
        }
    }
    // The generator must reach the data path often, or the test proves little.
    assert!(
        headers > CASES / 10 && data > CASES / 20,
        "{headers} headers, {data} data"
    );
}
