//! Reading and writing NumPy `.npy` files.
//!
//! Reading accepts format versions 1.0, 2.0 and 3.0, little-endian (or native /
//! "not applicable" byte order on a little-endian host) `f8`, `f4` and `f2`
//! dtypes, in C or Fortran order, and converts every entry to the requested
//! [`Scalar`]. Writing produces version 1.0 files in Fortran order with the
//! dtype of `T` (`'<f8'` for `f64`, `'<f4'` for `f32`), which `numpy.load`
//! reads back without copying into a column-major array.
//!
//! Every failure names the file and says what is wrong with it: a missing file
//! is an [`Error::Io`], everything else (bad magic, unsupported version,
//! unparsable header, unsupported dtype, wrong rank, truncated data, a
//! non-square matrix where a square one was asked for) is an [`Error::Npy`].
//!
//! ```
//! use eigenflow::matrix::npy;
//! let dir = std::env::temp_dir().join(format!("eigenflow-npy-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("a.npy");
//! let a = faer::Mat::<f64>::from_fn(3, 2, |i, j| (i + 10 * j) as f64);
//! npy::write_matrix(&path, a.as_ref()).unwrap();
//! let b: faer::Mat<f64> = npy::read_matrix(&path).unwrap();
//! assert_eq!(a, b);
//! std::fs::remove_dir_all(&dir).unwrap();
//! ```

use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};
use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The magic string every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Number of elements converted per read call.
const CHUNK_ELEMS: usize = 1 << 16;

/// Element type of an `.npy` file that eigenflow can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE half precision (`'<f2'`); read only.
    F16,
    /// IEEE single precision (`'<f4'`).
    F32,
    /// IEEE double precision (`'<f8'`).
    F64,
}

impl Dtype {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            Dtype::F16 => 2,
            Dtype::F32 => 4,
            Dtype::F64 => 8,
        }
    }

    /// The little-endian NumPy descriptor (`'<f8'`, ...).
    pub fn descr(self) -> &'static str {
        match self {
            Dtype::F16 => "<f2",
            Dtype::F32 => "<f4",
            Dtype::F64 => "<f8",
        }
    }

    /// The dtype eigenflow writes for scalar type `T`.
    pub fn of<T: Scalar>() -> Dtype {
        if std::mem::size_of::<T>() == 4 {
            Dtype::F32
        } else {
            Dtype::F64
        }
    }

    /// Decodes one little-endian element (`bytes.len() == self.size()`).
    #[inline]
    fn decode(self, bytes: &[u8]) -> f64 {
        match self {
            Dtype::F16 => half::f16::from_le_bytes([bytes[0], bytes[1]]).to_f64(),
            Dtype::F32 => f32::from_le_bytes(bytes.try_into().unwrap()) as f64,
            Dtype::F64 => f64::from_le_bytes(bytes.try_into().unwrap()),
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.descr())
    }
}

/// The parsed header of an `.npy` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version `(major, minor)`.
    pub version: (u8, u8),
    /// Element type.
    pub dtype: Dtype,
    /// Whether the data are stored in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
    /// Byte offset of the first data byte (magic + version + length + header).
    pub data_offset: u64,
}

impl Header {
    /// Number of elements (product of the shape).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of data bytes the shape and dtype call for.
    pub fn data_bytes(&self) -> u64 {
        self.len() as u64 * self.dtype.size() as u64
    }

    /// Bytes needed to hold the array in memory as `T` (for memory checks before
    /// reading).
    pub fn bytes_as<T: Scalar>(&self) -> u64 {
        self.len() as u64 * std::mem::size_of::<T>() as u64
    }
}

