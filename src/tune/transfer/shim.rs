//! Stand-in for `search_strategies::transfer` until it lands (same names and signatures):
//! warm start only, nearest valid configuration by value-index distance.

use std::sync::Arc;

use search_strategies::{ConfigId, Observation, SearchContext, Space, Strategy, Value};

/// A configuration by parameter name and its measured time (`None` = failed).
pub struct SourceRecord {
    /// Values by parameter name.
    pub values: Vec<(String, Value)>,
    /// Time.
    pub objective: Option<f64>,
}

/// One related record set.
pub struct Source {
    /// Label.
    pub label: String,
    /// Distance ≥ 0.
    pub distance: f64,
    /// Records.
    pub records: Vec<SourceRecord>,
}

/// Sources projected onto a space.
pub struct Prior {
    labels: Vec<String>,
    seeds: Vec<Seed>,
}

/// A warm-start proposal.
#[derive(Clone, Copy, Debug)]
pub struct Seed {
    /// The configuration.
    pub id: ConfigId,
    /// The source index.
    pub source: usize,
}

impl Prior {
    /// Projects `sources` onto `space`.
    pub fn new(space: &Space, sources: &[Source]) -> Prior {
        let mut order: Vec<usize> = (0..sources.len()).collect();
        order.sort_by(|&a, &b| sources[a].distance.total_cmp(&sources[b].distance));
        let mut seeds: Vec<Seed> = Vec::new();
        for s in order {
            for r in &sources[s].records {
                if r.objective.is_none() {
                    continue;
                }
                if let Some(id) = project(space, &r.values) {
                    if !seeds.iter().any(|x| x.id == id) {
                        seeds.push(Seed { id, source: s });
                    }
                }
            }
        }
        Prior {
            labels: sources.iter().map(|s| s.label.clone()).collect(),
            seeds,
        }
    }

    /// Nothing projected.
    pub fn is_empty(&self) -> bool {
        self.seeds.is_empty()
    }

    /// Seeds in order.
    pub fn seeds(&self) -> &[Seed] {
        &self.seeds
    }

    /// A source's label.
    pub fn label(&self, source: usize) -> &str {
        &self.labels[source]
    }
}

fn project(space: &Space, values: &[(String, Value)]) -> Option<ConfigId> {
    if space.is_empty() {
        return None;
    }
    let want: Vec<Option<f64>> = space
        .params()
        .iter()
        .map(|p| {
            let v = values.iter().find(|(n, _)| *n == p.name)?;
            p.values
                .iter()
                .enumerate()
                .min_by(|a, b| closeness(a.1, &v.1).total_cmp(&closeness(b.1, &v.1)))
                .map(|(i, _)| i as f64)
        })
        .collect();
    if want.iter().all(Option::is_none) {
        return None;
    }
    (0..space.len() as ConfigId).min_by(|&a, &b| {
        let d = |id: ConfigId| -> f64 {
            space
                .config(id)
                .iter()
                .zip(&want)
                .map(|(&c, w)| w.map_or(0.0, |w| (f64::from(c) - w).abs()))
                .sum()
        };
        d(a).total_cmp(&d(b))
    })
}

fn closeness(a: &Value, b: &Value) -> f64 {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => (*x as f64 - *y as f64).abs(),
        (Value::Float(x), Value::Float(y)) => (x - y).abs(),
        _ if a == b => 0.0,
        _ => f64::INFINITY,
    }
}

struct Warm {
    inner: Box<dyn Strategy>,
    prior: Arc<Prior>,
    next: usize,
}

impl Strategy for Warm {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
        let mut out = Vec::new();
        while out.len() < n && self.next < self.prior.seeds.len() {
            let id = self.prior.seeds[self.next].id;
            self.next += 1;
            if !ctx.history.is_measured(id) {
                out.push(id);
            }
        }
        if out.is_empty() {
            return self.inner.ask(ctx, n);
        }
        out
    }

    fn tell(&mut self, ctx: &SearchContext<'_>, results: &[Observation]) {
        self.inner.tell(ctx, results)
    }
}

/// `by_name` with a warm start.
pub fn by_name_with_prior(name: &str, seed: u64, prior: Arc<Prior>) -> Option<Box<dyn Strategy>> {
    let inner = search_strategies::strategies::by_name(name, seed)?;
    Some(Box::new(Warm {
        inner,
        prior,
        next: 0,
    }))
}
