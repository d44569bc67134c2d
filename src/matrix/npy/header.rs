//! The `.npy` preamble: magic, version, header length and the header
//! dictionary (a small Python literal parser).

use super::{io_err, npy_err, shape_str, Dtype, Header, MAGIC};
use crate::{Error, Result};
use std::io::Read;
use std::path::Path;

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
pub(super) fn parse_header_dict(
    text: &str,
) -> std::result::Result<(Dtype, bool, Vec<usize>), String> {
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
