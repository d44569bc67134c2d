//! The 2-D block-cyclic layout of ScaLAPACK and ELPA, in pure Rust (no MPI):
//! how many rows and columns a process holds (`numroc`), where a global index
//! lives and where a local one comes from, the process grid's shape, the
//! per-rank memory figure, and the random matrices that are the same on any
//! grid. These run (and are tested) in the default build.
//!
//! Convention (ScaLAPACK's, "ScaLAPACK Users' Guide", §4.3.2, with the first
//! block on process 0): along one axis of length `n` cut into blocks of `nb`,
//! block `b` (global indices `b nb .. (b + 1) nb`) belongs to process
//! `b mod p` and is that process's local block `b / p`.

/// `numroc`: how many of the `n` indices, in blocks of `nb` dealt
/// round-robin over `nprocs` processes starting at `isrc`, process `iproc`
/// holds.
pub fn numroc(n: usize, nb: usize, iproc: usize, isrc: usize, nprocs: usize) -> usize {
    let dist = (nprocs + iproc - isrc) % nprocs;
    let nblocks = n / nb;
    let mut count = (nblocks / nprocs) * nb;
    let extra = nblocks % nprocs;
    if dist < extra {
        count += nb;
    } else if dist == extra {
        count += n % nb;
    }
    count
}

/// One axis (rows or columns) of a block-cyclic layout, seen from one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axis {
    /// Global length.
    pub n: usize,
    /// Block size.
    pub nb: usize,
    /// Processes along this axis.
    pub procs: usize,
    /// This process's coordinate along the axis.
    pub me: usize,
}

impl Axis {
    /// Number of local indices (`numroc`).
    pub fn local_len(&self) -> usize {
        numroc(self.n, self.nb, self.me, 0, self.procs)
    }

    /// The process coordinate that holds global index `g`.
    pub fn owner(&self, g: usize) -> usize {
        (g / self.nb) % self.procs
    }

    /// The local index of global index `g` on its owner.
    pub fn to_local(&self, g: usize) -> usize {
        (g / (self.nb * self.procs)) * self.nb + g % self.nb
    }

    /// The global index of local index `l` of this process.
    pub fn to_global(&self, l: usize) -> usize {
        (l / self.nb) * self.nb * self.procs + self.me * self.nb + l % self.nb
    }

    /// This process's blocks: `(global start, local start, length)`, in order.
    pub fn blocks(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let step = self.nb * self.procs;
        (self.me * self.nb..self.n)
            .step_by(step.max(1))
            .map(move |g| (g, self.to_local(g), self.nb.min(self.n - g)))
    }
}

/// A process's share of an `m x n` block-cyclic matrix: column-major local
/// storage with leading dimension [`Layout::lld`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The row axis.
    pub rows: Axis,
    /// The column axis.
    pub cols: Axis,
}

impl Layout {
    /// The layout of an `m x n` matrix in square `nb x nb` blocks on a
    /// `nprow x npcol` grid, seen from process `(myrow, mycol)`.
    pub fn new(m: usize, n: usize, nb: usize, grid: (usize, usize), me: (usize, usize)) -> Layout {
        Layout {
            rows: Axis {
                n: m,
                nb,
                procs: grid.0,
                me: me.0,
            },
            cols: Axis {
                n,
                nb,
                procs: grid.1,
                me: me.1,
            },
        }
    }

    /// Leading dimension of the local array (at least 1, as ScaLAPACK asks).
    pub fn lld(&self) -> usize {
        self.rows.local_len().max(1)
    }

    /// Number of local elements the local array holds (`lld x local columns`,
    /// at least 1 so that a process with no share still passes a valid pointer).
    pub fn local_elems(&self) -> usize {
        (self.lld() * self.cols.local_len()).max(1)
    }

    /// Offset in the local array of global entry `(i, j)`, which must be local.
    pub fn local_offset(&self, i: usize, j: usize) -> usize {
        self.rows.to_local(i) + self.lld() * self.cols.to_local(j)
    }
}

/// A near-square `P x Q` grid for `p` processes, `P <= Q`: `P` is the largest
/// divisor of `p` not above its square root (ScaLAPACK's advice: square-ish
/// grids, slightly more columns than rows).
pub fn near_square(p: usize) -> (usize, usize) {
    let p = p.max(1);
    let mut best = 1;
    let mut d = 1;
    while d * d <= p {
        if p.is_multiple_of(d) {
            best = d;
        }
        d += 1;
    }
    (best, p / best)
}

