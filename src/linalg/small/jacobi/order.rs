//! The Brent-Luk round-robin parallel ordering ([004 §5.1], Abdelfattah and
//! Fasi; the generator `next` is the one of MAGMA's batched one-sided Jacobi).
//!
//! `l` (even) indices are split into `l / 2` disjoint pairs; `l - 1` such
//! iterations cover all `l (l - 1) / 2` pairs exactly once (one sweep). The
//! outer solver uses it over block columns, the inner eigensolver over the
//! rows and columns of a Gram matrix.

/// Where index `c` moves between two iterations (0-based, `l` even).
#[inline]
fn next(l: usize, c: usize) -> usize {
    if c == 0 {
        0
    } else if c == l - 1 || c == 2 {
        c - 1
    } else if c.is_multiple_of(2) {
        c - 2
    } else {
        c + 2
    }
}

/// Writes the `l / 2` disjoint pairs of iteration `r` (`0 <= r < l - 1`) of a
/// round-robin sweep over `l` indices (`l` even, `l >= 2`) into `out`.
/// Iteration 0 is `(0, 1), (2, 3), ...`; iteration `r` applies `next` `r`
/// times to both members. A pair may come out as `(j, k)` with `j > k`.
///
/// # Panics
/// If `l` is odd or zero (a caller error: the solvers pad to even counts).
pub fn round_robin_into(l: usize, r: usize, out: &mut Vec<(usize, usize)>) {
    assert!(
        l >= 2 && l.is_multiple_of(2),
        "round robin needs an even count, got {l}"
    );
    out.clear();
    for t in 0..l / 2 {
        let (mut a, mut b) = (2 * t, 2 * t + 1);
        for _ in 0..r {
            a = next(l, a);
            b = next(l, b);
        }
        out.push((a, b));
    }
}

/// The pairs of iteration `r` of a round-robin sweep over `l` indices (see
/// [`round_robin_into`]).
pub fn round_robin(l: usize, r: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::with_capacity(l / 2);
    round_robin_into(l, r, &mut v);
    v
}

/// All iterations of one sweep over `l` indices, in order: `l - 1` lists of
/// `l / 2` pairs. Solvers compute this once per shape and reuse it.
pub fn sweep_schedule(l: usize) -> Vec<Vec<(usize, usize)>> {
    (0..l - 1).map(|r| round_robin(l, r)).collect()
}
