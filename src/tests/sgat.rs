//! SGAT in the library: the partition, the subgraph model's properties, the strategy space and
//! its search, and the driver with its graph bank. `tunebank tune --job_type=1` itself is
//! `tests/it/sgat.rs`.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tunebank::bank::Bank;
use tunebank::key::{FsReader, RecordKind, ResolvedOptions};
use tunebank::measure::sim::graph::{simulate_graph, GraphModelError, GraphOps, SgatStrategy};
use tunebank::measure::sim::SimRunner;
use tunebank::measure::sim::SocModel;
use tunebank::measure::{Measure, TuningTask};
use tunebank::model::load_onnx;
use tunebank::model::partition::partition;
use tunebank::tune::sgat::{run_sgat, sgat_plan, SgatPlan, SgatSpace};
use tunebank::tune::{self, Decision, TuneSettings};

fn fixture(name: &str) -> String {
    format!("{}/fixtures/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn options(soc: &str, extra: &[&str]) -> ResolvedOptions {
    let mut args = vec![format!("--soc_version={soc}")];
    args.extend(extra.iter().map(|s| s.to_string()));
    ResolvedOptions::from_args(args, &FsReader).unwrap()
}

fn resnet_plan(soc: &str) -> SgatPlan {
    let model = load_onnx(fixture("resnet50.onnx")).unwrap();
    let o = options(soc, &["--input_shape=input:32,3,224,224"]);
    sgat_plan(&model, &o, &o.soc().unwrap()).unwrap()
}

fn bert_plan(soc: &str) -> SgatPlan {
    let model = load_onnx(fixture("bert_layer.onnx")).unwrap();
    let o = options(soc, &[]);
    sgat_plan(&model, &o, &o.soc().unwrap()).unwrap()
}

fn graph_bank(dir: &Path, soc: &str) -> Bank {
    Bank::builder(RecordKind::Graph, soc)
        .custom_path(dir.join("graph.redb"))
        .no_default_builtin()
        .open()
        .unwrap()
}

fn sim_settings() -> TuneSettings {
    TuneSettings {
        runner: "sim".parse().unwrap(),
        ..TuneSettings::default()
    }
}

/// A random strategy in the agreed schema: any cut, any L2 flags, random UB scopes over
/// consecutive nodes.
fn random_strategy(n: usize, rng: &mut impl Rng) -> SgatStrategy {
    let mut s = SgatStrategy::unfused(n);
    let cut = [1, 2, 4, 8, 16][rng.gen_range(0..5)];
    for i in 0..n {
        s.cut[i] = cut;
        s.fusion_type[i] = rng.gen_bool(0.5);
        if i > 0 && rng.gen_bool(0.3) {
            s.scope_id[i] = if s.scope_id[i - 1] >= 0 {
                s.scope_id[i - 1]
            } else {
                i as i64
            };
            s.scope_id[i - 1] = s.scope_id[i];
        }
    }
    s
}

fn all_plans() -> Vec<SgatPlan> {
    vec![
        resnet_plan("Ascend910B2"),
        resnet_plan("Ascend310P3"),
        bert_plan("Ascend910B2"),
        bert_plan("Ascend310P3"),
    ]
}

#[test]
fn partition_cuts_at_block_outputs_and_nodes_keep_their_op_keys() {
    let plan = resnet_plan("Ascend910B2");
    // conv1+maxpool, 16 bottlenecks, avgpool+fc.
    assert_eq!(plan.subgraphs.len(), 18);
    assert_eq!(
        plan.units,
        plan.subgraphs.iter().map(|s| s.units.len()).sum::<usize>()
    );
    let first_block = &plan.subgraphs[1];
    assert!(
        first_block.name.contains("layer1.0/conv1")
            && first_block.name.ends_with("layer1.0/relu_2/Relu")
    );
    assert_eq!(
        first_block.descriptor.nodes.len(),
        5,
        "conv1, conv2, conv3, downsample, add+relu"
    );
    // Identical bottlenecks share a key: tuned once.
    assert!(plan.tasks.len() < plan.subgraphs.len());
    for t in &plan.tasks {
        for (i, k) in t.op_keys.iter().enumerate() {
            assert_eq!(t.descriptor.node_op(i).unwrap().key().unwrap(), *k);
        }
        assert_eq!(t.descriptor.key().unwrap(), t.key);
    }
    // The graph options are in the descriptor: another precision mode, other keys.
    let model = load_onnx(fixture("resnet50.onnx")).unwrap();
    let o = options(
        "Ascend910B2",
        &[
            "--input_shape=input:32,3,224,224",
            "--precision_mode=force_fp32",
        ],
    );
    let other = sgat_plan(&model, &o, &o.soc().unwrap()).unwrap();
    assert!(other
        .tasks
        .iter()
        .all(|t| plan.tasks.iter().all(|u| u.key != t.key)));
}

#[test]
fn a_subgraph_is_never_faster_than_its_roofline() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut checked = 0;
    for plan in all_plans() {
        for t in &plan.tasks {
            let ops = GraphOps::prepare(&t.descriptor, &[]).unwrap();
            let roof = ops.roofline_us();
            assert!(roof > 0.0);
            for _ in 0..200 {
                let s = random_strategy(t.descriptor.nodes.len(), &mut rng);
                let g = ops.time(&s).unwrap();
                assert!(
                    g.total_us >= roof,
                    "{}: {} < {roof}",
                    t.names[0],
                    g.total_us
                );
                assert!(g.total_us.is_finite());
                checked += 1;
            }
        }
    }
    assert!(checked > 1000);
}

