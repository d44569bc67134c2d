//! Matrix storage: dense column-major matrices (faer's `Mat`), [`SharedMatrix`] for
//! tile access from concurrent tasks, symmetric [`band`] storage and `.npy` I/O.

pub(crate) mod access;
pub mod band;
pub mod npy;
mod shared;
mod split;

pub use band::SymBand;
pub use shared::{MatrixId, SharedMatrix};
pub use split::{ColsMut, ReadAll, SplitColumns};

use crate::{Error, Result, Scalar};
use faer::MatRef;

/// Returns an [`Error::NonFinite`] naming the first non-finite entry of the lower
/// triangle (`lower_only`) or of the whole matrix.
pub fn check_finite<T: Scalar>(a: MatRef<'_, T>, lower_only: bool) -> Result<()> {
    for j in 0..a.ncols() {
        let start = if lower_only { j } else { 0 };
        for i in start..a.nrows() {
            let x = a[(i, j)];
            if !x.is_finite() {
                return Err(Error::NonFinite {
                    row: i,
                    col: j,
                    value: format!("{x}"),
                });
            }
        }
    }
    Ok(())
}
pub use band::{BandMut, SharedBand};
