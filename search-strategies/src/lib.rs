//! Constrained tuning spaces, ask/tell search strategies and replay of measured spaces.
//!
//! The pieces, as separate as in a search library should be:
//!
//! - [`Space`]: named parameters with value lists and restrictions in Kernel Tuner's
//!   Python-like syntax ([`expr`]); the valid set is enumerated once, with pruning, and
//!   configurations are referred to by [`ConfigId`] (or as [`Config`] index vectors).
//! - [`Strategy`]: the policy, in ask/tell form. It proposes unmeasured configurations and
//!   learns from results, failures included. It never measures.
//! - [`Driver`]: the loop. It owns the budget (unique configurations measured, failures
//!   included, as Kernel Tuner counts `max_fevals`), the batch size, the time limit, and
//!   reports a [`StopReason`].
//! - [`replay`]: Kernel Tuner cache files as a space plus a measurement table, and [`score`]:
//!   the standardised score of Willemsen et al. (2024), used for ours and Kernel Tuner's traces.
//!
//! Built-in strategies: [`strategies::RandomSearch`], [`strategies::Exhaustive`],
//! [`strategies::Annealing`], [`strategies::Genetic`], [`bayes::BayesOpt`], the bandit
//! [`ensemble::Ensemble`] (the default) and [`aoe_ga::AoeGa`] (AOE's own genetic tuner, the
//! baseline an AOE user knows); [`strategies::by_name`] builds them by name.
//!
//! # Writing a strategy
//!
//! A strategy keeps its own seeded RNG and state, proposes only configurations that are not yet
//! measured, and may learn from every result it is told. Here is a complete one: a greedy
//! hill climber that measures an unmeasured neighbour of the best configuration so far, and a
//! random configuration when there is none.
//!
//! ```
//! use rand::SeedableRng;
//! use rand_chacha::ChaCha8Rng;
//! use search_strategies::strategies::random_unmeasured;
//! use search_strategies::{
//!     ConfigId, Driver, Neighbourhood, Observation, Parameter, SearchContext, Space, StopReason,
//!     Strategy,
//! };
//!
//! struct HillClimber {
//!     rng: ChaCha8Rng,
//! }
//!
//! impl Strategy for HillClimber {
//!     fn name(&self) -> &str {
//!         "hill_climber"
//!     }
//!
//!     fn ask(&mut self, ctx: &SearchContext<'_>, n: usize) -> Vec<ConfigId> {
//!         let mut out = Vec::new();
//!         if let Some(best) = ctx.history.best() {
//!             for id in ctx.space.neighbours(best.id, Neighbourhood::Adjacent) {
//!                 if out.len() < n && !ctx.history.is_measured(id) {
//!                     out.push(id);
//!                 }
//!             }
//!         }
//!         while out.len() < n {
//!             match random_unmeasured(ctx, &mut self.rng, &out) {
//!                 Some(id) => out.push(id),
//!                 None => break, // everything is measured
//!             }
//!         }
//!         out
//!     }
//!
//!     fn tell(&mut self, _ctx: &SearchContext<'_>, _results: &[Observation]) {
//!         // The history in `ctx` already holds every result; nothing else to learn here.
//!     }
//! }
//!
//! // A space with a Kernel Tuner-style restriction.
//! let space = Space::enumerate(
//!     vec![
//!         Parameter::ints("block_size_x", &[16, 32, 64, 128, 256]),
//!         Parameter::ints("block_size_y", &[1, 2, 4, 8]),
//!     ],
//!     &["32 <= block_size_x * block_size_y <= 512".to_string()],
//!     &Default::default(),
//! )
//! .unwrap();
//!
//! // A made-up objective (lower is better); block_size_x == 16 fails to run.
//! let mut objective = |space: &Space, id: ConfigId| {
//!     let c = space.config(id);
//!     (c[0] != 0).then(|| ((c[0] as f64 - 3.0).powi(2) + (c[1] as f64 - 1.0).powi(2)) + 1.0)
//! };
//!
//! let mut strategy = HillClimber { rng: ChaCha8Rng::seed_from_u64(7) };
//! let outcome = Driver::new(8).run(&space, &mut strategy, &mut objective);
//! assert_eq!(outcome.stop, StopReason::BudgetExhausted);
//! assert_eq!(outcome.history.len(), 8);
//! assert_eq!(outcome.discarded, 0);
//! println!("best: {:?}", outcome.history.best());
//! ```
//!
//! To compare it with the built-in strategies on replayed spaces, add it to
//! [`strategies::by_name`] and run `search-bench`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod aoe_ga;
pub mod bayes;
pub mod bench;
pub mod compare;
pub mod ensemble;
pub mod expr;
pub mod gp;
pub mod plot;
pub mod replay;
pub mod score;
pub mod space;
pub mod stats;
pub mod strategies;
pub mod strategy;
pub mod svg;
pub mod tpe;
pub mod transfer;

pub use expr::{Restriction, RestrictionError, Value};
pub use space::{Config, ConfigId, Features, Neighbourhood, Parameter, Space, SpaceError};
pub use strategy::{
    Budget, Driver, History, Objective, Observation, SearchContext, SearchOutcome, StopReason,
    StopRule, Strategy,
};

/// Checks that `source` is a well-formed restriction, accepting any identifier as a parameter;
/// returns the names it reads. The entry point of the restriction parser's fuzz target.
pub fn parse_restriction(source: &str) -> Result<Vec<String>, RestrictionError> {
    expr::parse_names(source)
}

/// The build this crate's tests run under (CI's release suite): overflow checks are on for this
/// crate (root `Cargo.toml`, `[profile.release.package.*]`), so an integer overflow in its code
/// panics instead of wrapping to a wrong number.
#[cfg(test)]
mod build_checks {
    #[test]
    fn this_crate_is_built_with_overflow_checks() {
        let wrapped = std::panic::catch_unwind(|| std::hint::black_box(u32::MAX) + 1);
        assert!(
            wrapped.is_err(),
            "u32::MAX + 1 gave {wrapped:?}: overflow checks are off"
        );
    }
}