/// Formats a shape the way NumPy does: `(3,)`, `(3, 4)`, `()`.
fn shape_str(shape: &[usize]) -> String {
    match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

fn npy_err(path: &Path, reason: impl Into<String>) -> Error {
    Error::Npy {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------
// Header dictionary parsing (a small Python literal parser).
// ---------------------------------------------------------------------------

/// A Python literal as it may appear in an `.npy` header.
#[derive(Clone, Debug, PartialEq)]
enum PyValue {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Tuple(Vec<PyValue>),
    List(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
}

impl PyValue {
    fn describe(&self) -> String {
        match self {
            PyValue::Str(s) => format!("'{s}'"),
            PyValue::Int(i) => i.to_string(),
            PyValue::Bool(b) => (if *b { "True" } else { "False" }).to_string(),
            PyValue::None => "None".to_string(),
            PyValue::Tuple(v) => {
                let parts: Vec<String> = v.iter().map(PyValue::describe).collect();
                if parts.len() == 1 {
                    format!("({},)", parts[0])
                } else {
                    format!("({})", parts.join(", "))
                }
            }
            PyValue::List(v) => {
                let parts: Vec<String> = v.iter().map(PyValue::describe).collect();
                format!("[{}]", parts.join(", "))
            }
            PyValue::Dict(_) => "{...}".to_string(),
        }
    }
}

struct LiteralParser {
    chars: Vec<char>,
    pos: usize,
}

impl LiteralParser {
    fn new(src: &str) -> Self {
        LiteralParser {
            chars: src.chars().collect(),
            pos: 0,
        }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.chars.len() && self.chars[self.pos].is_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.chars.get(self.pos).copied()
    }

    fn expect(&mut self, c: char) -> std::result::Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(x) => Err(format!(
                "expected '{c}' at offset {}, found '{x}'",
                self.pos
            )),
            None => Err(format!(
                "expected '{c}' at offset {}, found the end",
                self.pos
            )),
        }
    }

    fn value(&mut self) -> std::result::Result<PyValue, String> {
        match self.peek() {
            None => Err("unexpected end of header".to_string()),
            Some('{') => self.dict(),
            Some('(') => {
                let (items, trailing_comma) = self.sequence('(', ')')?;
                // `(x)` is just a parenthesised value; `(x,)` is a 1-tuple.
                if items.len() == 1 && !trailing_comma {
                    Ok(items.into_iter().next().unwrap())
                } else {
                    Ok(PyValue::Tuple(items))
                }
            }
            Some('[') => Ok(PyValue::List(self.sequence('[', ']')?.0)),
            Some(q @ ('\'' | '"')) => self.string(q),
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => self.int(),
            Some(c) if c.is_alphabetic() || c == '_' => self.ident(),
            Some(c) => Err(format!("unexpected character '{c}' at offset {}", self.pos)),
        }
    }

    fn dict(&mut self) -> std::result::Result<PyValue, String> {
        self.expect('{')?;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some('}') {
                self.pos += 1;
                return Ok(PyValue::Dict(entries));
            }
            let key = self.value()?;
            self.expect(':')?;
            let val = self.value()?;
            entries.push((key, val));
            match self.peek() {
                Some(',') => self.pos += 1,
                Some('}') => {}
                Some(c) => {
                    return Err(format!(
                        "expected ',' or '}}' at offset {}, found '{c}'",
                        self.pos
                    ))
                }
                None => return Err("unterminated dictionary".to_string()),
            }
        }
    }

    /// Parses `open item, item, ... close`; returns the items and whether the last
    /// one was followed by a comma.
    fn sequence(
        &mut self,
        open: char,
        close: char,
    ) -> std::result::Result<(Vec<PyValue>, bool), String> {
        self.expect(open)?;
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok((items, trailing_comma));
            }
            items.push(self.value()?);
            trailing_comma = false;
            match self.peek() {
                Some(',') => {
                    self.pos += 1;
                    trailing_comma = true;
                }
                Some(c) if c == close => {}
                Some(c) => {
                    return Err(format!(
                        "expected ',' or '{close}' at offset {}, found '{c}'",
                        self.pos
                    ))
                }
                None => return Err(format!("unterminated '{open}'")),
            }
        }
    }

    fn string(&mut self, quote: char) -> std::result::Result<PyValue, String> {
        self.pos += 1;
        let mut s = String::new();
        while let Some(&c) = self.chars.get(self.pos) {
            self.pos += 1;
            if c == quote {
                return Ok(PyValue::Str(s));
            }
            if c == '\\' {
                let Some(&e) = self.chars.get(self.pos) else {
                    break;
                };
                self.pos += 1;
                s.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    other => other,
                });
            } else {
                s.push(c);
            }
        }
        Err("unterminated string".to_string())
    }

    fn int(&mut self) -> std::result::Result<PyValue, String> {
        let start = self.pos;
        if matches!(self.chars.get(self.pos), Some('-' | '+')) {
            self.pos += 1;
        }
        while matches!(self.chars.get(self.pos), Some(c) if c.is_ascii_digit() || *c == '_') {
            self.pos += 1;
        }
        let text: String = self.chars[start..self.pos]
            .iter()
            .filter(|c| **c != '_')
            .collect();
        // Python 2 long suffix, written by very old NumPy versions.
        if matches!(self.chars.get(self.pos), Some('L' | 'l')) {
            self.pos += 1;
        }
        text.parse::<i128>()
            .map(PyValue::Int)
            .map_err(|_| format!("invalid integer '{text}' at offset {start}"))
    }

    fn ident(&mut self) -> std::result::Result<PyValue, String> {
        let start = self.pos;
        while matches!(self.chars.get(self.pos), Some(c) if c.is_alphanumeric() || *c == '_') {
            self.pos += 1;
        }
        let word: String = self.chars[start..self.pos].iter().collect();
        match word.as_str() {
            "True" => Ok(PyValue::Bool(true)),
            "False" => Ok(PyValue::Bool(false)),
            "None" => Ok(PyValue::None),
            _ => Err(format!("unexpected name '{word}' at offset {start}")),
        }
    }

    fn finish(&mut self) -> std::result::Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(c) => Err(format!(
                "unexpected '{c}' after the dictionary at offset {}",
                self.pos
            )),
        }
    }
}

