//! The simulator against real Ascend910B2 MatMul times, runner spellings, outcome statistics,
//! and the build settings the models rely on.

use super::*;

/// The simulator's best time per shape ranks the real times (Spearman > 0.85, median ratio
/// between 0.5 and 2). A roofline on the same records meets that bar too (Spearman ≈ 0.92),
/// so it only shows the model is sane; what this test claims beyond a roofline is that the
/// simulator ranks the real times better than every roofline `max(flops / peak,
/// bytes / bandwidth)`, whatever its ridge point, and than its own SoC roofline
/// (`SimRunner::roofline_us`), by at least 0.01 (observed: 0.942 vs 0.926). The margin is
/// small: on real shapes the simulator adds little to a roofline's ranking; the full-data
/// suite (`src/tests/full_data.rs`) checks the larger, equal-work claim on all 3,198 records.
#[test]
fn tracks_real_ascend910b2_matmul_times() {
    use std::io::{BufRead, BufReader};
    use tunebank::measure::sim::calibration::{
        report, ridge, roofline, sim_default_and_best, spearman, CalibrationRecord, ROOFLINE_RIDGES,
    };
    // The fixture is committed: a missing or unreadable file fails here, never passes.
    let file = std::fs::File::open(MATMUL_SUBSET)
        .unwrap_or_else(|e| panic!("the calibration subset {MATMUL_SUBSET}: {e}"));
    let reader = BufReader::new(flate2::read::GzDecoder::new(file));
    let (mut triples, mut records, mut soc_roofline) = (Vec::new(), Vec::new(), Vec::new());
    for (i, line) in reader.lines().enumerate() {
        let line = line.unwrap();
        let rec = CalibrationRecord::from_json_line(&line)
            .unwrap_or_else(|| panic!("record {i} of the subset does not read: {line}"));
        // Seeded by the record's line in the full file.
        let (d, best) = sim_default_and_best(&rec.task(), 40, 16 * i as u64).unwrap();
        triples.push((best, d, rec.real_us));
        soc_roofline.push(SimRunner::roofline_us(&rec.task()).unwrap());
        records.push(rec);
    }
    let r = report(&triples, 3.0);
    assert_eq!(r.records, 200);
    assert!(r.spearman > 0.85, "rank correlation {}", r.spearman);
    assert!(
        r.ratio_quantiles[2] > 0.5 && r.ratio_quantiles[2] < 2.0,
        "{r:?}"
    );
    let real: Vec<f64> = records.iter().map(|r| r.real_us).collect();
    let (best_roofline, at) = ROOFLINE_RIDGES
        .map(|i| (spearman(&roofline(&records, ridge(i)), &real), ridge(i)))
        .chain([(spearman(&soc_roofline, &real), f64::NAN)])
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    assert!(
        best_roofline > 0.85,
        "a roofline meets the sanity bar too: {best_roofline}"
    );
    assert!(
        r.spearman >= best_roofline + 0.01,
        "the simulator ranks real times no better than a roofline: {} vs {best_roofline} \
         (ridge {at} FLOP/B; NaN: the SoC roofline)",
        r.spearman
    );
}

#[test]
fn runners_are_built_from_their_command_line_spelling() {
    use tunebank::measure::{runner_from_spec, MeasureError};
    assert_eq!(runner_from_spec("sim").unwrap().identity(), "sim:v1");
    assert!(runner_from_spec("sim:7")
        .unwrap()
        .identity()
        .contains("seed=7"));
    assert!(runner_from_spec("cpu")
        .unwrap()
        .identity()
        .starts_with("cpu:"));
    assert!(runner_from_spec("exec:python3 runner.py")
        .unwrap()
        .identity()
        .starts_with("exec:"));
    assert!(matches!(
        runner_from_spec("gpu"),
        Err(MeasureError::UnknownRunner(_))
    ));
    assert!(matches!(
        runner_from_spec("exec:"),
        Err(MeasureError::Runner { .. })
    ));
}

#[test]
fn outcomes_report_median_and_spread() {
    let o = Outcome::Measurement {
        samples_us: vec![5.0, 1.0, 3.0, 2.0, 4.0],
    };
    assert_eq!(o.median_us(), Some(3.0));
    assert_eq!(o.quartiles_us(), Some((2.0, 4.0)));
    let f = Outcome::fail(CandidateFailure::RunCrash, "x");
    assert_eq!(f.median_us(), None);
    assert_eq!(f.quartiles_us(), None);
    for k in CandidateFailure::ALL {
        assert_eq!(CandidateFailure::parse(k.as_str()), Some(k));
        assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
    }
}

/// The library is built with overflow checks in every profile the suite runs in, release
/// included (root `Cargo.toml`, `[profile.release.package.tunebank]`): an integer overflow in
/// library code panics instead of wrapping. `GemmProblem`'s size methods do not check (the op
/// models check a problem's sizes before using it), so a problem built by hand past u64 must
/// panic here.
#[test]
fn library_code_is_built_with_overflow_checks() {
    use tunebank::measure::sim::cube::{ASource, GemmProblem};
    let p = GemmProblem {
        batch: std::hint::black_box(u64::MAX),
        m: 2,
        k: 2,
        n: 2,
        in_bytes: 2,
        out_bytes: 2,
        bias: false,
        a: ASource::Matrix {
            transposed: false,
            nz: false,
        },
        b_transposed: false,
        b_nz: false,
        b_shared: true,
    };
    assert!(p.check_size().is_err());
    let wrapped = std::panic::catch_unwind(|| p.a_bytes());
    assert!(
        wrapped.is_err(),
        "u64::MAX · 2 · 2 · 2 wrapped to {wrapped:?}: overflow checks are off"
    );
}

/// A grouped convolution is one cube GEMM per group and image: a depthwise 3x3 over 64
/// channels (64 GEMMs, each padding its one channel to C0 = 16) gets a space and a time, and
/// takes longer than 4 groups of 16 channels (4 GEMMs of the same padded size); a grouping
/// that does not divide the channels is an error naming both.
#[test]
fn grouped_convolutions_are_one_gemm_per_group() {
    let mut sim = SimRunner::new();
    let conv = |w: &[i64], groups: i64| {
        let mut t = op_task("Conv2D", &[&[1, 64, 16, 16], w], &[1, 64, 16, 16]);
        t.op.attrs
            .insert("pads".into(), tunebank::key::AttrValue::Ints(vec![1; 4]));
        t.op.attrs
            .insert("groups".into(), tunebank::key::AttrValue::Int(groups));
        t
    };
    let time = |sim: &mut SimRunner, t: &TuningTask| {
        let d = sim.default_strategy(t).unwrap();
        sim.measure(t, &[d]).unwrap()[0].median_us().unwrap()
    };
    let depthwise = time(&mut sim, &conv(&[64, 1, 3, 3], 64));
    let four = time(&mut sim, &conv(&[64, 16, 3, 3], 4));
    assert!(
        depthwise > four,
        "64 groups {depthwise} us vs 4 groups {four} us"
    );
    let e = sim.space(&conv(&[64, 1, 3, 3], 3)).unwrap_err().to_string();
    assert!(
        e.contains("groups 3 does not divide 64 input and 64 output channels"),
        "{e}"
    );
}
