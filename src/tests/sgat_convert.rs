//! The post-SGAT units a graph bank makes of a plan: scopes merged, cuts slicing the batch, L2
//! flags changing nothing, an avoided TransData changing the producer's layout. The command
//! lines over them are `tests/it/sgat_convert.rs`.

use std::collections::BTreeSet;

use crate::common::sgat_fixture::{graph_bank, graph_record, model_path, options, plans};
use serde_json::json;
use tunebank::bank::Bank;
use tunebank::measure::sim::SimRunner;
use tunebank::measure::{Measure, TuningTask};
use tunebank::model::load_onnx;
use tunebank::tune::sgat::{post_sgat_plan, PostSgat};

fn post(bank: &Bank) -> PostSgat {
    let model = load_onnx(model_path()).unwrap();
    let o = options();
    post_sgat_plan(&model, &o, &o.soc().unwrap(), bank, None)
        .unwrap()
        .1
}

fn keys(units: &[tunebank::model::ResolvedUnit]) -> Vec<tunebank::key::BankKey> {
    units.iter().map(|u| u.resolved.key).collect()
}

/// The stored scopes, exactly: conv1+maxpool (subgraph 0) become one unit, conv2+conv3 of the
/// first bottleneck (subgraph 1: conv1, conv2, conv3, downsample, add+relu) another; every other
/// unit keeps its key; the merged ops' keys are new, derived from their descriptors, and the
/// simulator times them.
#[test]
fn post_sgat_units_merge_exactly_the_scopes_of_a_stored_strategy() {
    let (plan, sp) = plans();
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(
        &dir.path().join("g.redb"),
        &[
            graph_record(&sp, 0, json!({"scopeId": [0, 0]})),
            graph_record(&sp, 1, json!({"scopeId": [-1, 7, 7, -2, -3]})),
        ],
    );
    let p = post(&bank);
    assert_eq!(p.units.len(), plan.units.len() - 2);
    assert_eq!(p.hits(), 2);
    assert_eq!(
        (p.subgraphs[0].units_after, p.subgraphs[1].units_after),
        (1, 4)
    );
    assert!(p.subgraphs[2..].iter().all(|s| s.layer.is_none()));
    // Units after the two subgraphs are the plan's, key for key.
    assert_eq!(keys(&p.units[5..]), keys(&plan.units[7..]));
    assert_eq!(keys(&p.units[1..2]), keys(&plan.units[2..3])); // conv1 of layer1.0
    assert_eq!(keys(&p.units[3..5]), keys(&plan.units[5..7])); // downsample, add+relu
    let old: BTreeSet<_> = keys(&plan.units).into_iter().collect();
    for (merged, parts) in [
        (&p.units[0], &plan.units[0..2]),
        (&p.units[2], &plan.units[3..5]),
    ] {
        let d = &merged.resolved.descriptor;
        assert_eq!(d.op_type, "Conv2D");
        let mut fused = Vec::new();
        for u in parts {
            let pd = &u.resolved.descriptor;
            if pd.fused_ops.is_empty() {
                fused.push(pd.op_type.clone());
            } else {
                fused.extend(pd.fused_ops.clone());
            }
        }
        assert_eq!(d.fused_ops, fused);
        // The second part's input from the first is internal to the kernel.
        let n_in: usize = parts
            .iter()
            .map(|u| u.resolved.descriptor.inputs.len())
            .sum();
        assert_eq!(d.inputs.len(), n_in - 1);
        assert_eq!(d.inputs[0], parts[0].resolved.descriptor.inputs[0]);
        assert_eq!(d.outputs, parts[1].resolved.descriptor.outputs);
        assert_eq!(merged.resolved.key, d.key().unwrap());
        assert!(!old.contains(&merged.resolved.key));
        assert_eq!(
            merged.unit.name,
            format!("{}{}", parts[0].unit.name, parts[1].unit.name)
        );
        let task = TuningTask::new(d.clone());
        let default = SimRunner::new().default_strategy(&task).unwrap();
        let us = SimRunner::simulate(&task, &default).unwrap().unwrap();
        assert!(us > 0.0 && us.is_finite());
    }
}