#[test]
fn a_one_op_subgraph_takes_the_op_time() {
    let model = load_onnx(fixture("bert_layer.onnx")).unwrap();
    for soc in ["Ascend910B2", "Ascend310P3"] {
        let o = options(soc, &[]);
        let spec = o.soc().unwrap();
        let plan = tune::plan(&model, &o, &spec, None).unwrap();
        let mut compared = 0;
        for i in 0..plan.units.len() {
            let sg = partition(&plan.units[i..=i], &o.graph_options(), &spec).unwrap();
            assert_eq!(sg.len(), 1);
            let g = &sg[0].descriptor;
            let task = TuningTask::new(plan.units[i].resolved.descriptor.clone());
            let Ok(default) = SimRunner::new().default_strategy(&task) else {
                continue;
            };
            let op = SimRunner::simulate(&task, &default).unwrap().unwrap();
            let t = simulate_graph(g, &SgatStrategy::unfused(1).to_strategy(), &[]).unwrap();
            assert!(
                (t.total_us - op).abs() <= 1e-9 * op,
                "{soc} {}: {} vs {op}",
                sg[0].name,
                t.total_us
            );
            compared += 1;
        }
        assert!(compared >= 8, "{soc}: {compared}");
    }
}

#[test]
fn ub_fusing_two_memory_bound_ops_never_costs_more() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut pairs = 0;
    for plan in all_plans() {
        for t in &plan.tasks {
            let ops = GraphOps::prepare(&t.descriptor, &[]).unwrap();
            let n = t.descriptor.nodes.len();
            for e in &ops.edges {
                let memory_bound =
                    |i: usize| ops.nodes[i].compute_us == 0.0 && ops.nodes[i].modelled;
                if !(memory_bound(e.from) && memory_bound(e.to)) || e.transdata {
                    continue;
                }
                for _ in 0..20 {
                    let mut apart = random_strategy(n, &mut rng);
                    apart.scope_id = (0..n).map(|i| -(i as i64) - 1).collect();
                    let mut fused = apart.clone();
                    fused.scope_id[e.from] = 1000;
                    fused.scope_id[e.to] = 1000;
                    let (a, f) = (ops.time(&apart).unwrap(), ops.time(&fused).unwrap());
                    assert!(
                        f.total_us <= a.total_us,
                        "{}: fused {} > apart {}",
                        t.names[0],
                        f.total_us,
                        a.total_us
                    );
                    assert!(f.launches < a.launches);
                    pairs += 1;
                }
            }
        }
    }
    assert!(pairs >= 20, "{pairs}");
}

