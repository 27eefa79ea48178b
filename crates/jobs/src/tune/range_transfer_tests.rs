use super::*;
use crate::tune::range_record::tests::{key, matmul};
use tunebank_measure::sim::SimRunner;

/// On a 3 × 3 grid of tuned shapes (M × K), a shape's adjacent ones are its neighbours along
/// one dim: 12 neighbour pairs, 24 directed; never a diagonal or a shape two steps away.
#[test]
fn adjacent_members_are_the_grid_neighbours() {
    let ms = [8, 64, 512];
    let ks = [64, 256, 768];
    let ops: Vec<OpDescriptor> = ms
        .iter()
        .flat_map(|&m| ks.iter().map(move |&k| matmul(m, k)))
        .collect();
    let refs: Vec<&OpDescriptor> = ops.iter().collect();
    let pairs = adjacent_pairs(&refs);
    assert_eq!(pairs.len(), 24);
    let at = |m: i64, k: i64| {
        ops.iter()
            .position(|o| o.inputs[0].ori_shape == [m, k])
            .unwrap()
    };
    for (i, j) in &pairs {
        let (a, b) = (&ops[*i].inputs[0].ori_shape, &ops[*j].inputs[0].ori_shape);
        let steps = |x: &[i64]| {
            let mi = ms.iter().position(|&m| m == x[0]).unwrap() as i64;
            let ki = ks.iter().position(|&k| k == x[1]).unwrap() as i64;
            (mi, ki)
        };
        let ((am, ak), (bm, bk)) = (steps(a), steps(b));
        assert_eq!((am - bm).abs() + (ak - bk).abs(), 1, "{a:?} → {b:?}");
    }
    assert!(pairs.contains(&(at(8, 64), at(64, 64))));
    assert!(pairs.contains(&(at(64, 64), at(8, 64))));
    assert!(!pairs.contains(&(at(8, 64), at(512, 64))));
    assert!(!pairs.contains(&(at(8, 64), at(64, 256))));
}

/// A runner that counts what it is asked to measure and delegates to the simulator.
struct Counting {
    sim: SimRunner,
    measured: usize,
}

impl Measure for Counting {
    fn identity(&self) -> String {
        self.sim.identity()
    }
    fn space(&mut self, task: &TuningTask) -> Result<TaskSpace, tunebank_measure::MeasureError> {
        self.sim.space(task)
    }
    fn default_strategy(
        &mut self,
        task: &TuningTask,
    ) -> Result<StrategyMap, tunebank_measure::MeasureError> {
        self.sim.default_strategy(task)
    }
    fn measure(
        &mut self,
        task: &TuningTask,
        candidates: &[StrategyMap],
    ) -> Result<Vec<tunebank_measure::Outcome>, tunebank_measure::MeasureError> {
        self.measured += candidates.len();
        self.sim.measure(task, candidates)
    }
}

/// Two tuned shapes, M = 64 and M = 1024: each one's strategy is measured at the other's shape
/// (fitted to it, as a look-up fits it), and its transfer is that shape's default time over
/// the strategy's time there, by the simulator's own timing. Transfers already known are kept
/// and not measured again; the stored form reads back the same.
#[test]
fn each_strategy_is_measured_at_the_adjacent_shapes() {
    let mut sim = SimRunner::new();
    let ops = [matmul(64, 768), matmul(1024, 768)];
    let tasks: Vec<TuningTask> = ops.iter().map(|o| TuningTask::new(o.clone())).collect();
    let time = |t: &TuningTask, s: &StrategyMap| SimRunner::simulate(t, s).unwrap().unwrap();
    let baselines: Vec<f64> = tasks
        .iter()
        .map(|t| time(t, &sim.default_strategy(t).unwrap()))
        .collect();
    // Each shape's "tuned" strategy: the fastest of its first 64 configurations.
    let strategies: Vec<StrategyMap> = tasks
        .iter()
        .map(|t| {
            let space = sim.space(t).unwrap();
            (0..space.len().min(64))
                .map(|i| space.strategy(i as _))
                .min_by(|a, b| time(t, a).total_cmp(&time(t, b)))
                .unwrap()
        })
        .collect();
    let members: Vec<MemberRef<'_>> = (0..2)
        .map(|i| (key(&ops[i]), &ops[i], &strategies[i], baselines[i]))
        .collect();
    let mut runner = Counting {
        sim: SimRunner::new(),
        measured: 0,
    };
    let (transfers, trials) = measure_transfers(&mut runner, &members, &[], &|| true);
    assert_eq!((trials, runner.measured), (2, 2));
    assert_eq!(transfers.len(), 2);
    for t in &transfers {
        let (from, to) = if t.from == key(&ops[0]) {
            (0, 1)
        } else {
            (1, 0)
        };
        assert_eq!(t.to, key(&ops[to]));
        let space = sim.space(&tasks[to]).unwrap();
        let (fitted, _) = fit(&space, &strategies[from]).unwrap();
        let want = baselines[to] / time(&tasks[to], &fitted);
        assert!((t.speedup - want).abs() < 1e-9, "{} vs {want}", t.speedup);
    }
    // Known transfers are kept, not measured again.
    let (again, trials) = measure_transfers(&mut runner, &members, &transfers, &|| true);
    assert_eq!((trials, runner.measured), (0, 2));
    assert_eq!(again, transfers);
    // Nothing is measured that the budget does not grant.
    let (none, trials) = measure_transfers(&mut runner, &members, &[], &|| false);
    assert_eq!((none.len(), trials, runner.measured), (0, 0, 2));
    // The stored form reads back.
    let mut strategy = StrategyMap::new();
    strategy.insert("range_transfers".into(), transfers_json(&transfers));
    let mut read = stored_transfers(&strategy);
    let mut want = transfers.clone();
    read.sort_by_key(|t| (t.from, t.to));
    want.sort_by_key(|t| (t.from, t.to));
    assert_eq!(read, want);
}
