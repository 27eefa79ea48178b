//! Protocol v1's responses (docs/interfaces.md, "External runner protocol"): the parsed
//! [`Response`], why a line is not one ([`ProtocolError`]), and [`parse_response`], which checks
//! a line's envelope (JSON object, version, id, type) and then its `describe` or `measure`
//! body. A malformed entry of `results` is an `env_exception` of its candidate only.

use std::collections::HashMap;
use tunebank_key::StrategyMap;

use search_strategies::{Parameter, Value};
use serde_json::{Map, Value as Json};

use crate::{json_to_value, CandidateFailure, Outcome};
use tunebank_failure::FailureKind;

/// The protocol version this runner speaks.
pub(crate) const PROTOCOL_VERSION: u64 = 1;

/// Longest response line accepted (bytes); a longer one is garbage.
pub(crate) const MAX_LINE: usize = 16 << 20;

/// A parsed v1 response line.
#[derive(Clone, Debug, PartialEq)]
pub enum Response {
    /// Answer to `describe`: the space, the default strategy and device facts.
    Describe {
        /// Parameters: names and value lists.
        params: Vec<Parameter>,
        /// Restrictions (Kernel Tuner syntax).
        restrictions: Vec<String>,
        /// Named constants the restrictions use.
        constants: HashMap<String, Value>,
        /// The default (baseline) strategy.
        default: StrategyMap,
        /// Device facts as reported (free-form JSON object).
        device: serde_json::Value,
    },
    /// Answer to `measure`: one outcome per candidate, in order.
    Measure {
        /// The outcomes.
        results: Vec<Outcome>,
        /// Device facts as reported.
        device: serde_json::Value,
    },
    /// The runner could not handle the request at all.
    Error {
        /// Its message.
        message: String,
    },
}

/// Why a line is not an acceptable response.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// Not JSON, or not an object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// A different protocol version.
    #[error("protocol version {0}, expected {PROTOCOL_VERSION}")]
    Version(String),
    /// The response answers another request.
    #[error("response id {got}, expected {expected}")]
    WrongId {
        /// Id received.
        got: String,
        /// Id expected.
        expected: u64,
    },
    /// A field is missing or has the wrong type.
    #[error("{0}")]
    Malformed(String),
    /// The number of results differs from the number of candidates.
    #[error("{got} results for {expected} candidates")]
    WrongCount {
        /// Results received.
        got: usize,
        /// Candidates sent.
        expected: usize,
    },
}

pub(super) fn malformed(m: impl Into<String>) -> ProtocolError {
    ProtocolError::Malformed(m.into())
}

