//! From the JSON arguments to resolved ops: the ATC options (an object of option values or an
//! argument array, checked against the bank's SoC on a look-up) and the op template, resolved
//! into one static descriptor and key per dynamic profile.

use tunebank::job::{op_keys, Environment, JobSpec, UnitKey};
use tunebank::key::{parse_args, FsReader, OpTemplate, ResolvedOp, ResolvedOptions};

use crate::status::Fail;

/// The options JSON the C API accepts (see `tunebank_derive_keys`) as `(name, value)` pairs.
fn option_pairs(json: &str) -> Result<Vec<(String, String)>, Fail> {
    let bad = |what: String| {
        Fail::bad_input(format!(
            "options: {what}; expected a JSON object of ATC options \
             {{\"soc_version\": \"Ascend910B2\", \"precision_mode\": \"...\"}}, \
             or an array of arguments [\"--soc_version=Ascend910B2\", ...]"
        ))
    };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| bad(format!("not valid JSON ({e})")))?;
    match value {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::Object(map) => map
            .into_iter()
            .map(|(name, v)| match v {
                serde_json::Value::String(s) => Ok((name, s)),
                serde_json::Value::Number(n) => Ok((name, n.to_string())),
                serde_json::Value::Bool(b) => Ok((name, b.to_string())),
                other => Err(bad(format!("value of {name:?} is {other}, not a string"))),
            })
            .collect(),
        serde_json::Value::Array(items) => {
            let args = items
                .into_iter()
                .map(|v| match v {
                    serde_json::Value::String(s) => Ok(s),
                    other => Err(bad(format!("array item {other} is not a string"))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            parse_args(&args).map_err(|e| bad(e.to_string()))
        }
        other => Err(bad(format!("got {other}"))),
    }
}

/// Resolves the options JSON. `bank_soc` (a look-up's bank) fills in a missing `soc_version`
/// and must equal a given one.
fn resolve_options(json: &str, bank_soc: Option<&str>) -> Result<ResolvedOptions, Fail> {
    let mut pairs = option_pairs(json)?;
    if let Some(bank_soc) = bank_soc {
        // Option names match as the options table matches them: leading dashes dropped, `-`
        // and `_` interchangeable.
        let given = pairs
            .iter()
            .find(|(name, _)| name.trim_start_matches('-').replace('-', "_") == "soc_version");
        match given {
            Some((_, soc)) if soc.trim() != bank_soc => {
                return Err(Fail::bad_input(format!(
                    "options: soc_version {soc:?} differs from the bank's SoC {bank_soc:?}; \
                     expected the SoC the bank was opened for, or no soc_version"
                )))
            }
            Some(_) => {}
            None => pairs.push(("soc_version".to_owned(), bank_soc.to_owned())),
        }
    }
    ResolvedOptions::from_pairs(pairs, &FsReader)
        .map_err(|e| Fail::bad_input(format!("options: {e}")))
}

/// Resolves an op template JSON under options JSON into one entry per dynamic profile.
pub(crate) fn resolve(
    op_json: &str,
    options_json: &str,
    bank_soc: Option<&str>,
) -> Result<Vec<ResolvedOp>, Fail> {
    let options = resolve_options(options_json, bank_soc)?;
    options
        .soc()
        .map_err(|e| Fail::bad_input(format!("options: {e}")))?;
    let template: OpTemplate = serde_json::from_str(op_json).map_err(|e| {
        Fail::bad_input(format!(
            "op descriptor: {e}; expected an op template {{\"node_name\", \"op_type\", \
             \"inputs\": [{{\"shape\", \"dtype\", ...}}], \"outputs\", \"attrs\"}}"
        ))
    })?;
    op_keys(&template, &options).map_err(|e| Fail::bad_input(e.to_string()))
}

/// Profile `profile` of an op template JSON resolved under options JSON on the bank's SoC
/// `bank_soc`: what the by-descriptor look-ups (`tunebank_lookup_op`, `tunebank_lookup_shape`)
/// look up. A profile index past the last profile is bad input.
pub(crate) fn resolve_profile(
    op_json: &str,
    options_json: &str,
    bank_soc: &str,
    profile: usize,
) -> Result<ResolvedOp, Fail> {
    let mut resolved = resolve(op_json, options_json, Some(bank_soc))?;
    if profile >= resolved.len() {
        return Err(Fail::bad_input(format!(
            "profile {profile}: the op has {} profile(s); expected an index below that",
            resolved.len()
        )));
    }
    Ok(resolved.swap_remove(profile))
}

/// Every unit of the model at `model_path` under the options JSON, as a converter resolves
/// it ([`JobSpec::conversion`]): the graph bank `graph_bank` (else AOE's resolution of the
/// custom graph bank plus the built-in one) applied first.
pub(crate) fn model_units(
    model_path: &str,
    options_json: &str,
    graph_bank: Option<&str>,
) -> Result<Vec<UnitKey>, Fail> {
    let mut args: Vec<String> = option_pairs(options_json)?
        .into_iter()
        .map(|(name, value)| format!("--{}={value}", name.trim_start_matches('-')))
        .collect();
    args.push(format!("--model={model_path}"));
    let mut spec = JobSpec::new(args);
    spec.graph_bank = graph_bank.map(Into::into);
    Ok(spec.conversion(&Environment::process())?.unit_keys())
}
