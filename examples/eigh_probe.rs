use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use faer::Mat;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let th: usize = args[1].parse().unwrap();
    let n: usize = args[2].parse().unwrap();
    let reps: usize = args[3].parse().unwrap();
    let rt = Runtime::builder().threads(th).build();
    let a: Mat<f64> = eigenflow::gallery::random_symmetric_uniform(n, 42);
    let mut one = EvdOptions::auto();
    one.one_stage_below = usize::MAX;
    let mut ts = vec![];
    for _ in 0..reps {
        let s = Instant::now();
        std::hint::black_box(eigh(a.as_ref(), EvdJob::Values, &one, &rt).unwrap());
        ts.push(s.elapsed().as_secs_f64());
    }
    ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "eigh values n {n} thr {th}: median {:.4e} min {:.4e}",
        ts[ts.len() / 2],
        ts[0]
    );
}