/// Parses one response line for request `id` of type `kind` (`describe` or `measure`);
/// `candidates` is the number of candidates a `measure` request carried. Never panics.
pub fn parse_response(
    line: &str,
    id: u64,
    kind: &str,
    candidates: usize,
) -> Result<Response, ProtocolError> {
    let v: Json = serde_json::from_str(line.trim()).map_err(|e| {
        let shown: String = line.chars().take(80).collect();
        ProtocolError::NotJson(format!("{e} in {shown:?}"))
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| ProtocolError::NotJson(format!("{} value", kind_of(&v))))?;
    check_envelope(obj, id)?;
    let ty = obj
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or_else(|| malformed("missing string field `type`"))?;
    let device = obj.get("device").cloned().unwrap_or(Json::Null);
    if ty == "error" {
        let message = obj
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("(no message)")
            .to_string();
        return Ok(Response::Error { message });
    }
    if ty != kind {
        return Err(malformed(format!(
            "response type {ty:?}, expected {kind:?}"
        )));
    }
    match kind {
        "describe" => parse_describe(obj, device),
        _ => parse_measure(obj, candidates, device),
    }
}

/// The response speaks version 1 and answers request `id`.
fn check_envelope(obj: &Map<String, Json>, id: u64) -> Result<(), ProtocolError> {
    match obj.get("version") {
        Some(x) if x.as_u64() == Some(PROTOCOL_VERSION) => {}
        other => {
            return Err(ProtocolError::Version(
                other.map_or("missing".into(), |x| x.to_string()),
            ))
        }
    }
    match obj.get("id") {
        Some(x) if x.as_u64() == Some(id) => Ok(()),
        other => Err(ProtocolError::WrongId {
            got: other.map_or("missing".into(), |x| x.to_string()),
            expected: id,
        }),
    }
}

/// The body of a `describe` response: `params`, optional `restrictions` and `constants`,
/// `default`.
fn parse_describe(obj: &Map<String, Json>, device: Json) -> Result<Response, ProtocolError> {
    let params = obj
        .get("params")
        .and_then(|p| p.as_array())
        .ok_or_else(|| malformed("describe: missing array `params`"))?
        .iter()
        .map(parse_param)
        .collect::<Result<Vec<_>, ProtocolError>>()?;
    let restrictions = match obj.get("restrictions") {
        None | Some(Json::Null) => Vec::new(),
        Some(r) => r
            .as_array()
            .ok_or_else(|| malformed("describe: `restrictions` is not an array"))?
            .iter()
            .map(|x| {
                x.as_str()
                    .map(String::from)
                    .ok_or_else(|| malformed("describe: a restriction is not a string"))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let mut constants = HashMap::new();
    if let Some(c) = obj.get("constants").and_then(|c| c.as_object()) {
        for (k, x) in c {
            let v = json_to_value(x)
                .ok_or_else(|| malformed(format!("describe: constant {k} is not a scalar")))?;
            constants.insert(k.clone(), v);
        }
    }
    let default: StrategyMap = obj
        .get("default")
        .and_then(|d| d.as_object())
        .ok_or_else(|| malformed("describe: missing object `default`"))?
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Response::Describe {
        params,
        restrictions,
        constants,
        default,
        device,
    })
}

/// One entry of a `describe` response's `params`: `name` and scalar `values`.
fn parse_param(p: &Json) -> Result<Parameter, ProtocolError> {
    let name = p
        .get("name")
        .and_then(|n| n.as_str())
        .ok_or_else(|| malformed("describe: a parameter lacks `name`"))?;
    let values = p
        .get("values")
        .and_then(|n| n.as_array())
        .ok_or_else(|| malformed(format!("describe: {name} lacks `values`")))?
        .iter()
        .map(|x| {
            json_to_value(x)
                .ok_or_else(|| malformed(format!("describe: {name} has a non-scalar value")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Parameter::new(name, values))
}

/// The body of a `measure` response: exactly one entry of `results` per candidate.
fn parse_measure(
    obj: &Map<String, Json>,
    candidates: usize,
    device: Json,
) -> Result<Response, ProtocolError> {
    let results = obj
        .get("results")
        .and_then(|r| r.as_array())
        .ok_or_else(|| malformed("measure: missing array `results`"))?;
    if results.len() != candidates {
        return Err(ProtocolError::WrongCount {
            got: results.len(),
            expected: candidates,
        });
    }
    let results = results.iter().map(parse_result).collect();
    Ok(Response::Measure { results, device })
}

fn kind_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "a null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// One entry of `results`: a status, samples for `ok`, a reason otherwise. An entry that breaks
/// these rules is an `env_exception` for its candidate only.
fn parse_result(r: &Json) -> Outcome {
    let bad = |m: String| {
        Outcome::fail(
            CandidateFailure::EnvException,
            format!("runner result: {m}"),
        )
    };
    let Some(status) = r.get("status").and_then(|s| s.as_str()) else {
        return bad("missing string `status`".into());
    };
    if status == "ok" {
        let Some(samples) = r.get("samples_us").and_then(|s| s.as_array()) else {
            return bad("status ok without array `samples_us`".into());
        };
        let samples: Option<Vec<f64>> = samples
            .iter()
            .map(|x| x.as_f64().filter(|v| v.is_finite() && *v > 0.0))
            .collect();
        return match samples {
            Some(s) if !s.is_empty() => Outcome::Measurement { samples_us: s },
            _ => bad("samples must be a non-empty list of positive finite µs".into()),
        };
    }
    match CandidateFailure::parse(status) {
        Some(kind) => Outcome::fail(
            kind,
            r.get("reason")
                .and_then(|s| s.as_str())
                .unwrap_or("(no reason given)"),
        ),
        None => bad(format!("unknown status {status:?}")),
    }
}

impl ProtocolError {
    /// An external runner's answer that breaks the protocol is the request's (its runner).
    pub fn kind(&self) -> FailureKind {
        match self {
            ProtocolError::NotJson(_)
            | ProtocolError::Version(_)
            | ProtocolError::WrongId { .. }
            | ProtocolError::Malformed(_)
            | ProtocolError::WrongCount { .. } => FailureKind::Input,
        }
    }
}
