//! A model as a converter resolves it: the units after the graph bank ([`plan_units`], the one
//! place a model's units are decided), and their keys and look-ups ([`Conversion`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::inspect::nearest::MatchMode;

use crate::tune::sgat::{post_sgat_plan, PostSgat};
use crate::tune::{self, TunePlan};
use tunebank_bank::{Bank, BankError, BankRequest, CustomLayer};
use tunebank_key::{RecordKind, ResolvedOptions, SocSpec};
use tunebank_model::Model;

use super::{Environment, JobError, JobSpec};

/// The units a converter compiles: with a graph bank (`spec.graph_bank`, which must exist, else
/// AOE's resolution of the custom graph bank plus the built-in one) the post-SGAT units
/// ([`post_sgat_plan`]), else the fused units ([`tune::plan`]); `only` selects by op name or
/// type. The one place a model's units are decided.
pub(super) fn plan_units(
    spec: &JobSpec,
    env: &Environment,
    model: &Model,
    options: &ResolvedOptions,
    soc: &SocSpec,
    only: Option<&BTreeSet<String>>,
) -> Result<(TunePlan, Option<GraphApplied>), JobError> {
    match open_graph_bank(spec.graph_bank.as_deref(), &soc.version, env)? {
        None => Ok((tune::plan(model, options, soc, only)?, None)),
        Some(bank) => {
            let (plan, applied) = post_sgat_plan(model, options, soc, &bank, only)?;
            let files = describe(&bank);
            Ok((plan, Some(GraphApplied { files, applied })))
        }
    }
}

/// The graph bank for `soc`, read-only: `explicit` (which must exist), else the resolved one
/// over the default built-in one; `None` when no graph bank file exists. A resolution that
/// fails (`TUNE_BANK_PATH` naming no usable directory) means no custom graph bank: the op
/// bank's own resolution reports that setting where it matters, and an explicit `--bank` still
/// wins over it.
fn open_graph_bank(
    explicit: Option<&Path>,
    soc: &str,
    env: &Environment,
) -> Result<Option<Bank>, JobError> {
    let request = BankRequest {
        custom: explicit.map_or(CustomLayer::ResolvedIfValid, |p| {
            CustomLayer::Path(p.to_path_buf())
        }),
        default_builtin: explicit.is_none(),
        must_exist: true,
        ..BankRequest::new(RecordKind::Graph, soc)
    };
    let bank = match Bank::open(env, &request) {
        Err(BankError::NotFound { path }) => {
            return Err(JobError::invalid(
                format!("--graph-bank {}", path.display()),
                "an existing graph bank file",
            ))
        }
        opened => opened?,
    };
    Ok((!bank.layer_paths().is_empty()).then_some(bank))
}

/// The op bank `explicit` or AOE's path rules name, read-only, when it exists (SGAT's and
/// GDAT's node strategies); no built-in bank.
pub(super) fn open_op_bank(
    soc: &str,
    explicit: Option<&Path>,
    env: &Environment,
) -> Result<Option<Bank>, JobError> {
    let request = BankRequest {
        custom: explicit.map(Path::to_path_buf).into(),
        default_builtin: false,
        ..BankRequest::new(RecordKind::Op, soc)
    };
    let bank = Bank::open(env, &request)?;
    Ok((!bank.layer_paths().is_empty()).then_some(bank))
}

/// A bank's files, for messages: its layers' paths joined with `, `.
fn describe(bank: &Bank) -> String {
    let files: Vec<String> = bank
        .layer_paths()
        .into_iter()
        .map(|(_, p)| p.display().to_string())
        .collect();
    files.join(", ")
}

/// What the graph bank applied before OPAT (or a conversion) made of the model.
#[derive(Clone, Debug)]
pub struct GraphApplied {
    /// The graph bank's files, joined with `, `.
    pub files: String,
    /// Per subgraph, what the bank answered; the post-SGAT units.
    pub applied: PostSgat,
}

/// A model as a converter resolves it ([`JobSpec::conversion`]): the options, the units after
/// the graph bank, and the op bank to look them up in.
#[derive(Debug)]
pub struct Conversion {
    /// The resolved options.
    pub options: ResolvedOptions,
    /// The SoC of `--soc_version`.
    pub soc: SocSpec,
    /// `--model` as given.
    pub model_path: String,
    /// The units (and their unique keys) a converter looks up.
    pub plan: TunePlan,
    /// The graph bank applied first, when there was one.
    pub graph: Option<GraphApplied>,
    pub(super) bank: Option<PathBuf>,
    pub(super) builtin_banks: Vec<PathBuf>,
    pub(super) env: Environment,
}

/// One unit of a conversion, as `convert --json` and `tunebank.model_keys` list it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UnitKey {
    /// The unit's name (its first op's node name).
    pub op_name: String,
    /// The model's op types of the unit.
    pub op_type: Vec<String>,
    /// The Ascend IR type (fused units: the fused IR types joined with `+`).
    pub ir_type: String,
    /// The dynamic profile (`static` for a static model).
    pub profile: tunebank_key::Profile,
    /// The bank key, hex.
    pub key: String,
}

impl Conversion {
    /// Every unit and its key, in model order.
    pub fn unit_keys(&self) -> Vec<UnitKey> {
        self.plan
            .units
            .iter()
            .map(|u| {
                let d = &u.resolved.descriptor;
                UnitKey {
                    op_name: u.unit.name.clone(),
                    op_type: u.unit.op_types.clone(),
                    ir_type: if d.fused_ops.is_empty() {
                        d.op_type.clone()
                    } else {
                        d.fused_ops.join("+")
                    },
                    profile: u.resolved.profile.clone(),
                    key: u.resolved.key.to_string(),
                }
            })
            .collect()
    }

    /// Every unit looked up in the layered op bank (the spec's `bank` or AOE's custom bank,
    /// over its `builtin_banks` and the default built-in bank), read-only; a miss answered by
    /// the nearest tuned shape unless `mode` is the strict [`MatchMode::Exact`].
    pub fn look_up(&self, mode: MatchMode) -> Result<crate::inspect::ConvertReport, JobError> {
        let request = BankRequest {
            custom: self.bank.clone().into(),
            builtin: self.builtin_banks.clone(),
            ..BankRequest::new(RecordKind::Op, &self.soc.version)
        };
        let bank = Bank::open(&self.env, &request)?;
        let plan = &self.plan;
        let mut report = crate::inspect::ConvertReport::run(
            &bank,
            &self.model_path,
            &self.soc.version,
            &plan.units,
            &plan.skipped,
            mode,
        )?;
        if let Some(g) = &self.graph {
            report = report.with_graph_bank(g.files.clone(), g.applied.subgraphs.clone());
        }
        Ok(report)
    }
}