/// Parses a dtype descriptor such as `'<f8'`; `Err` carries the reason.
fn parse_descr(descr: &str) -> std::result::Result<Dtype, String> {
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '=' | '|')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let dtype = match code {
        "f8" | "d" | "float64" => Dtype::F64,
        "f4" | "f" | "float32" => Dtype::F32,
        "f2" | "e" | "float16" => Dtype::F16,
        _ => {
            return Err(format!(
                "unsupported dtype '{descr}': only float64 ('<f8'), float32 ('<f4') and \
                 float16 ('<f2') are supported; convert with a.astype('<f8')"
            ))
        }
    };
    let big_endian = match order {
        '>' => true,
        '<' => false,
        // '=' is native order, '|' "not applicable" (NumPy treats it as native).
        _ => cfg!(target_endian = "big"),
    };
    if big_endian {
        return Err(format!(
            "unsupported dtype '{descr}': big-endian data are not supported; \
             convert with a.astype('{}')",
            dtype.descr()
        ));
    }
    Ok(dtype)
}

/// Parses the header dictionary text into (dtype, fortran_order, shape).
fn parse_header_dict(text: &str) -> std::result::Result<(Dtype, bool, Vec<usize>), String> {
    let mut p = LiteralParser::new(text);
    let value = p
        .value()
        .map_err(|e| format!("unparsable header {text:?}: {e}"))?;
    p.finish()
        .map_err(|e| format!("unparsable header {text:?}: {e}"))?;
    let PyValue::Dict(entries) = value else {
        return Err(format!(
            "unparsable header {text:?}: expected a dictionary, found {}",
            value.describe()
        ));
    };
    let get = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| matches!(k, PyValue::Str(s) if s == key))
            .map(|(_, v)| v)
    };
    let missing = |key: &str| format!("unparsable header {text:?}: missing key '{key}'");

    let descr = match get("descr").ok_or_else(|| missing("descr"))? {
        PyValue::Str(s) => s.clone(),
        other => {
            return Err(format!(
                "unsupported dtype {}: structured and other non-scalar dtypes are not supported",
                other.describe()
            ))
        }
    };
    let fortran_order = match get("fortran_order").ok_or_else(|| missing("fortran_order"))? {
        PyValue::Bool(b) => *b,
        other => {
            return Err(format!(
                "unparsable header {text:?}: 'fortran_order' must be True or False, found {}",
                other.describe()
            ))
        }
    };
    let shape = match get("shape").ok_or_else(|| missing("shape"))? {
        PyValue::Tuple(items) | PyValue::List(items) => {
            let mut shape = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    PyValue::Int(d) if *d >= 0 && *d <= usize::MAX as i128 => {
                        shape.push(*d as usize)
                    }
                    other => {
                        return Err(format!(
                            "unparsable header {text:?}: invalid dimension {} in 'shape'",
                            other.describe()
                        ))
                    }
                }
            }
            shape
        }
        // A bare integer is what a parenthesised single value looks like.
        PyValue::Int(d) if *d >= 0 && *d <= usize::MAX as i128 => vec![*d as usize],
        other => {
            return Err(format!(
                "unparsable header {text:?}: 'shape' must be a tuple, found {}",
                other.describe()
            ))
        }
    };
    let dtype = parse_descr(&descr)?;
    Ok((dtype, fortran_order, shape))
}