#[test]
fn without_l2_scopes_more_slices_never_make_a_subgraph_faster() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for plan in all_plans() {
        for t in &plan.tasks {
            let ops = GraphOps::prepare(&t.descriptor, &[]).unwrap();
            let n = t.descriptor.nodes.len();
            for _ in 0..20 {
                let mut s = random_strategy(n, &mut rng);
                s.fusion_type = vec![false; n];
                let mut last = 0.0;
                for cut in [1, 2, 4, 8, 16] {
                    s.cut = vec![cut; n];
                    let us = ops.time(&s).unwrap().total_us;
                    assert!(us >= last, "{}: cut {cut}: {us} < {last}", t.names[0]);
                    last = us;
                }
            }
        }
    }
}

#[test]
fn any_strategy_in_the_schema_is_accepted_and_inconsistent_ones_are_typed_errors() {
    let plan = resnet_plan("Ascend910B2");
    let g = &plan.tasks[1].descriptor; // five nodes
                                       // As AOE stores it: per-node cuts, scope ids and pass lists that name other subgraphs'
                                       // scopes too, and an extra key.
    let aoe: tunebank::key::StrategyMap = serde_json::from_value(json!({
        "cut": [2, 1, 1, 1, 1], "fusionType": [true, false, false, true, false],
        "scopeId": [-3, 2, -4, 122, 122],
        "ubPass": {"AutomaticUbFusion": [122, 121, 7], "TbeConvFixPipeFusionPass": [2, 3]},
        "formats": {"0->4": "NC1HWC0"}
    }))
    .unwrap();
    let t = simulate_graph(g, &aoe, &[]).unwrap();
    assert!(t.total_us >= t.roofline_us);
    let back = SgatStrategy::from_strategy(&aoe, 5).unwrap().to_strategy();
    assert_eq!(back, aoe, "the schema round-trips, extra keys kept");
    assert!(SgatStrategy::from_strategy(&aoe, 5)
        .unwrap()
        .trans_data_avoided
        .is_empty());
    // transDataAvoided: [producer, consumer] pairs; only an edge that offers it may name it.
    let ops = GraphOps::prepare(g, &[]).unwrap();
    let e = ops.edges.iter().find(|e| e.direct.is_some()).unwrap();
    let mut direct = aoe.clone();
    direct.insert("transDataAvoided".into(), json!([[e.from, e.to]]));
    let read = SgatStrategy::from_strategy(&direct, 5).unwrap();
    assert_eq!(read.trans_data_avoided, vec![(e.from, e.to)]);
    assert_eq!(read.to_strategy(), direct);
    // The producer writes the consumer's format itself: the edge's TransData kernel, one of
    // the launches under `aoe`, no longer runs; nothing else launches differently.
    let td = simulate_graph(g, &direct, &[]).unwrap();
    let transdata = ops.edges.iter().filter(|e| e.transdata).count() as u64;
    assert!(transdata >= 1 && t.launches > transdata, "{t:?}");
    assert_eq!(td.launches, t.launches - 1, "{td:?} {t:?}");
    assert_eq!(
        (td.l2_fits, td.total_us >= td.roofline_us),
        (t.l2_fits, true)
    );
    assert!(td.total_us < t.total_us, "{td:?} {t:?}");
    let other = ops.edges.iter().find(|e| e.direct.is_none()).unwrap();
    let mut wrong = aoe.clone();
    wrong.insert("transDataAvoided".into(), json!([[other.from, other.to]]));
    let e = simulate_graph(g, &wrong, &[]).unwrap_err();
    assert!(matches!(e, GraphModelError::Strategy(_)), "{e}");
    for (k, v) in [
        ("cut", json!([1, 1])),
        ("cut", json!([0, 1, 1, 1, 1])),
        ("fusionType", json!([1, 0, 0, 0, 0])),
        ("scopeId", json!("x")),
        ("ubPass", json!({"AutomaticUbFusion": ["a"]})),
        ("transDataAvoided", json!([[0, 5]])),
        ("transDataAvoided", json!([[1, 1]])),
        ("transDataAvoided", json!([0, 4])),
    ] {
        let mut bad = aoe.clone();
        bad.insert(k.into(), v);
        let e = simulate_graph(g, &bad, &[]).unwrap_err();
        assert!(matches!(e, GraphModelError::Strategy(_)), "{k}: {e}");
    }
}

