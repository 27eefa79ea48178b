//! The job API (`tunebank::job`): AOE's precedence between explicit values, the environment,
//! aoe.ini and the defaults; typed errors naming the input; one plan for a job and a
//! conversion (the graph bank applied); progress told to the observer; the report's two faces.
//! Every test passes its environment explicitly, so none depends on the process's.

use std::path::Path;

use tunebank::failure::FailureKind;
use tunebank::job::{Environment, Finished, JobError, JobOutcome, JobSpec, JobType, Observer};

const SOC: &str = "Ascend910B2";

fn model(name: &str) -> String {
    format!("{}/fixtures/models/{name}.onnx", env!("CARGO_MANIFEST_DIR"))
}

fn spec(extra: &[&str]) -> JobSpec {
    let mut atc = vec![
        format!("--model={}", model("resnet50")),
        format!("--soc_version={SOC}"),
    ];
    atc.extend(extra.iter().map(|s| s.to_string()));
    JobSpec::new(atc)
}

/// An environment with only a HOME (an empty directory) and `pairs`.
fn env(home: &Path, pairs: &[(&str, &str)]) -> Environment {
    let mut e = Environment::empty().with("HOME", home.to_str().unwrap());
    for (k, v) in pairs {
        e = e.with(k, v);
    }
    e
}

fn invalid(e: JobError) -> (String, String) {
    assert_eq!(e.kind(), FailureKind::Input, "{e}");
    match e {
        JobError::Invalid { input, expected } => (input, expected),
        other => panic!("expected an Invalid error, got {other:?}"),
    }
}

#[test]
fn the_job_type_is_explicit_then_job_type_then_aoe_mode_then_opat() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    assert_eq!(spec(&[]).job_type(&env(home, &[])).unwrap(), JobType::Op);
    let sgat = env(home, &[("AOE_MODE", "1")]);
    assert_eq!(spec(&[]).job_type(&sgat).unwrap(), JobType::Subgraph);
    assert_eq!(
        spec(&["--job-type", "gradient"]).job_type(&sgat).unwrap(),
        JobType::Gradient
    );
    let mut explicit = spec(&["--job_type=4"]);
    explicit.job_type = Some(JobType::Op);
    assert_eq!(explicit.job_type(&sgat).unwrap(), JobType::Op);
    // AOE_MODE is checked even when --job_type overrides it.
    let (input, expected) = invalid(
        spec(&["--job_type=2"])
            .job_type(&env(home, &[("AOE_MODE", "3")]))
            .unwrap_err(),
    );
    assert_eq!(input, "AOE_MODE=3");
    assert!(expected.contains("1 (subgraph tuning, SGAT)"), "{expected}");
}

#[test]
fn workers_and_the_result_directory_follow_aoe_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let ini = dir.path().join("aoe.ini");
    let ini_work = dir.path().join("ini_work");
    std::fs::write(
        &ini,
        format!(
            "[COMMON]\nWORK_PATH={}\nTUNING_PARALLEL_NUM=3\nRUN_LOOP=5\n",
            ini_work.display()
        ),
    )
    .unwrap();
    let mut s = spec(&[]);
    s.config = Some(ini.clone());
    // Plenty of memory per worker, so the cap never applies.
    let plenty = [("TUNEBANK_WORKER_MEMORY_MB", "1")];
    let job = s.resolve(&env(dir.path(), &plenty)).unwrap();
    assert_eq!(job.workers().requested, 3, "aoe.ini's TUNING_PARALLEL_NUM");
    assert_eq!(job.settings().timing.repeats, 5, "aoe.ini's RUN_LOOP");
    assert_eq!(job.output_dir().unwrap(), ini_work);
    assert_eq!(job.config_file(), Some(ini.as_path()));

    let work = dir.path().join("env_work");
    let e = env(
        dir.path(),
        &[
            plenty[0],
            ("TUNING_PARALLEL_NUM", "2"),
            ("ASCEND_WORK_PATH", work.to_str().unwrap()),
            ("REPEAT_TUNE", "True"),
        ],
    );
    let job = s.resolve(&e).unwrap();
    assert_eq!(job.workers().requested, 2, "the environment over aoe.ini");
    assert_eq!(job.output_dir().unwrap(), work);
    assert!(job.settings().repeat_tune);

    let explicit_dir = dir.path().join("explicit");
    s.workers = Some(1);
    s.output_dir = Some(explicit_dir.clone());
    s.repeat_tune = Some(false);
    let job = s.resolve(&e).unwrap();
    assert_eq!(job.workers().requested, 1, "explicit over the environment");
    assert_eq!(job.output_dir().unwrap(), explicit_dir);
    assert!(!job.settings().repeat_tune);
    // Nothing was created by resolving.
    assert!(!ini_work.exists() && !work.exists() && !explicit_dir.exists());
}