// ---------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------

/// An open `.npy` file positioned at its first data byte.
struct NpyReader {
    path: PathBuf,
    header: Header,
    reader: BufReader<File>,
}

fn open(path: &Path) -> Result<NpyReader> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let file_len = file.metadata().map_err(|e| io_err(path, e))?.len();
    let mut reader = BufReader::new(file);
    let header = read_header_from(path, &mut reader, file_len)?;
    let found = file_len.saturating_sub(header.data_offset);
    let expected = header.data_bytes();
    if found < expected {
        return Err(npy_err(
            path,
            format!(
                "truncated data: shape {} of {} needs {expected} bytes, found {found}",
                shape_str(&header.shape),
                header.dtype
            ),
        ));
    }
    if found > expected {
        return Err(npy_err(
            path,
            format!(
                "{} unexpected bytes after the data: shape {} of {} needs {expected} bytes, \
                 found {found}",
                found - expected,
                shape_str(&header.shape),
                header.dtype
            ),
        ));
    }
    Ok(NpyReader {
        path: path.to_path_buf(),
        header,
        reader,
    })
}

fn read_header_from(path: &Path, r: &mut impl Read, file_len: u64) -> Result<Header> {
    let short = |what: &str| {
        npy_err(
            path,
            format!("not a .npy file: {file_len} bytes is too short to hold {what}"),
        )
    };
    let mut prefix = [0u8; 8];
    if file_len < 8 {
        // Distinguish "wrong magic" from "too short" when we can.
        let mut buf = vec![0u8; file_len as usize];
        r.read_exact(&mut buf).map_err(|e| io_err(path, e))?;
        if !MAGIC.starts_with(&buf[..buf.len().min(6)]) || buf.is_empty() {
            return Err(bad_magic(path, &buf));
        }
        return Err(short("the magic string and version"));
    }
    r.read_exact(&mut prefix).map_err(|e| io_err(path, e))?;
    if &prefix[..6] != MAGIC {
        return Err(bad_magic(path, &prefix));
    }
    let version = (prefix[6], prefix[7]);
    let len_bytes = match version {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        (major, minor) => {
            return Err(npy_err(
                path,
                format!(
                    "unsupported .npy format version {major}.{minor} \
                     (supported: 1.0, 2.0, 3.0)"
                ),
            ))
        }
    };
    if file_len < 8 + len_bytes {
        return Err(short("the header length"));
    }
    let mut len_buf = [0u8; 4];
    r.read_exact(&mut len_buf[..len_bytes as usize])
        .map_err(|e| io_err(path, e))?;
    let header_len = u32::from_le_bytes(len_buf) as u64;
    let data_offset = 8 + len_bytes + header_len;
    if file_len < data_offset {
        return Err(npy_err(
            path,
            format!(
                "truncated header: it should be {header_len} bytes, but the file ends \
                 {} bytes into it",
                file_len - 8 - len_bytes
            ),
        ));
    }
    let mut raw = vec![0u8; header_len as usize];
    r.read_exact(&mut raw).map_err(|e| io_err(path, e))?;
    let text: String = if version.0 >= 3 {
        String::from_utf8(raw).map_err(|_| {
            npy_err(
                path,
                "unparsable header: version 3.0 header is not valid UTF-8",
            )
        })?
    } else {
        // Versions 1.0 and 2.0 use latin-1, which maps bytes to code points.
        raw.iter().map(|&b| b as char).collect()
    };
    let (dtype, fortran_order, shape) =
        parse_header_dict(text.trim_end_matches(['\0'])).map_err(|r| npy_err(path, r))?;
    let too_large = || {
        npy_err(
            path,
            format!("shape {} is too large to address", shape_str(&shape)),
        )
    };
    let len = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(too_large)?;
    len.checked_mul(dtype.size())
        .filter(|&b| b as u64 <= u64::MAX - data_offset)
        .ok_or_else(too_large)?;
    Ok(Header {
        version,
        dtype,
        fortran_order,
        shape,
        data_offset,
    })
}

