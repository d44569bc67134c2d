//! The named families of symmetric test matrices, for the examples' and the
//! tests' `--family` choices.

use super::tridiagonal::glued_sizes;
use super::*;
use std::fmt;
use std::str::FromStr;

/// Block size of [`Family::GluedWilkinson`].
pub const GLUED_BLOCK: usize = 21;
/// Glue of [`Family::GluedWilkinson`].
pub const GLUED_GLUE: f64 = 1e-14;
/// Number of clusters of [`Family::Clustered`].
pub const CLUSTERS: usize = 4;
/// Relative cluster width of [`Family::Clustered`].
pub const CLUSTER_WIDTH: f64 = 1e-8;
/// Number of distinct eigenvalues of [`Family::Repeated`].
pub const REPEATED_DISTINCT: usize = 3;

/// The symmetric test-matrix families, so tests can loop over all of them with
/// [`Family::ALL`]. Each generates an `n x n` matrix for any `n >= 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// The zero matrix.
    Zero,
    /// The identity.
    Identity,
    /// A diagonal matrix with entries uniform in `[-1, 1)`.
    Diagonal,
    /// [`random_symmetric_uniform`].
    UniformSymmetric,
    /// [`random_symmetric_gaussian`].
    GaussianSymmetric,
    /// [`with_spectrum`] of [`arithmetic`]`(n, -1, 1)`.
    Arithmetic,
    /// [`with_spectrum`] of [`geometric`]`(n, 10^log10_cond)`.
    Geometric {
        /// Base-10 logarithm of the condition number.
        log10_cond: u8,
    },
    /// [`with_spectrum`] of [`clustered`]`(n, CLUSTERS, CLUSTER_WIDTH)`.
    Clustered,
    /// [`with_spectrum`] of [`repeated`]`(n, REPEATED_DISTINCT)`.
    Repeated,
    /// [`graded`].
    Graded,
    /// [`wilkinson`] `W_n^+`.
    Wilkinson,
    /// Glued Wilkinson: blocks of `W_21^+` (the last one shorter when 21 does not
    /// divide `n`) glued with [`GLUED_GLUE`].
    GluedWilkinson,
    /// [`band_random`] with this half-bandwidth (1 is tridiagonal).
    Banded {
        /// Half-bandwidth.
        half_bandwidth: usize,
    },
    /// [`toeplitz_121`].
    Toeplitz121,
}

impl Family {
    /// Every family, with the parameters the test suite uses.
    pub const ALL: [Family; 17] = [
        Family::Zero,
        Family::Identity,
        Family::Diagonal,
        Family::UniformSymmetric,
        Family::GaussianSymmetric,
        Family::Arithmetic,
        Family::Geometric { log10_cond: 2 },
        Family::Geometric { log10_cond: 8 },
        Family::Geometric { log10_cond: 15 },
        Family::Clustered,
        Family::Repeated,
        Family::Graded,
        Family::Wilkinson,
        Family::GluedWilkinson,
        Family::Banded { half_bandwidth: 1 },
        Family::Banded { half_bandwidth: 4 },
        Family::Toeplitz121,
    ];

    /// A short stable name, e.g. `"gaussian"`, `"geometric-1e8"`, `"banded-4"`;
    /// [`Family::from_str`](std::str::FromStr) parses it back.
    pub fn name(&self) -> String {
        match self {
            Family::Zero => "zero".into(),
            Family::Identity => "identity".into(),
            Family::Diagonal => "diagonal".into(),
            Family::UniformSymmetric => "uniform".into(),
            Family::GaussianSymmetric => "gaussian".into(),
            Family::Arithmetic => "arithmetic".into(),
            Family::Geometric { log10_cond } => format!("geometric-1e{log10_cond}"),
            Family::Clustered => "clustered".into(),
            Family::Repeated => "repeated".into(),
            Family::Graded => "graded".into(),
            Family::Wilkinson => "wilkinson".into(),
            Family::GluedWilkinson => "glued-wilkinson".into(),
            Family::Banded { half_bandwidth } => format!("banded-{half_bandwidth}"),
            Family::Toeplitz121 => "toeplitz-121".into(),
        }
    }

