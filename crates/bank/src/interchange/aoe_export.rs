//! Export to AOE's `unified_bank` format, for ATC: one entry per op record that has a TBE form,
//! `{"<md5>": [{"knowledge": …, "info_dict": …, "cost_time": µs}], …}` written as AOE writes
//! the file (`json.dumps(bank, indent=1)`, md5 keys ascending), the md5 over Python's
//! `json.dumps(info_dict)`.
//!
//! A record imported from AOE is written back verbatim (its stored `info_dict` and `knowledge`
//! text, `cost_time` = its tuned time), so import → export of a bank written that way gives the
//! same bytes. A record tuned here whose descriptor is a TBE MatMul (an untransposed, unfused
//! `MatMulV2`/`BatchMatMulV2` with fractal-aligned sizes) gets the `info_dict` of its
//! descriptor and the `knowledge` of its tiling (`tbe::info_dict_of`, `tbe::knowledge_of`).
//! Every other record is left out with the reason.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::interchange::pyjson::PyJson;
use crate::interchange::{md5_hex, tbe};
use crate::record::{Descriptor, Record};
use tunebank_key::BankKey;

/// What [`export_aoe`] wrote. `--json`: `{"entries", "verbatim", "from_tiling", "left_out":
/// [{"key", "reason"}]}`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AoeExportReport {
    /// Entries written.
    pub entries: usize,
    /// Of those, records imported from AOE written back verbatim.
    pub verbatim: usize,
    /// Of those, records tuned here, written from their descriptor and tiling.
    pub from_tiling: usize,
    /// Records with no TBE form (key, reason).
    pub left_out: Vec<(BankKey, String)>,
}

impl std::fmt::Display for AoeExportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "exported {} AOE entries ({} as imported, {} from tuned tilings), {} records left out",
            self.entries,
            self.verbatim,
            self.from_tiling,
            self.left_out.len()
        )?;
        for (k, why) in &self.left_out {
            writeln!(f, "  left out {k}: {why}")?;
        }
        Ok(())
    }
}

/// `(info_dict, knowledge)` of one record, or why it has none.
fn entry_of(rec: &Record) -> Result<(PyJson, PyJson, bool), String> {
    let text = |name: &str| rec.strategy.get(name).and_then(serde_json::Value::as_str);
    if let (Some(info), Some(knowledge)) = (text("aoe_info_dict"), text("aoe_knowledge")) {
        let parse = |t: &str, what: &str| {
            PyJson::parse(t).map_err(|e| format!("stored {what} is not JSON: {e}"))
        };
        return Ok((
            parse(info, "info_dict")?,
            parse(knowledge, "knowledge")?,
            true,
        ));
    }
    let Descriptor::Op(d) = &rec.descriptor else {
        return Err("not an op record".into());
    };
    let (info, gemm) = tbe::info_dict_of(d)?;
    let knowledge = tbe::knowledge_of(&rec.strategy, &gemm)?;
    Ok((info, knowledge, false))
}

/// The `unified_bank` text of `records` (see the module docs) and what was written.
pub fn export_aoe(records: &[(BankKey, Record)]) -> (String, AoeExportReport) {
    let mut report = AoeExportReport::default();
    let mut groups: BTreeMap<String, Vec<PyJson>> = BTreeMap::new();
    for (key, rec) in records {
        match entry_of(rec) {
            Ok((info, knowledge, verbatim)) => {
                let md5 = md5_hex(info.dumps().as_bytes());
                let entry = PyJson::Dict(vec![
                    ("knowledge".into(), knowledge),
                    ("info_dict".into(), info),
                    ("cost_time".into(), PyJson::Float(rec.performance.tuned_us)),
                ]);
                groups.entry(md5).or_default().push(entry);
                report.entries += 1;
                if verbatim {
                    report.verbatim += 1;
                } else {
                    report.from_tiling += 1;
                }
            }
            Err(why) => report.left_out.push((*key, why)),
        }
    }
    let bank = PyJson::Dict(
        groups
            .into_iter()
            .map(|(md5, list)| (md5, PyJson::List(list)))
            .collect(),
    );
    (bank.dumps_indent(1), report)
}