/// `cut = 2` on the first bottleneck's conv1 halves the batch of its activations (not of its
/// weight) and changes its key; L2 flags alone change no op.
#[test]
fn a_cut_slices_the_batch_and_l2_flags_change_nothing() {
    let (plan, sp) = plans();
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(
        &dir.path().join("g.redb"),
        &[
            graph_record(&sp, 1, json!({"cut": [2, 1, 1, 1, 1]})),
            graph_record(
                &sp,
                2,
                json!({"fusionType": [true, true, true, true], "cut": [1, 1, 1, 1]}),
            ),
        ],
    );
    let p = post(&bank);
    assert_eq!(keys(&p.units[..2]), keys(&plan.units[..2]));
    assert_eq!(
        keys(&p.units[3..]),
        keys(&plan.units[3..]),
        "L2 flags: same keys"
    );
    let (before, after) = (
        &plan.units[2].resolved.descriptor,
        &p.units[2].resolved.descriptor,
    );
    assert_eq!(before.inputs[0].shape[0], 32);
    assert_eq!(after.inputs[0].shape[0], 16);
    assert_eq!(after.inputs[0].ori_shape[0], 16);
    assert_eq!(after.outputs[0].shape[0], 16);
    assert_eq!(
        after.inputs[1], before.inputs[1],
        "the weight is not sliced"
    );
    assert_ne!(p.units[2].resolved.key, plan.units[2].resolved.key);
    assert_eq!(p.units[2].resolved.key, after.key().unwrap());
    assert_eq!(p.subgraphs[1].sliced, 1);
}

/// An edge whose TransData the stored strategy avoids: the producer writes the layout its
/// consumer reads (shape and format), so its key is a new one; every other unit keeps its key.
#[test]
fn an_avoided_transdata_makes_the_producer_write_its_consumers_layout() {
    let (plan, sp) = plans();
    // The first subgraph edge along which the layout changes (ResNet: a Conv2D writing
    // NC1HWC0 into the residual Add).
    let (sg, p, c, j) = sp
        .subgraphs
        .iter()
        .enumerate()
        .find_map(|(s, sub)| {
            sub.descriptor
                .nodes
                .iter()
                .enumerate()
                .find_map(|(c, node)| {
                    node.inputs
                        .iter()
                        .enumerate()
                        .find_map(|(j, src)| match *src {
                            tunebank::key::TensorSource::Node { node: p, output } => {
                                let out = &plan.units[sub.units[p as usize]]
                                    .resolved
                                    .descriptor
                                    .outputs[output as usize];
                                let view = &plan.units[sub.units[c]].resolved.descriptor.inputs[j];
                                (out.format != view.format).then_some((p as usize, c, j))
                            }
                            _ => None,
                        })
                })
                .map(|(p, c, j)| (s, p, c, j))
        })
        .expect("a layout-changing edge in ResNet-50");
    let n = sp.subgraphs[sg].units.len();
    let dir = tempfile::tempdir().unwrap();
    let bank = graph_bank(
        &dir.path().join("g.redb"),
        &[graph_record(
            &sp,
            sg,
            json!({"cut": vec![1; n], "transDataAvoided": [[p, c]]}),
        )],
    );
    let post = post(&bank);
    assert_eq!(post.units.len(), plan.units.len(), "nothing merged");
    let (pu, cu) = (sp.subgraphs[sg].units[p], sp.subgraphs[sg].units[c]);
    let view = &plan.units[cu].resolved.descriptor.inputs[j];
    let written = &post.units[pu].resolved.descriptor;
    assert!(
        written
            .outputs
            .iter()
            .any(|o| o.format == view.format && o.shape == view.shape),
        "the producer writes {:?} {:?}",
        view.format,
        view.shape
    );
    assert_ne!(post.units[pu].resolved.key, plan.units[pu].resolved.key);
    assert_eq!(post.units[pu].resolved.key, written.key().unwrap());
    for (i, (a, b)) in plan.units.iter().zip(&post.units).enumerate() {
        if i != pu {
            assert_eq!(a.resolved.key, b.resolved.key, "unit {i}");
        }
    }
}
