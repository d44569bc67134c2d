//! The `.npy` preamble: magic, version, header length and the header
//! dictionary (a small Python literal parser).

use super::{io_err, npy_err, shape_str, Dtype, Header, MAGIC, MAX_HEADER_LEN};
use crate::{Error, Result};
use std::io::Read;
use std::path::Path;

/// Deepest nesting of braces, brackets and parentheses the parser follows. A
/// NumPy header nests two levels (the dictionary and its shape tuple), a
/// structured dtype a few more; the limit bounds the recursive descent's stack
/// use whatever the input (a megabyte of `[` would otherwise overflow it).
const MAX_DEPTH: usize = 32;

/// Longest piece of header text an error message quotes, in characters.
const EXCERPT_CHARS: usize = 40;

/// `text` as quoted in an error message: at most [`EXCERPT_CHARS`] characters
/// (`...` marks a cut), control characters escaped, so a 10,000-byte header
/// never ends up in a message whole.
fn clip(text: &str) -> String {
    let mut out = String::new();
    for (k, c) in text.chars().enumerate() {
        if k == EXCERPT_CHARS {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// One character as quoted in an error message (control characters escaped).
fn show(c: char) -> String {
    clip(c.encode_utf8(&mut [0; 4]))
}

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
    /// The value as Python would print it, clipped for an error message.
    fn brief(&self) -> String {
        clip(&self.describe())
    }

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

/// A recursive-descent parser of the Python literals a header may hold, with
/// the nesting depth bounded by [`MAX_DEPTH`].
struct LiteralParser {
    chars: Vec<char>,
    pos: usize,
    /// Open braces, brackets and parentheses around `pos`.
    depth: usize,
}

impl LiteralParser {
    fn new(src: &str) -> Self {
        LiteralParser {
            chars: src.chars().collect(),
            pos: 0,
            depth: 0,
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
                "expected '{c}' at offset {}, found '{}'",
                self.pos,
                show(x)
            )),
            None => Err(format!(
                "expected '{c}' at offset {}, found the end",
                self.pos
            )),
        }
    }

    fn value(&mut self) -> std::result::Result<PyValue, String> {
        match self.peek() {
            Some('{' | '(' | '[') => {
                if self.depth == MAX_DEPTH {
                    return Err(format!(
                        "nesting deeper than {MAX_DEPTH} levels at offset {}",
                        self.pos
                    ));
                }
                self.depth += 1;
                let v = self.compound();
                self.depth -= 1;
                v
            }
            None => Err("unexpected end of header".to_string()),
            Some(q @ ('\'' | '"')) => self.string(q),
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => self.int(),
            Some(c) if c.is_alphabetic() || c == '_' => self.ident(),
            Some(c) => Err(format!(
                "unexpected character '{}' at offset {}",
                show(c),
                self.pos
            )),
        }
    }

    /// A dictionary, tuple or list (the next character opens one).
    fn compound(&mut self) -> std::result::Result<PyValue, String> {
        match self.peek() {
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
            _ => Ok(PyValue::List(self.sequence('[', ']')?.0)),
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
                        "expected ',' or '}}' at offset {}, found '{}'",
                        self.pos,
                        show(c)
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
                        "expected ',' or '{close}' at offset {}, found '{}'",
                        self.pos,
                        show(c)
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
            .map_err(|_| format!("invalid integer '{}' at offset {start}", clip(&text)))
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
            _ => Err(format!(
                "unexpected name '{}' at offset {start}",
                clip(&word)
            )),
        }
    }

    fn finish(&mut self) -> std::result::Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(c) => Err(format!(
                "unexpected '{}' after the dictionary at offset {}",
                show(c),
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
                "unsupported dtype '{}': only float64 ('<f8'), float32 ('<f4') and \
                 float16 ('<f2') are supported; convert with a.astype('<f8')",
                clip(descr)
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
            "unsupported dtype '{}': big-endian data are not supported; \
             convert with a.astype('{}')",
            clip(descr),
            dtype.descr()
        ));
    }
    Ok(dtype)
}

/// Parses the header dictionary text into (dtype, fortran_order, shape).
pub(super) fn parse_header_dict(
    text: &str,
) -> std::result::Result<(Dtype, bool, Vec<usize>), String> {
    // Messages quote only the start of the header (it may be 10,000 bytes).
    let unparsable = format!("unparsable header \"{}\"", clip(text));
    let mut p = LiteralParser::new(text);
    let value = p.value().map_err(|e| format!("{unparsable}: {e}"))?;
    p.finish().map_err(|e| format!("{unparsable}: {e}"))?;
    let PyValue::Dict(entries) = value else {
        return Err(format!(
            "{unparsable}: expected a dictionary, found {}",
            value.brief()
        ));
    };
    let get = |key: &str| {
        entries
            .iter()
            .find(|(k, _)| matches!(k, PyValue::Str(s) if s == key))
            .map(|(_, v)| v)
    };
    let missing = |key: &str| format!("{unparsable}: missing key '{key}'");

    let descr = match get("descr").ok_or_else(|| missing("descr"))? {
        PyValue::Str(s) => s.clone(),
        other => {
            return Err(format!(
                "unsupported dtype {}: structured and other non-scalar dtypes are not supported",
                other.brief()
            ))
        }
    };
    let fortran_order = match get("fortran_order").ok_or_else(|| missing("fortran_order"))? {
        PyValue::Bool(b) => *b,
        other => {
            return Err(format!(
                "{unparsable}: 'fortran_order' must be True or False, found {}",
                other.brief()
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
                            "{unparsable}: invalid dimension {} in 'shape'",
                            other.brief()
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
                "{unparsable}: 'shape' must be a tuple, found {}",
                other.brief()
            ))
        }
    };
    let dtype = parse_descr(&descr)?;
    Ok((dtype, fortran_order, shape))
}

pub(super) fn read_header_from(path: &Path, r: &mut impl Read, file_len: u64) -> Result<Header> {
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
    // Refuse before reading (or allocating) the header: a corrupt length field
    // may say 4 GiB.
    if header_len > MAX_HEADER_LEN as u64 {
        return Err(npy_err(
            path,
            format!(
                "header of {header_len} bytes exceeds the limit of {MAX_HEADER_LEN} bytes \
                 (NumPy's own limit for reading); the file is corrupt or not a .npy file"
            ),
        ));
    }
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
