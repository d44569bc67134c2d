//! Task footprints: the regions of shared matrices a task reads and writes.

use super::MatrixId;
use std::fmt;
use std::ops::Range;

/// A rectangle of one shared matrix, in dense (row, column) coordinates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// The matrix.
    pub matrix: MatrixId,
    /// Rows, half-open.
    pub rows: Range<usize>,
    /// Columns, half-open.
    pub cols: Range<usize>,
}

impl Region {
    /// A region of `matrix`.
    pub fn new(matrix: MatrixId, rows: Range<usize>, cols: Range<usize>) -> Self {
        Region { matrix, rows, cols }
    }

    /// Whether both regions share at least one entry.
    pub fn overlaps(&self, other: &Region) -> bool {
        fn meet(a: &Range<usize>, b: &Range<usize>) -> bool {
            a.start < b.end && b.start < a.end
        }
        self.matrix == other.matrix
            && meet(&self.rows, &other.rows)
            && meet(&self.cols, &other.cols)
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty() || self.cols.is_empty()
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "matrix #{} rows {}..{} cols {}..{}",
            self.matrix.0, self.rows.start, self.rows.end, self.cols.start, self.cols.end
        )
    }
}

/// What a task reads and writes. Two tasks conflict when a region one writes
/// overlaps a region the other reads or writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Regions read.
    pub reads: Vec<Region>,
    /// Regions written (read-write counts as written).
    pub writes: Vec<Region>,
}

impl Footprint {
    /// An empty footprint.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a region read (empty regions are dropped).
    pub fn read(mut self, r: Region) -> Self {
        if !r.is_empty() {
            self.reads.push(r);
        }
        self
    }

    /// Adds a region written (empty regions are dropped).
    pub fn write(mut self, r: Region) -> Self {
        if !r.is_empty() {
            self.writes.push(r);
        }
        self
    }

    /// The first conflicting pair of regions between two footprints, if any.
    pub fn conflict(&self, other: &Footprint) -> Option<Region> {
        let pairs = self
            .writes
            .iter()
            .flat_map(|w| other.writes.iter().chain(&other.reads).map(move |o| (w, o)))
            .chain(
                other
                    .writes
                    .iter()
                    .flat_map(|w| self.reads.iter().map(move |o| (w, o))),
            );
        for (w, o) in pairs {
            if w.overlaps(o) {
                return Some(Region {
                    matrix: w.matrix,
                    rows: w.rows.start.max(o.rows.start)..w.rows.end.min(o.rows.end),
                    cols: w.cols.start.max(o.cols.start)..w.cols.end.min(o.cols.end),
                });
            }
        }
        None
    }

    /// Whether the footprint names no region.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty()
    }
}