/// Avoiding a TransData (the producer writing its consumer's format itself) never costs more
/// than running the TransData when the format change is free in the op model (the producer's
/// time, roofline and compute floor no larger, the tensor as large in either format), under
/// any strategy; and it saves the TransData's launch. ResNet-50's Conv2D (NC1HWC0) → residual
/// Add (NCHW) edges are such edges on both SoCs.
#[test]
fn avoiding_a_free_transdata_never_costs_more() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let (mut free, mut checked) = (0, 0);
    for plan in all_plans() {
        for t in &plan.tasks {
            let ops = GraphOps::prepare(&t.descriptor, &[]).unwrap();
            let n = t.descriptor.nodes.len();
            for e in &ops.edges {
                let Some(d) = &e.direct else { continue };
                assert!(e.transdata, "only a TransData edge can avoid one");
                let p = &ops.nodes[e.from];
                let is_free = d.node.op_us <= p.op_us
                    && d.node.roofline_us <= p.roofline_us
                    && d.node.compute_us <= p.compute_us
                    && d.bytes == e.bytes;
                if !is_free {
                    continue;
                }
                free += 1;
                for _ in 0..20 {
                    let with = random_strategy(n, &mut rng);
                    let mut without = with.clone();
                    without.trans_data_avoided = vec![(e.from, e.to)];
                    let (a, b) = (ops.time(&with).unwrap(), ops.time(&without).unwrap());
                    assert!(
                        b.total_us <= a.total_us,
                        "{}: avoided {} > TransData {}",
                        t.names[0],
                        b.total_us,
                        a.total_us
                    );
                    assert_eq!(b.launches + 1, a.launches);
                    assert!(b.total_us >= ops.roofline_us());
                    checked += 1;
                }
            }
        }
    }
    assert!(free >= 8, "free TransData edges: {free}");
    assert!(checked >= 160);
}

/// The search uses the per-edge format choice: on ResNet-50 at batch 32 the bottleneck
/// subgraphs with a Conv2D → Add TransData edge are written with `transDataAvoided`, and the
/// stored strategy reads back and times below the same strategy with the TransData run.
#[test]
fn sgat_avoids_transdata_edges_where_it_pays() {
    let plan = resnet_plan("Ascend910B2");
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(dir.path(), "Ascend910B2");
    let s = run_sgat(
        &plan,
        &bank,
        None,
        &sim_settings(),
        "r",
        None,
        &AtomicBool::new(false),
        &mut (),
    )
    .unwrap();
    let mut using = 0;
    for o in &s.outcomes {
        let t = &plan.tasks[o.task];
        let ops = GraphOps::prepare(&t.descriptor, &[]).unwrap();
        if ops.edges.iter().all(|e| e.direct.is_none()) {
            continue;
        }
        let Some(r) = &o.record else { continue };
        let st = SgatStrategy::from_strategy(&r.strategy, t.descriptor.nodes.len()).unwrap();
        if st.trans_data_avoided.is_empty() {
            continue;
        }
        assert!(r.strategy.contains_key("transDataAvoided"));
        let mut with = st.clone();
        with.trans_data_avoided.clear();
        assert!(ops.time(&st).unwrap().total_us < ops.time(&with).unwrap().total_us);
        using += 1;
    }
    assert!(
        using >= 4,
        "subgraphs written with a TransData avoided: {using}"
    );
}

