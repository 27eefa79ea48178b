//! Draws the comparison picture of `search-bench --svg` from trace files that exist already
//! (ours from `search-bench --traces`, peers' such as Kernel Tuner's or Optuna's), without
//! running a strategy, and renders it to PNG for the README.
//!
//! ```sh
//! cargo run --release -p search-strategies --example plot_traces -- \
//!   --traces traces.json --peer kt:KT_TRACES_dev.json.gz --top 3 \
//!   --svg gap.svg --png gap.png CACHES...
//! ```

use std::path::PathBuf;

use clap::Parser;
use search_strategies::bench::{curves, Table};
use search_strategies::plot::{gap_svg, Curve};
use search_strategies::replay::{read_json, ReplaySpace};
use search_strategies::score::{Baseline, TraceFile};

/// Draws mean gap-to-optimum curves from trace files.
#[derive(Parser, Debug)]
struct Args {
    /// The Kernel Tuner cache files the traces were made on (for each space's optimum).
    #[arg(required = true)]
    caches: Vec<PathBuf>,
    /// Our traces (`search-bench --traces`).
    #[arg(long)]
    traces: PathBuf,
    /// A peer's traces as PREFIX:FILE (e.g. `kt:KT_TRACES_dev.json.gz`); repeatable.
    #[arg(long)]
    peer: Vec<String>,
    /// How many of each peer's strategies to draw (best mean standardised score first).
    #[arg(long, default_value_t = 3)]
    top: usize,
    /// Unique configurations measured per run.
    #[arg(long, default_value_t = 200)]
    budget: usize,
    /// Title of the picture.
    #[arg(
        long,
        default_value = "gap to the optimum, mean over spaces and seeds (lower is better)"
    )]
    title: String,
    /// Where to write the SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Where to write the PNG.
    #[arg(long)]
    png: Option<PathBuf>,
}

fn load(path: &std::path::Path) -> Result<TraceFile, String> {
    let json = read_json(path).map_err(|e| e.to_string())?;
    serde_json::from_value(json).map_err(|e| format!("{}: {e}", path.display()))
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let mut baselines = Vec::new();
    for path in &args.caches {
        let r = ReplaySpace::load_auto(path).map_err(|e| e.to_string())?;
        if let Some(b) = Baseline::new(&r.table, args.budget) {
            baselines.push((path.display().to_string(), b));
        }
    }
    let ours = load(&args.traces)?;
    let mut lines: Vec<Curve> = curves(&ours, &baselines, args.budget, "")
        .into_iter()
        .map(|(n, c)| Curve::new(n, c, false))
        .collect();
    for spec in &args.peer {
        let (prefix, file) = spec
            .split_once(':')
            .ok_or_else(|| format!("--peer {spec}: expected PREFIX:FILE"))?;
        let theirs = load(std::path::Path::new(file))?;
        let prefix = format!("{prefix}:");
        let table = Table::score(&theirs, &baselines, args.budget, &prefix);
        let best: Vec<String> = table
            .means()
            .into_iter()
            .map(|(n, _)| n)
            .take(args.top)
            .collect();
        for (n, c) in curves(&theirs, &baselines, args.budget, &prefix) {
            if best.contains(&n) {
                lines.push(Curve::new(n, c, true));
            }
        }
    }
    let svg = gap_svg(&lines, &args.title);
    if let Some(p) = &args.svg {
        std::fs::write(p, &svg).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(p) = &args.png {
        let mut opt = resvg::usvg::Options::default();
        opt.fontdb_mut().load_system_fonts();
        let tree = resvg::usvg::Tree::from_str(&svg, &opt).map_err(|e| e.to_string())?;
        let size = tree.size().to_int_size();
        let mut pixmap =
            resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("empty picture")?;
        resvg::render(
            &tree,
            resvg::tiny_skia::Transform::default(),
            &mut pixmap.as_mut(),
        );
        pixmap
            .save_png(p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}
