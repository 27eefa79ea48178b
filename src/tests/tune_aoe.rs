//! The OPAT driver never reports success when it tuned nothing: a SoC the simulator has no model
//! of is refused or fails, and an empty plan is not successful. `tunebank tune` as an AOE user
//! drives it is `tests/it/tune_aoe.rs`.

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A job whose runner tunes none of its ops does not say "tuning successful" (library level,
/// since the command line refuses such a SoC before it gets there).
#[test]
fn nothing_tuned_is_never_successful() {
    use std::sync::atomic::AtomicBool;
    use tunebank::bank::Bank;
    use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
    use tunebank::tune::report::OpatResult;
    use tunebank::tune::{self, TuneSettings};

    let dir = tempfile::tempdir().unwrap();
    let model = tunebank::model::load_onnx(fixture("bert_layer.onnx")).unwrap();
    let bank = Bank::builder(RecordKind::Op, "Ascend920")
        .custom_path(dir.path().join("op.redb"))
        .no_default_builtin()
        .open()
        .unwrap();
    let cancel = AtomicBool::new(false);
    let run = |soc: &str, empty: bool| {
        let options = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader).unwrap();
        let mut spec = options.soc().unwrap();
        // A SoC no table knows, so the simulator has no model of it.
        spec.version = soc.to_string();
        let mut plan = tune::plan(&model, &options, &spec, None).unwrap();
        assert!(!plan.tasks.is_empty());
        if empty {
            plan.tasks.clear();
            plan.units.clear();
        }
        let settings = TuneSettings {
            trials_per_op: 2,
            options_given: options.given().clone(),
            ..TuneSettings::default()
        };
        tune::opat::run(&plan, &bank, &settings, "bert", None, &cancel, &mut ())
    };
    // A SoC the simulator has no model for: refused, or at least not successful.
    match run("Ascend920", false) {
        Err(e) => assert!(e.to_string().contains("Ascend920"), "{e}"),
        Ok(s) => assert_ne!(
            s.report.result,
            OpatResult::Successful,
            "{:?}",
            s.report.summary
        ),
    }
    // No ops at all: nothing tuned either.
    let s = run("Ascend910B2", true).unwrap();
    assert_eq!(s.report.summary.total, 0);
    assert_ne!(s.report.result, OpatResult::Successful);
}