fn bad_magic(path: &Path, first: &[u8]) -> Error {
    let shown: Vec<String> = first.iter().take(8).map(|b| format!("{b:02x}")).collect();
    npy_err(
        path,
        format!(
            "not a .npy file: bad magic (first bytes {}; expected 93 4e 55 4d 50 59 = \"\\x93NUMPY\")",
            if shown.is_empty() {
                "none, the file is empty".to_string()
            } else {
                shown.join(" ")
            }
        ),
    )
}

impl NpyReader {
    /// Reads all `len` elements in file order, handing each (converted) to `sink`.
    fn for_each<T: Scalar>(mut self, mut sink: impl FnMut(T)) -> Result<()> {
        let size = self.header.dtype.size();
        let dtype = self.header.dtype;
        let mut left = self.header.len();
        let mut buf = vec![0u8; CHUNK_ELEMS.min(left.max(1)) * size];
        let mut done = 0u64;
        while left > 0 {
            let k = left.min(CHUNK_ELEMS);
            let bytes = &mut buf[..k * size];
            if let Err(e) = self.reader.read_exact(bytes) {
                return Err(if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    npy_err(
                        &self.path,
                        format!(
                            "truncated data: needs {} bytes, the file ended after about {done}",
                            self.header.data_bytes()
                        ),
                    )
                } else {
                    io_err(&self.path, e)
                });
            }
            for chunk in bytes.chunks_exact(size) {
                sink(T::of(dtype.decode(chunk)));
            }
            left -= k;
            done += (k * size) as u64;
        }
        Ok(())
    }

    fn into_matrix<T: Scalar>(self) -> Result<Mat<T>> {
        let (m, n) = match self.header.shape[..] {
            [m, n] => (m, n),
            _ => {
                return Err(npy_err(
                    &self.path,
                    format!(
                        "expected a 2-D array (matrix), found shape {}",
                        shape_str(&self.header.shape)
                    ),
                ))
            }
        };
        let mut a = Mat::<T>::zeros(m, n);
        if m == 0 || n == 0 {
            return Ok(a);
        }
        let (mut i, mut j) = (0usize, 0usize);
        if self.header.fortran_order {
            self.for_each(|x: T| {
                a[(i, j)] = x;
                i += 1;
                if i == m {
                    i = 0;
                    j += 1;
                }
            })?;
        } else {
            self.for_each(|x: T| {
                a[(i, j)] = x;
                j += 1;
                if j == n {
                    j = 0;
                    i += 1;
                }
            })?;
        }
        Ok(a)
    }
}