/// Parses `--grid PxQ` (both at least 1).
pub fn parse_grid(s: &str) -> std::result::Result<(usize, usize), String> {
    let (p, q) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected PxQ (e.g. 2x3), got {s:?}"))?;
    let p: usize = p.trim().parse().map_err(|e| format!("P in {s:?}: {e}"))?;
    let q: usize = q.trim().parse().map_err(|e| format!("Q in {s:?}: {e}"))?;
    if p == 0 || q == 0 {
        return Err(format!("both sides of {s:?} must be at least 1"));
    }
    Ok((p, q))
}

/// What a distributed run computes, for the memory figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// Symmetric eigenvalues only.
    EvdValues,
    /// Symmetric eigenvalues and eigenvectors.
    EvdVectors,
    /// Singular values only.
    SvdValues,
    /// Singular values with U and V^T.
    SvdVectors,
}

/// Bytes the largest share of one rank takes for an `m x n` problem (`m = n`
/// for the EVD) on a `grid`, in `elem`-byte scalars: the local matrix, the
/// local vectors, and an estimate of the engines' workspace of one more local
/// matrix (ELPA's band and work arrays, ScaLAPACK's `work`), plus the global
/// vector of values every rank holds. Rank `(0, 0)` has the largest share.
/// `None` when the figure overflows 64 bits.
pub fn bytes_per_rank(
    job: Job,
    m: usize,
    n: usize,
    nb: usize,
    grid: (usize, usize),
    elem: usize,
) -> Option<u64> {
    let share = |r: usize, c: usize| {
        let lr = numroc(r, nb, 0, 0, grid.0).max(1) as u64;
        let lc = numroc(c, nb, 0, 0, grid.1).max(1) as u64;
        lr.checked_mul(lc)
    };
    let k = m.min(n);
    let elems = match job {
        Job::EvdValues => share(n, n)?.checked_mul(2)?,
        Job::EvdVectors => share(n, n)?.checked_mul(3)?,
        Job::SvdValues => share(m, n)?.checked_mul(2)?,
        Job::SvdVectors => share(m, n)?
            .checked_mul(2)?
            .checked_add(share(m, k)?)?
            .checked_add(share(k, n)?)?,
    };
    elems.checked_add(k as u64)?.checked_mul(elem as u64)
}

/// The smallest rank count (on near-square grids) whose largest per-rank
/// share fits in `per_rank` bytes, if one up to `limit` does.
pub fn smallest_fitting_ranks(
    job: Job,
    m: usize,
    n: usize,
    nb: usize,
    elem: usize,
    per_rank: u64,
    limit: usize,
) -> Option<usize> {
    (1..=limit).find(|&p| {
        bytes_per_rank(job, m, n, nb, near_square(p), elem).is_some_and(|b| b <= per_rank)
    })
}

/// SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable
/// pseudorandom number generators", OOPSLA 2014): a bijective 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Entry `(i, j)` of the random matrix of `seed`: uniform in [-1, 1), a
/// function of `(seed, i, j)` alone, so each rank generates its own blocks and
/// the matrix is the same on any grid and block size.
pub fn random_entry(seed: u64, i: usize, j: usize) -> f64 {
    let z = mix(mix(mix(seed) ^ i as u64) ^ (j as u64).rotate_left(32));
    (z >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
}

/// Entry `(i, j)` of the random symmetric matrix of `seed`: the lower
/// triangle's [`random_entry`] mirrored.
pub fn random_symmetric_entry(seed: u64, i: usize, j: usize) -> f64 {
    random_entry(seed, i.max(j), i.min(j))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numroc_shares_add_up_and_match_a_direct_count() {
        for n in [0, 1, 2, 7, 31, 64, 300, 301] {
            for nb in [1, 3, 7, 32, 64] {
                for p in 1..=5 {
                    let mut total = 0;
                    for me in 0..p {
                        let direct = (0..n).filter(|g| (g / nb) % p == me).count();
                        assert_eq!(
                            numroc(n, nb, me, 0, p),
                            direct,
                            "n {n} nb {nb} p {p} me {me}"
                        );
                        total += direct;
                    }
                    assert_eq!(total, n);
                }
            }
        }
    }

    /// The pure-Rust `numroc` against ScaLAPACK's own (no MPI needed: it is
    /// arithmetic only).
    #[cfg(feature = "mpi")]
    #[test]
    fn numroc_matches_scalapack() {
        for n in [0, 1, 2, 31, 300, 301] {
            for nb in [1, 7, 64] {
                for p in 1..=4usize {
                    for me in 0..p {
                        for src in 0..p {
                            let (ni, nbi, mei, srci, pi) =
                                (n as i32, nb as i32, me as i32, src as i32, p as i32);
                            // SAFETY: numroc_ reads five integers and touches nothing else.
                            let theirs =
                                unsafe { super::super::ffi::numroc_(&ni, &nbi, &mei, &srci, &pi) };
                            assert_eq!(numroc(n, nb, me, src, p), theirs as usize);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn local_and_global_indices_are_inverse() {
        for n in [1, 2, 31, 301] {
            for nb in [1, 7, 32] {
                for p in 1..=4 {
                    let mut seen = vec![false; n];
                    for me in 0..p {
                        let a = Axis {
                            n,
                            nb,
                            procs: p,
                            me,
                        };
                        for l in 0..a.local_len() {
                            let g = a.to_global(l);
                            assert!(g < n);
                            assert_eq!(a.owner(g), me);
                            assert_eq!(a.to_local(g), l);
                            assert!(!seen[g]);
                            seen[g] = true;
                        }
                        let mut next_local = 0;
                        for (g0, l0, len) in a.blocks() {
                            assert_eq!(l0, next_local);
                            for t in 0..len {
                                assert_eq!(a.to_global(l0 + t), g0 + t);
                            }
                            next_local += len;
                        }
                        assert_eq!(next_local, a.local_len());
                    }
                    assert!(seen.iter().all(|&s| s), "n {n} nb {nb} p {p}");
                }
            }
        }
    }

    #[test]
    fn grids_are_near_square() {
        assert_eq!(near_square(1), (1, 1));
        assert_eq!(near_square(2), (1, 2));
        assert_eq!(near_square(3), (1, 3));
        assert_eq!(near_square(4), (2, 2));
        assert_eq!(near_square(6), (2, 3));
        assert_eq!(near_square(12), (3, 4));
        assert_eq!(near_square(64), (8, 8));
        assert_eq!(parse_grid("2x3"), Ok((2, 3)));
        assert!(parse_grid("0x3").is_err());
        assert!(parse_grid("23").is_err());
    }

    #[test]
    fn memory_figure_falls_with_ranks_and_names_what_fits() {
        let one = bytes_per_rank(Job::EvdVectors, 1000, 1000, 64, (1, 1), 8).unwrap();
        // 3 n^2 + n doubles on one rank.
        assert_eq!(one, (3 * 1000 * 1000 + 1000) * 8);
        let four = bytes_per_rank(Job::EvdVectors, 1000, 1000, 64, (2, 2), 8).unwrap();
        assert!(four < one / 3, "{four} vs {one}");
        let p = smallest_fitting_ranks(Job::EvdVectors, 1000, 1000, 64, 8, four, 64).unwrap();
        assert!(p <= 4);
        assert!(
            bytes_per_rank(Job::EvdVectors, 1000, 1000, 64, near_square(p), 8).unwrap() <= four
        );
        assert_eq!(
            bytes_per_rank(Job::EvdValues, usize::MAX, usize::MAX, 64, (1, 1), 8),
            None
        );
    }

    #[test]
    fn random_matrix_is_symmetric_bounded_and_seeded() {
        let mut sum = 0.0;
        for i in 0..50 {
            for j in 0..50 {
                let x = random_symmetric_entry(7, i, j);
                assert_eq!(x, random_symmetric_entry(7, j, i));
                assert!((-1.0..1.0).contains(&x));
                sum += x;
            }
        }
        assert!(sum.abs() < 200.0, "mean far from 0: {sum}");
        assert_ne!(random_entry(7, 3, 4), random_entry(8, 3, 4));
        assert_ne!(random_entry(7, 3, 4), random_entry(7, 4, 3));
    }
}