#[test]
fn ensemble_reaches_95_percent_of_the_exhaustive_optimum_within_the_default_budget() {
    let mut larger_than_budget = 0;
    for plan in [
        resnet_plan("Ascend910B2"),
        resnet_plan("Ascend310P3"),
        bert_plan("Ascend910B2"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let soc = &plan.tasks[0].descriptor.soc.version;
        let bank = graph_bank(dir.path(), soc);
        let settings = sim_settings();
        assert_eq!(settings.strategy, "ensemble");
        let summary = run_sgat(
            &plan,
            &bank,
            None,
            &settings,
            "resnet50",
            None,
            &AtomicBool::new(false),
            &mut (),
        )
        .unwrap();
        for o in &summary.outcomes {
            let t = &plan.tasks[o.task];
            let ops = GraphOps::prepare(&t.descriptor, &[]).unwrap();
            let space =
                SgatSpace::build(&t.descriptor, &ops, SocModel::for_version(soc).unwrap()).unwrap();
            if space.len() > settings.trials_per_op {
                larger_than_budget += 1;
            }
            let optimum = (0..space.len() as u32)
                .map(|id| ops.time(&space.strategy(id)).unwrap().total_us)
                .fold(f64::INFINITY, f64::min);
            let found = o.after_us.unwrap();
            assert!(
                optimum / found >= 0.95,
                "{soc} {}: {found} vs optimum {optimum}",
                t.names[0]
            );
        }
    }
    assert!(
        larger_than_budget >= 5,
        "spaces too small to test the search"
    );
}

#[test]
fn the_first_bottleneck_is_sliced_on_310p3_and_not_on_910b2() {
    // layer1.0's intermediates (32×256×56×56 fp16 ≈ 51 MiB) fit the 910B2's 192 MiB L2 whole,
    // not the 310P3's 16 MiB: there the L2 scope needs the batch cut in slices.
    let mut cuts = Vec::new();
    for soc in ["Ascend910B2", "Ascend310P3"] {
        let plan = resnet_plan(soc);
        let dir = tempfile::tempdir().unwrap();
        let bank = graph_bank(dir.path(), soc);
        let s = run_sgat(
            &plan,
            &bank,
            None,
            &sim_settings(),
            "r",
            None,
            &AtomicBool::new(false),
            &mut (),
        )
        .unwrap();
        let o = s
            .outcomes
            .iter()
            .find(|o| plan.tasks[o.task].names[0].contains("/layer1/layer1.0/conv1/"))
            .unwrap();
        assert_eq!(o.decision, Decision::Add, "{soc}");
        let st = SgatStrategy::from_strategy(&o.record.as_ref().unwrap().strategy, 5).unwrap();
        assert!(st.fusion_type.iter().any(|&f| f), "{soc}: an L2 scope");
        cuts.push(st.cut[0]);
    }
    assert_eq!(cuts[0], 1, "910B2 keeps the batch whole");
    assert!(cuts[1] > 1, "310P3 slices the batch: {}", cuts[1]);
}

#[test]
fn rerun_is_all_hits_and_repeat_tune_keeps_the_invariants() {
    let plan = bert_plan("Ascend910B2");
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(dir.path(), "Ascend910B2");
    let cancel = AtomicBool::new(false);
    let first = run_sgat(
        &plan,
        &bank,
        None,
        &sim_settings(),
        "bert",
        None,
        &cancel,
        &mut (),
    )
    .unwrap();
    let s = first.report.summary;
    assert!(s.add > 0 && s.is_consistent());
    assert!(first.report.result_ms < first.report.baseline_ms);
    let again = run_sgat(
        &plan,
        &bank,
        None,
        &sim_settings(),
        "bert",
        None,
        &cancel,
        &mut (),
    )
    .unwrap();
    assert_eq!(again.report.summary.hit, plan.tasks.len() as u64);
    assert_eq!(again.stats.trials, 0);
    assert!((again.report.result_ms - first.report.result_ms).abs() < 1e-9);
    let repeat = TuneSettings {
        repeat_tune: true,
        ..sim_settings()
    };
    let third = run_sgat(&plan, &bank, None, &repeat, "bert", None, &cancel, &mut ()).unwrap();
    let r = third.report.summary;
    assert_eq!(
        (r.hit, r.update + r.reserved),
        (plan.tasks.len() as u64, r.hit)
    );
    assert!(third.stats.trials > 0);
}

/// The subgraph model is deterministic: SGAT judges its two exact times without rounds or a
/// significance test, so a win rule whose α no number of rounds can reach (α = 0: made-up
/// identical rounds give p = 2⁻ⁿ > 0) decides exactly as the default rule does.
#[test]
fn sgat_decides_on_exact_times_whatever_the_significance_level() {
    let plan = bert_plan("Ascend910B2");
    let cancel = AtomicBool::new(false);
    let run = |s: &TuneSettings| {
        let dir = tempfile::tempdir().unwrap();
        let bank = graph_bank(dir.path(), "Ascend910B2");
        run_sgat(&plan, &bank, None, s, "bert", None, &cancel, &mut ()).unwrap()
    };
    let default = run(&sim_settings());
    let no_alpha = run(&TuneSettings {
        win: tune::WinRule {
            alpha: 0.0,
            ..tune::WinRule::default()
        },
        ..sim_settings()
    });
    assert!(default.report.summary.add > 0);
    assert_eq!(no_alpha.report.summary, default.report.summary);
    let decisions = |s: &tunebank::tune::sgat::SgatSummary| {
        let mut d: Vec<(usize, Decision)> =
            s.outcomes.iter().map(|o| (o.task, o.decision)).collect();
        d.sort_by_key(|x| x.0);
        d
    };
    assert_eq!(decisions(&no_alpha), decisions(&default));
    assert_eq!(no_alpha.times_us, default.times_us);
}

#[test]
fn a_cancelled_job_is_incomplete_and_writes_nothing_unfinished() {
    let plan = resnet_plan("Ascend910B2");
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(dir.path(), "Ascend910B2");
    let file =
        tunebank::tune::report::ResultFile::sgat(dir.path(), std::time::SystemTime::now(), 1);
    let s = run_sgat(
        &plan,
        &bank,
        None,
        &sim_settings(),
        "r",
        Some(&file),
        &AtomicBool::new(true),
        &mut (),
    )
    .unwrap();
    assert!(s.interrupted);
    let v: Value = serde_json::from_slice(&std::fs::read(&file.path).unwrap()).unwrap();
    let sgat = &v[&file.report_id][1]["SGAT"];
    assert_eq!(sgat["sgat_tuning_result"], "tuning incomplete");
    assert!(v[&file.report_id][0]["basic"]
        .get("tuning_time(s)")
        .is_none());
    for t in &plan.tasks {
        let l = bank.lookup(&t.key).unwrap();
        assert!(matches!(l, tunebank::bank::Lookup::Miss { .. }));
    }
}

/// A default confirmed by a one-candidate search remembers that budget: a rerun with it hits,
/// a larger budget searches those subgraphs again and confirms (or replaces) them for good.
#[test]
fn a_confirmed_default_is_searched_again_only_under_a_larger_budget() {
    let plan = bert_plan("Ascend910B2");
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(dir.path(), "Ascend910B2");
    let cancel = AtomicBool::new(false);
    let budget = |trials_per_op| TuneSettings {
        trials_per_op,
        ..sim_settings()
    };
    let run =
        |s: &TuneSettings| run_sgat(&plan, &bank, None, s, "bert", None, &cancel, &mut ()).unwrap();
    let first = run(&budget(1));
    let confirmed = first.report.summary.unsatisfied;
    assert!(confirmed > 0, "{:?}", first.report.summary);
    let same = run(&budget(1));
    assert_eq!(same.stats.trials, 0, "the same budget hits every subgraph");
    let larger = run(&budget(64));
    assert!(
        larger.stats.trials > 0,
        "a larger budget searches the confirmed ones"
    );
    let s = larger.report.summary;
    assert_eq!((s.hit, s.add), (plan.tasks.len() as u64, 0), "{s:?}");
    let after = run(&budget(64));
    assert_eq!(
        after.stats.trials, 0,
        "confirmed anew under the larger budget"
    );
}
