//! `Access`: the views a task of a stage builder may take, checked against the
//! footprint it declared.
//!
//! The stage builders of [`crate::pipeline`] never touch shared storage through
//! `unsafe` themselves. Each task body receives an [`Access`] built from the
//! task's declared [`Footprint`], and takes its views through the crate-private
//! accessors of [`super::SharedMatrix`], [`super::SharedBand`] and
//! [`crate::linalg::band::sb2st::SharedReflectors`], which check that
//!
//! * the view lies inside a region the footprint declares (written for a mutable
//!   view, read or written for a shared one), and
//! * it does not overlap a view the same task already holds, unless both are
//!   shared,
//!
//! and panic otherwise (a panicking task fails its run with
//! [`crate::Error::TaskPanicked`]; it never touches memory it did not declare).
//! What remains for the views to be free of data races is a property of the
//! graph alone: two tasks whose declared footprints conflict are ordered by a
//! path. The builders derive their edges to guarantee it, and
//! [`crate::graph::TaskGraph::check_races`] verifies it for every stage in the
//! tests (with negative controls that drop each kind of edge).

use super::{Footprint, MatrixId, Region};
use parking_lot::Mutex;
use std::ops::Range;

/// The declared footprint of the running task and the views it has taken.
pub(crate) struct Access<'r> {
    footprint: Option<&'r Footprint>,
    /// Views handed out so far: region and whether it is mutable.
    held: Mutex<Vec<(Region, bool)>>,
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    inner.is_empty() || (outer.start <= inner.start && inner.end <= outer.end)
}

impl<'r> Access<'r> {
    /// The access of a running task whose declared footprint is `footprint`
    /// (the runtime hands it to the body in
    /// [`TaskContext`](crate::graph::TaskContext)).
    pub(crate) fn of(footprint: Option<&'r Footprint>) -> Self {
        Access {
            footprint,
            held: Mutex::new(Vec::new()),
        }
    }

    /// Records a view of `rows x cols` of `matrix` (mutable if `write`), or panics
    /// if the footprint does not declare it or it conflicts with a view held.
    pub(crate) fn grant(
        &self,
        matrix: MatrixId,
        rows: Range<usize>,
        cols: Range<usize>,
        write: bool,
    ) {
        if rows.is_empty() || cols.is_empty() {
            return;
        }
        let covered =
            |r: &Region| r.matrix == matrix && contains(&r.rows, &rows) && contains(&r.cols, &cols);
        let declared = self.footprint.is_some_and(|fp| {
            fp.writes.iter().any(covered) || (!write && fp.reads.iter().any(covered))
        });
        let region = Region::new(matrix, rows, cols);
        assert!(
            declared,
            "task takes a {} view of {region} outside its declared footprint",
            if write { "mutable" } else { "shared" },
        );
        let mut held = self.held.lock();
        if let Some((other, _)) = held
            .iter()
            .find(|(r, w)| (write || *w) && r.overlaps(&region))
        {
            panic!("task takes overlapping views {region} and {other}");
        }
        held.push((region, write));
    }
}
