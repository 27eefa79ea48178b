//! The training step in the simulator: every op of the TensorFlow training step (forward,
//! backward and Adam; `fixtures/models/training/make_training.py`) has a search space and a
//! time no faster than its roofline. The scenario on the command line is `tests/it/training.rs`.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::training_ops::TRAINING_OPS;
use tunebank::job::{Environment, JobSpec};

const SOC: &str = "--soc_version=Ascend910B2";

fn fixture(name: &str) -> String {
    format!(
        "{}/fixtures/models/training/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The resolved units of the step (name → descriptor), through the job API.
fn step_descriptors() -> BTreeMap<String, tunebank::key::OpDescriptor> {
    let job = JobSpec::new([
        SOC.to_string(),
        "--framework=3".into(),
        format!("--model={}", fixture("small_cnn_step.pb")),
    ])
    .resolve(&Environment::empty())
    .unwrap();
    job.plan()
        .unwrap()
        .units
        .iter()
        .map(|u| (u.unit.name.clone(), u.resolved.descriptor.clone()))
        .collect()
}

/// `d` at twice the step's batch (8): every tensor whose first dim is the batch has it
/// doubled (the traced step bakes its batch into its shape constants, so a larger batch is
/// made here, not by `--input_shape`).
fn doubled_batch(d: &tunebank::key::OpDescriptor) -> tunebank::key::OpDescriptor {
    let mut d = d.clone();
    for t in d.inputs.iter_mut().chain(d.outputs.iter_mut()) {
        for s in [&mut t.shape, &mut t.ori_shape] {
            if s.first() == Some(&8) {
                s[0] = 16;
            }
        }
    }
    d
}

/// The simulator models every training op of the step: a space of more than one strategy,
/// a default that runs, deterministic times at or above the roofline, and times that do not
/// fall with the batch (and rise for the convolution backprops, whose GEMMs double).
#[test]
fn the_simulator_models_every_training_op_with_a_space_and_the_roofline_floor() {
    use tunebank::measure::sim::SimRunner;
    use tunebank::measure::{Measure, TuningTask};
    let b8 = step_descriptors();
    let mut sim = SimRunner::new();
    let mut seen = BTreeSet::new();
    for (name, d) in &b8 {
        let ir = d.op_type.as_str();
        if !TRAINING_OPS.contains(&ir) {
            continue;
        }
        seen.insert(ir.to_string());
        let task = TuningTask::new(d.clone());
        let space = sim.space(&task).unwrap();
        assert!(space.len() > 1, "{name} ({ir}): {} strategies", space.len());
        let default = sim.default_strategy(&task).unwrap();
        let t = SimRunner::simulate(&task, &default).unwrap().unwrap();
        assert_eq!(t, SimRunner::simulate(&task, &default).unwrap().unwrap());
        let floor = SimRunner::roofline_us(&task).unwrap();
        assert!(
            t >= floor,
            "{name} ({ir}): {t} µs below the roofline {floor}"
        );
        let big = TuningTask::new(doubled_batch(d));
        let d16 = sim.default_strategy(&big).unwrap();
        let t16 = SimRunner::simulate(&big, &d16).unwrap().unwrap();
        if ir.starts_with("Conv2DBackprop") {
            assert!(t16 > t, "{name}: batch 16 {t16} µs vs batch 8 {t} µs");
        } else {
            assert!(
                t16 >= t * 0.999,
                "{name}: batch 16 {t16} µs vs batch 8 {t} µs"
            );
        }
    }
    assert_eq!(seen.len(), TRAINING_OPS.len(), "{seen:?}");
}