    /// The family's `n x n` matrix for this seed (families without randomness
    /// ignore the seed).
    pub fn generate<T: Scalar>(&self, n: usize, seed: u64) -> Mat<T> {
        match *self {
            Family::Zero => Mat::zeros(n, n),
            Family::Identity => Mat::identity(n, n),
            Family::Diagonal => random_diagonal(n, seed),
            Family::UniformSymmetric => random_symmetric_uniform(n, seed),
            Family::GaussianSymmetric => random_symmetric_gaussian(n, seed),
            Family::Arithmetic
            | Family::Geometric { .. }
            | Family::Clustered
            | Family::Repeated => {
                let eigs = self.eigenvalues::<f64>(n, seed).unwrap();
                to_t(with_spectrum(&eigs, seed).as_ref())
            }
            Family::Graded => graded(n, seed),
            Family::Wilkinson => wilkinson(n),
            Family::GluedWilkinson => {
                let mut sizes = vec![GLUED_BLOCK; n / GLUED_BLOCK];
                sizes.push(n % GLUED_BLOCK);
                let (d, e) = glued_sizes::<T>(&sizes, GLUED_GLUE);
                tridiagonal_to_dense(&d, &e)
            }
            Family::Banded { half_bandwidth } => band_random(n, half_bandwidth, seed),
            Family::Toeplitz121 => toeplitz_121(n),
        }
    }

    /// The exact eigenvalues, ascending, for families where they are known by
    /// construction (the generated matrix has them up to its rounding); `None`
    /// for the others.
    pub fn eigenvalues<T: Scalar>(&self, n: usize, seed: u64) -> Option<Vec<T>> {
        Some(match *self {
            Family::Zero => vec![T::zero(); n],
            Family::Identity => vec![T::one(); n],
            Family::Diagonal => {
                let mut d = random_diagonal_entries(n, seed);
                d.sort_by(f64::total_cmp);
                d.into_iter().map(T::of).collect()
            }
            Family::Arithmetic => arithmetic(n, -1.0, 1.0),
            Family::Geometric { log10_cond } => geometric(n, 10f64.powi(log10_cond as i32)),
            Family::Clustered => clustered(n, CLUSTERS, CLUSTER_WIDTH),
            Family::Repeated => repeated(n, REPEATED_DISTINCT),
            Family::Toeplitz121 => toeplitz_121_eigenvalues(n),
            Family::UniformSymmetric
            | Family::GaussianSymmetric
            | Family::Graded
            | Family::Wilkinson
            | Family::GluedWilkinson
            | Family::Banded { .. } => return None,
        })
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Family {
    type Err = crate::Error;

    /// Parses a [`Family::name`]; `geometric-1eK` and `banded-B` take any `K`
    /// and `B`.
    fn from_str(s: &str) -> crate::Result<Family> {
        let s = s.trim().to_ascii_lowercase();
        if let Some(k) = s.strip_prefix("geometric-1e") {
            if let Ok(log10_cond) = k.parse() {
                return Ok(Family::Geometric { log10_cond });
            }
        }
        if let Some(b) = s.strip_prefix("banded-") {
            if let Ok(half_bandwidth) = b.parse() {
                return Ok(Family::Banded { half_bandwidth });
            }
        }
        Family::ALL
            .iter()
            .find(|f| f.name() == s)
            .copied()
            .ok_or_else(|| {
                let names: Vec<String> = Family::ALL.iter().map(Family::name).collect();
                crate::Error::InvalidArgument(format!(
                    "unknown matrix family '{s}'; known: {}",
                    names.join(", ")
                ))
            })
    }
}