/// Reads only the header of an `.npy` file (and checks the data length), so a
/// caller can check shape and memory before reading the data.
pub fn read_header(path: &Path) -> Result<Header> {
    open(path).map(|r| r.header)
}

/// Reads a 2-D `.npy` array (`f8`, `f4` or `f2`; C or Fortran order) as a matrix
/// of `T`, converting the element type if needed.
pub fn read_matrix<T: Scalar>(path: &Path) -> Result<Mat<T>> {
    open(path)?.into_matrix()
}

/// Like [`read_matrix`], but fails unless the matrix is square.
pub fn read_square_matrix<T: Scalar>(path: &Path) -> Result<Mat<T>> {
    let reader = open(path)?;
    if let [m, n] = reader.header.shape[..] {
        if m != n {
            return Err(npy_err(
                path,
                format!(
                    "expected a square matrix, found shape {}",
                    shape_str(&reader.header.shape)
                ),
            ));
        }
    }
    reader.into_matrix()
}

/// Reads a 1-D `.npy` array (`f8`, `f4` or `f2`) as a vector of `T`.
pub fn read_vector<T: Scalar>(path: &Path) -> Result<Vec<T>> {
    let reader = open(path)?;
    if reader.header.shape.len() != 1 {
        return Err(npy_err(
            path,
            format!(
                "expected a 1-D array (vector), found shape {}",
                shape_str(&reader.header.shape)
            ),
        ));
    }
    let mut v = Vec::with_capacity(reader.header.len());
    reader.for_each(|x: T| v.push(x))?;
    Ok(v)
}

// ---------------------------------------------------------------------------
// Writing.
// ---------------------------------------------------------------------------

/// Builds a version 1.0 preamble (magic, version, length, padded header).
fn preamble(dtype: Dtype, fortran_order: bool, shape: &[usize]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
        dtype.descr(),
        if fortran_order { "True" } else { "False" },
        shape_str(shape)
    );
    // Pad with spaces and a final newline so the data start 64-byte aligned.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let header_len = total - MAGIC.len() - 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes the elements of an array of `shape`, given in Fortran order.
fn write_array<T: Scalar>(
    path: &Path,
    shape: &[usize],
    elems: impl Iterator<Item = T>,
) -> Result<()> {
    // Like NumPy, say C order when the two orders coincide (at most one
    // dimension longer than 1): the bytes are the same and so is the file.
    let fortran_order = shape.iter().filter(|&&d| d > 1).count() > 1;
    let dtype = Dtype::of::<T>();
    let file = File::create(path).map_err(|e| io_err(path, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let io = |e| io_err(path, e);
    w.write_all(&preamble(dtype, fortran_order, shape))
        .map_err(io)?;
    for x in elems {
        match dtype {
            Dtype::F64 => w.write_all(&x.f64().to_le_bytes()),
            // Exact: `x` is an f32 already.
            _ => w.write_all(&(x.f64() as f32).to_le_bytes()),
        }
        .map_err(io)?;
    }
    w.flush().map_err(io)?;
    Ok(())
}

/// Writes a matrix as a version 1.0 `.npy` file in Fortran order, with dtype
/// `'<f8'` for `f64` and `'<f4'` for `f32`. The file is byte-for-byte what
/// `numpy.save` writes for the same Fortran-ordered array (for a single row or
/// column, where C and Fortran order coincide, the header says C order, as
/// NumPy's does).
pub fn write_matrix<T: Scalar>(path: &Path, a: MatRef<'_, T>) -> Result<()> {
    let (m, n) = a.shape();
    let elems = (0..n).flat_map(move |j| (0..m).map(move |i| a[(i, j)]));
    write_array(path, &[m, n], elems)
}

/// Writes a vector as a version 1.0 1-D `.npy` file, with dtype `'<f8'` for
/// `f64` and `'<f4'` for `f32`.
pub fn write_vector<T: Scalar>(path: &Path, v: &[T]) -> Result<()> {
    write_array(path, &[v.len()], v.iter().copied())
}

#[cfg(test)]
mod tests;
