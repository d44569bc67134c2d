//! Writes DOT snapshots of the standard pipelines at small sizes into `graphs/`
//! (render with `dot -Tsvg graphs/evd_values_n24_b4.dot -o evd.svg`).
//!
//! `cargo run --release --example graph [-- OUTPUT_DIR]`

use clap::Parser;
use eigenflow::gallery;
use eigenflow::pipeline::{evd_graph, EvdJob, EvdOptions};
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "Writes DOT snapshots of the EVD task graph at n = 24 (nothing is run)")]
struct Args {
    /// Directory for the .dot files (created if needed).
    #[arg(default_value = "graphs")]
    output_dir: PathBuf,
}

fn main() -> eigenflow::Result<()> {
    // Parsed before anything touches the disk: `--help` creates nothing.
    let dir = Args::parse().output_dir;
    std::fs::create_dir_all(&dir).map_err(|source| eigenflow::Error::Io {
        path: dir.clone(),
        source,
    })?;
    let n = 24;
    let a = gallery::random_symmetric_uniform::<f64>(n, 1);
    for (name, fine) in [
        ("evd_values_n24_b4", true),
        ("evd_values_n24_b4_grouped", false),
    ] {
        let mut opts = EvdOptions::auto();
        opts.bandwidth = 4;
        opts.tile = 8;
        opts.sweep_group = 4;
        opts.step_chunk = 4;
        opts.fine_stage2 = fine;
        let g = evd_graph(a.as_ref(), EvdJob::Values, &opts)?.graph;
        g.check_races()?;
        let path = dir.join(format!("{name}.dot"));
        std::fs::write(&path, g.to_dot()).map_err(|source| eigenflow::Error::Io {
            path: path.clone(),
            source,
        })?;
        println!(
            "{}: {} tasks, {} edges",
            path.display(),
            g.len(),
            g.edge_count()
        );
    }
    Ok(())
}