#[test]
fn bad_inputs_name_the_input_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let cases: Vec<(JobSpec, Environment, &str, &str)> = vec![
        (
            spec(&[]),
            env(home, &[("TUNING_PARALLEL_NUM", "zero")]),
            "environment variable TUNING_PARALLEL_NUM=\"zero\"",
            "a positive integer",
        ),
        (
            spec(&[]),
            env(home, &[("REPEAT_TUNE", "maybe")]),
            "environment variable REPEAT_TUNE=\"maybe\"",
            "True or False",
        ),
        (
            JobSpec {
                budget: 0,
                ..spec(&[])
            },
            env(home, &[]),
            "--budget 0",
            "at least one candidate per op",
        ),
        (
            spec(&["--job_type=4"]),
            env(home, &[]),
            "--rank_size",
            "the number of devices",
        ),
        (
            JobSpec::new([format!("--soc_version={SOC}")]),
            env(home, &[]),
            "--model",
            "the model to tune: an .onnx file, a Caffe .prototxt",
        ),
    ];
    for (s, e, input, expected) in cases {
        let (i, x) = invalid(s.resolve(&e).unwrap_err());
        assert_eq!(i, input);
        assert!(x.contains(expected), "{input}: {x}");
    }
    // aoe.ini out of range names the file, the key and the range.
    let ini = dir.path().join("aoe.ini");
    std::fs::write(&ini, "[COMMON]\nRUN_LOOP=0\n").unwrap();
    let mut s = spec(&[]);
    s.config = Some(ini.clone());
    let (i, x) = invalid(s.resolve(&env(home, &[])).unwrap_err());
    assert_eq!(i, format!("{}: RUN_LOOP=0", ini.display()));
    assert_eq!(x, "an integer in [1, 2048]");
    // A tune_ops_file that selects nothing.
    let ops = dir.path().join("ops.txt");
    std::fs::write(&ops, "NoSuchOp\n").unwrap();
    let s = spec(&[&format!("--tune_ops_file={}", ops.display())]);
    let (i, _) = invalid(s.resolve(&env(home, &[])).unwrap_err());
    assert!(i.contains("selects no op"), "{i}");
    // SGAT off the simulator.
    let mut s = spec(&["--job_type=1"]);
    s.runner = "cpu".parse().unwrap();
    let e = s.resolve(&env(home, &[])).unwrap_err();
    assert!(matches!(e, JobError::Unsupported { .. }), "{e:?}");
    assert!(e.to_string().contains("runs on the simulator"), "{e}");
}

/// Records what an observer is told.
#[derive(Default)]
struct Seen {
    started: usize,
    finished: Vec<(usize, usize, String)>,
}

impl Observer for Seen {
    fn started(&mut self, start: &tunebank::job::Started<'_>) {
        assert!(start.bank_file.is_some(), "the job's own bank is named");
        self.started += 1;
    }
    fn finished(&mut self, t: &Finished<'_>) {
        self.finished.push((t.done, t.total, t.decision.to_owned()));
    }
}

