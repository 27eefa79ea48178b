//! Compares the simulated Ascend910B2's best MatMul time per shape with the 3,200 real times of
//! CANN's MatMul tiling repository (the public data's `ascend/` folder, see
//! `fixtures/ascend/README.md`).
//!
//! `cargo run --release --example sim_calibrate -- [SAMPLES] [EVERY] [FILE]`: best of the default
//! and SAMPLES random valid tilings per record (default 300), every EVERY-th record (default 1).
//! FILE defaults to `$TUNEBANK_DATA/ascend/repository_Ascend910B2_matmul.dev.jsonl.gz`;
//! the committed subset `fixtures/ascend/repository_Ascend910B2_matmul.every16.jsonl.gz` works too.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::ExitCode;

use tunebank::measure::sim::calibration::{report, sim_default_and_best, CalibrationRecord};
use tunebank::measure::sim::SocModel;

/// The repository file: the third argument, else the one under `$TUNEBANK_DATA`.
fn data_file(arg: Option<&String>) -> Result<PathBuf, String> {
    let path = match (arg, std::env::var_os("TUNEBANK_DATA")) {
        (Some(p), _) => PathBuf::from(p),
        (None, Some(root)) => {
            PathBuf::from(root).join("ascend/repository_Ascend910B2_matmul.dev.jsonl.gz")
        }
        (None, None) => {
            return Err(
                "needs the public MatMul data: set TUNEBANK_DATA to the folder holding \
                        ascend/, or pass the file as the third argument (see \
                        fixtures/ascend/README.md)"
                    .into(),
            )
        }
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found: set TUNEBANK_DATA to the folder holding ascend/, or pass the file \
             as the third argument (see fixtures/ascend/README.md)",
            path.display()
        ))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let path = match data_file(args.get(3)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sim_calibrate: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args, path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sim_calibrate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String], path: PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    let samples: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(300);
    let every: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(1);
    let file = std::fs::File::open(path)?;
    let reader = BufReader::new(flate2::read::GzDecoder::new(file));
    let mut triples = Vec::new();
    let (mut lines, mut skipped) = (0, 0);
    for (i, line) in reader.lines().enumerate() {
        let line = line?;
        lines += 1;
        if i % every != 0 {
            continue;
        }
        let Some(rec) = CalibrationRecord::from_json_line(&line) else {
            skipped += 1;
            continue;
        };
        let Some((d, best)) = sim_default_and_best(&rec.task(), samples, i as u64) else {
            skipped += 1;
            continue;
        };
        if std::env::var_os("CALIB_DUMP").is_some() {
            eprintln!(
                "{} {} {} {} {:.2} {:.2} {:.2}",
                rec.batch, rec.m, rec.k, rec.n, best, d, rec.real_us
            );
        }
        triples.push((best, d, rec.real_us));
    }
    let r = report(
        &triples,
        SocModel::for_version("Ascend910B2")
            .expect("the 910B2 model")
            .launch_us,
    );
    println!(
        "records read: {lines}, compared: {}, skipped: {skipped}",
        r.records
    );
    println!("Spearman (sim best vs real): {:.3}", r.spearman);
    println!("Spearman (sim default vs real): {:.3}", r.spearman_default);
    let q = |x: [f64; 5]| {
        format!(
            "p10 {:.2}, p25 {:.2}, median {:.2}, p75 {:.2}, p90 {:.2}",
            x[0], x[1], x[2], x[3], x[4]
        )
    };
    println!("sim best / real: {}", q(r.ratio_quantiles));
    println!(
        "(sim best - launch {} µs) / real: {}",
        SocModel::for_version("Ascend910B2")
            .expect("the 910B2 model")
            .launch_us,
        q(r.kernel_ratio_quantiles)
    );
    Ok(())
}
