//! Helpers shared by the tests of the `linalg` kernels.

use crate::Scalar;
use faer::Mat;

/// A seeded splitmix64 generator of uniform numbers in `[-1, 1)`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A random `m x n` matrix with entries exactly representable in `T`.
pub fn random<T: Scalar>(m: usize, n: usize, rng: &mut Rng) -> Mat<T> {
    Mat::from_fn(m, n, |_, _| T::of(rng.uniform()))
}

/// Converts to `f64` (exact).
pub fn to_f64<T: Scalar>(a: faer::MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)].f64())
}

/// `||A||_F` in f64.
pub fn fro(a: faer::MatRef<'_, f64>) -> f64 {
    a.norm_l2()
}

/// A DAG given by predecessor lists (node ids `0..n`), for the schedule
/// checks of the bulge-chasing kernels.
pub struct Dag {
    /// `preds[i]`: the direct predecessors of node `i`.
    pub preds: Vec<Vec<usize>>,
}

impl Dag {
    /// A topological order: the ready node is picked at random with `rng`,
    /// else the smallest ready id first. Panics on a cycle.
    pub fn topo(&self, mut rng: Option<&mut Rng>) -> Vec<usize> {
        let n = self.preds.len();
        let mut indeg: Vec<usize> = self.preds.iter().map(Vec::len).collect();
        let mut succ = vec![Vec::new(); n];
        for (i, ps) in self.preds.iter().enumerate() {
            for &p in ps {
                succ[p].push(i);
            }
        }
        let mut ready: std::collections::BTreeSet<usize> =
            (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while !ready.is_empty() {
            let i = match rng.as_mut() {
                Some(r) => {
                    let k = (r.next_u64() % ready.len() as u64) as usize;
                    *ready.iter().nth(k).unwrap()
                }
                None => *ready.first().unwrap(),
            };
            ready.remove(&i);
            order.push(i);
            for &j in &succ[i] {
                indeg[j] -= 1;
                if indeg[j] == 0 {
                    ready.insert(j);
                }
            }
        }
        assert_eq!(order.len(), n, "the graph has a cycle");
        order
    }

    /// `anc[i][j]`: node `j` precedes node `i` (transitively).
    pub fn ancestors(&self) -> Vec<Vec<bool>> {
        let n = self.preds.len();
        let mut anc = vec![vec![false; n]; n];
        for i in self.topo(None) {
            let mut row = vec![false; n];
            for &p in &self.preds[i] {
                row[p] = true;
                for (r, &a) in row.iter_mut().zip(&anc[p]) {
                    *r |= a;
                }
            }
            anc[i] = row;
        }
        anc
    }
}

/// `||Q^T Q - I||_F` in f64.
pub fn orth_err(q: faer::MatRef<'_, f64>) -> f64 {
    let n = q.ncols();
    let mut g = q.transpose() * q;
    for i in 0..n {
        g[(i, i)] -= 1.0;
    }
    g.norm_l2()
}
