//! The SVD's routes ([`BatchedMethod`]) and the options of every batched
//! solve ([`BatchedOptions`]).

use crate::linalg::small::jacobi::JacobiParams;
use crate::linalg::small::syevj::SyevjParams;
use crate::{Error, Result, Scalar};

/// Which algorithm solves the matrices of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BatchedMethod {
    /// Blocked one-sided Jacobi ([`crate::linalg::small::jacobi`], seed 004).
    Jacobi,
    /// Householder bidiagonalisation, then dqds (values) or bidiagonal QR
    /// (vectors) ([`crate::linalg::small::gebrd_small`], seed 002).
    Gebrd,
    /// Whichever of the two was measured faster for the shape and job (see
    /// [`BatchedMethod::resolve`]).
    #[default]
    Auto,
}

impl BatchedMethod {
    /// The route used for `m x n` matrices: `self` unless [`Self::Auto`],
    /// which picks from the shape and job alone (deterministically).
    pub fn resolve(self, m: usize, n: usize, vectors: bool) -> BatchedMethod {
        match self {
            BatchedMethod::Auto => auto_method(m, n, vectors),
            other => other,
        }
    }

    /// The name used in task names and stages (`"jacobi"` or `"gebrd"`).
    pub fn name(self) -> &'static str {
        match self {
            BatchedMethod::Jacobi => "jacobi",
            BatchedMethod::Gebrd => "gebrd",
            BatchedMethod::Auto => "auto",
        }
    }
}

/// [`BatchedMethod::Auto`]'s choice: GEBRD for every shape and job, the
/// faster route at every shape measured (see the module documentation's
/// crossover table); a function of the shape so that a measured crossover
/// can be added without changing callers.
fn auto_method(m: usize, n: usize, vectors: bool) -> BatchedMethod {
    let _ = (m, n, vectors);
    BatchedMethod::Gebrd
}

impl std::str::FromStr for BatchedMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "jacobi" => Ok(BatchedMethod::Jacobi),
            "gebrd" => Ok(BatchedMethod::Gebrd),
            "auto" => Ok(BatchedMethod::Auto),
            _ => Err(Error::InvalidArgument(format!(
                "unknown batched method {s:?} (expected jacobi, gebrd or auto)"
            ))),
        }
    }
}

/// The default of [`BatchedOptions::evd_jacobi_below`]: the order from which
/// the batched EVD's one-stage path per matrix is faster than Jacobi in
/// lanes (see the module documentation of `pipeline::batched` for the
/// measurement).
pub const EVD_JACOBI_BELOW: usize = 8;

/// Options of the batched solves ([`super::svd_batched`],
/// [`super::eigh_batched`] and their forms).
#[derive(Clone, Debug)]
pub struct BatchedOptions {
    /// The route (default [`BatchedMethod::Auto`]).
    pub method: BatchedMethod,
    /// The Jacobi kernel's parameters (block width, tolerances, sweep limit).
    pub params: JacobiParams,
    /// Matrices per chunk task; `None` to size chunks for `l2_bytes`.
    pub chunk: Option<usize>,
    /// The cache a chunk's working set should fit in (bytes). Default 1 MiB.
    pub l2_bytes: usize,
    /// Automatic chunking makes at least this many chunks when the batch
    /// allows, so that the runtime can balance them over its workers.
    /// Default 16.
    pub min_chunks: usize,
    /// Converged matrices leave the active set of their chunk (default
    /// `true`). `false` keeps sweeping them until the whole chunk converged,
    /// as an unmasked batch solver would; the results are the same (see
    /// [`crate::linalg::small::jacobi::JacobiState::idle_sweep`]), it is only slower. For tests.
    pub mask: bool,
    /// Symmetric EVD: orders below this are solved by cyclic Jacobi in SIMD
    /// lanes ([`crate::linalg::small::syevj`]), larger ones by the one-stage
    /// path per matrix. Default [`EVD_JACOBI_BELOW`].
    pub evd_jacobi_below: usize,
    /// Symmetric EVD: the Jacobi kernel's parameters (sweep limit).
    pub syevj: SyevjParams,
}

impl Default for BatchedOptions {
    fn default() -> Self {
        BatchedOptions {
            method: BatchedMethod::Auto,
            params: JacobiParams::default(),
            chunk: None,
            l2_bytes: 1 << 20,
            min_chunks: 16,
            mask: true,
            evd_jacobi_below: EVD_JACOBI_BELOW,
            syevj: SyevjParams::default(),
        }
    }
}

impl BatchedOptions {
    /// The number of matrices per chunk for this batch.
    pub fn chunk_for<T: Scalar>(&self, batch: usize, m: usize, n: usize, vectors: bool) -> usize {
        if let Some(c) = self.chunk {
            return c.clamp(1, batch.max(1));
        }
        let (mt, nt) = (m.max(n), m.min(n));
        let gebrd = self.method.resolve(m, n, vectors) == BatchedMethod::Gebrd;
        let words = if gebrd {
            // Input view, working matrix and right reflectors, with vectors
            // Q, P and the outputs.
            let mut w = m * n + mt * nt + nt * nt + 6 * nt;
            if vectors {
                w += 2 * (mt * nt + nt * nt);
            }
            w
        } else {
            let (l, nb) = crate::linalg::small::jacobi::blocking_for(nt, &self.params);
            let n2 = l * nb;
            // Input view, working matrix, and with vectors V and the outputs.
            let mut w = m * n + mt * n2 + nt;
            if vectors {
                w += nt * n2 + m * nt + nt * n;
            }
            w
        };
        // The GEBRD route reduces its matrices in groups of `LANES`: a chunk
        // of a whole number of groups leaves no remainder to reduce alone.
        let lanes = crate::linalg::small::gebrd_small::LANES;
        self.chunk_of::<T>(batch, words, if gebrd { lanes } else { 1 })
    }

    /// Matrices per chunk when each needs `words` words of working set: as
    /// many as fit in [`Self::l2_bytes`], at most a share of
    /// [`Self::min_chunks`], and a whole number of groups of `group` above
    /// one group.
    pub(super) fn chunk_of<T: Scalar>(&self, batch: usize, words: usize, group: usize) -> usize {
        let fit = (self.l2_bytes / (words * std::mem::size_of::<T>()).max(1)).max(1);
        let balance = batch.div_ceil(self.min_chunks.max(1)).max(1);
        let chunk = fit.min(balance);
        if chunk > group {
            chunk - chunk % group
        } else {
            chunk
        }
    }
}