/// SGAT fills a graph bank; then an OPAT job plans exactly the units a conversion resolves,
/// which are not the fused units; the run tells the observer of every task in order, writes
/// the result file it reports, and its report prints and serialises what it did.
#[test]
fn sgat_then_opat_plans_what_convert_resolves_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let banks = dir.path().join("banks");
    std::fs::create_dir_all(&banks).unwrap();
    let e = env(
        dir.path(),
        &[
            ("TUNE_BANK_PATH", banks.to_str().unwrap()),
            ("TUNEBANK_WORKER_MEMORY_MB", "1"),
        ],
    );
    let shape = "--input_shape=input:32,3,224,224";
    let mut sgat = spec(&["--job_type=1", shape]);
    sgat.budget = 4;
    sgat.output_dir = Some(dir.path().join("out"));
    let job = sgat.resolve(&e).unwrap();
    let report = job.run(&mut ()).unwrap();
    assert_eq!(report.status(), JobOutcome::Successful);

    let fused = spec(&[shape]).conversion(&env(dir.path(), &[])).unwrap();
    assert!(fused.graph.is_none());
    let conversion = spec(&[shape]).conversion(&e).unwrap();
    let applied = conversion.graph.as_ref().expect("the graph bank is found");
    assert!(applied.applied.hits() > 0);
    assert_ne!(
        conversion.unit_keys(),
        fused.unit_keys(),
        "SGAT changed the units"
    );

    let mut opat = spec(&[shape]);
    opat.budget = 2;
    opat.workers = Some(2);
    opat.bank = Some(dir.path().join("op.redb"));
    opat.output_dir = Some(dir.path().join("out"));
    let job = opat.resolve(&e).unwrap();
    let plan = job.plan().unwrap();
    let keys = |units: &[tunebank::model::ResolvedUnit]| -> Vec<String> {
        units.iter().map(|u| u.resolved.key.to_string()).collect()
    };
    assert_eq!(keys(&plan.units), keys(&conversion.plan.units));

    let mut seen = Seen::default();
    let report = job.run(&mut seen).unwrap();
    assert_eq!(seen.started, 1);
    let total = plan.tasks.len();
    let dones: Vec<usize> = seen.finished.iter().map(|f| f.0).collect();
    assert_eq!(dones, (1..=total).collect::<Vec<_>>());
    assert!(seen.finished.iter().all(|f| f.1 == total));
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.result_file()).unwrap()).unwrap();
    assert_eq!(&on_disk, report.document());
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["job_type"], 2);
    assert_eq!(v["tasks"], total);
    assert_eq!(v["units"], plan.units.len());
    assert_eq!(v["report"], on_disk);
    assert_eq!(v["result"], report.result());
    let adds = seen.finished.iter().filter(|f| f.2 == "add").count() as u64;
    assert_eq!(v["summary"]["repo_add_num"], adds);
    let text = format!("{report}");
    assert_eq!(text, report.render(None));
    assert!(
        text.contains(&report.result_file().display().to_string()),
        "{text}"
    );
}

/// Reads the SGAT result file each time the observer is told of a subgraph: the file already
/// counts exactly the subgraphs finished so far, so the observer hears of each one as it
/// finishes, not after the job.
#[derive(Default)]
struct LiveSgat {
    result_file: Option<std::path::PathBuf>,
    counted: Vec<(usize, u64)>,
}

impl Observer for LiveSgat {
    fn started(&mut self, start: &tunebank::job::Started<'_>) {
        self.result_file = Some(start.result_file.to_owned());
    }
    fn finished(&mut self, t: &Finished<'_>) {
        let path = self.result_file.as_ref().expect("started comes first");
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let (_, sections) = doc.as_object().unwrap().iter().next().unwrap();
        let sgat = sections
            .as_array()
            .unwrap()
            .iter()
            .find_map(|s| s.get("SGAT"))
            .expect("an SGAT section");
        let total = sgat["repo_summary"]["total_num"].as_u64().unwrap();
        self.counted.push((t.done, total));
    }
}

#[test]
fn sgat_progress_arrives_as_each_subgraph_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(dir.path(), &[("TUNEBANK_WORKER_MEMORY_MB", "1")]);
    let mut sgat = spec(&["--job_type=1", "--input_shape=input:1,3,224,224"]);
    sgat.budget = 2;
    sgat.workers = Some(1);
    sgat.bank = Some(dir.path().join("graph.redb"));
    sgat.output_dir = Some(dir.path().join("out"));
    let job = sgat.resolve(&e).unwrap();
    let mut live = LiveSgat::default();
    job.run(&mut live).unwrap();
    assert!(live.counted.len() > 2, "{:?}", live.counted);
    for (done, in_file) in &live.counted {
        assert_eq!(*in_file, *done as u64, "{:?}", live.counted);
    }
}
