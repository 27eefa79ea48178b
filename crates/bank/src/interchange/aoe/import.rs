//! Writing verified AOE-schema entries into a bank: AOE's own `unified_bank` files and CANN's
//! MatMul repository ([`crate::interchange::tbe::repository`]) share it.

use std::collections::BTreeMap;

use tunebank_key::{BankKey, SocSpec, StrategyMap};

use super::{aoe_descriptor, cores, AoeBank, AoeEntry, AoeImportReport};
use crate::interchange::{merge_into, tbe, InterchangeError};
use crate::layered::{Bank, BankError};
use crate::policy::{Held, WritePolicy};
use crate::record::{Descriptor, Origin, Record};

/// How entries of one source become records: the name the records give as runner and
/// algorithm, and an estimate of an entry's default-tiling time where the file has none.
pub struct EntryImport<'a> {
    /// The source's name (`"aoe"`, `"cann-repository"`).
    pub source: &'a str,
    /// The baseline (default tiling) time of an entry, µs, when one can be estimated; `None`
    /// keeps the entry's own time as its baseline (no known gain).
    pub baseline: &'a dyn Fn(&AoeEntry) -> Option<f64>,
}

impl EntryImport<'static> {
    /// AOE's `unified_bank`: the board's time is the only time.
    pub const AOE: EntryImport<'static> = EntryImport {
        source: "aoe",
        baseline: &|_| None,
    };
}

/// The record option naming how a record's baseline time was obtained, when it is not a
/// measurement (`"estimated: simulated default / simulated stored tiling × board time"`).
pub const BASELINE_OPTION: &str = "baseline";

/// The record of an imported entry (kind op), keyed for `soc`, with `origin` (imported, or
/// built-in when the bank being made will serve as a built-in layer) and the import time. Its
/// options are `soc_version` and, when `file_cores` (the count the bank file was tuned on) is
/// known, `aoe_core_count`: provenance only, the key is `soc`'s whatever the file's count; and
/// [`BASELINE_OPTION`] when `how` estimated the baseline.
fn record(
    entry: &AoeEntry,
    soc: &SocSpec,
    file_cores: Option<u32>,
    origin: Origin,
    unix_time: u64,
    how: &EntryImport<'_>,
) -> Record {
    let (descriptor, _) = aoe_descriptor(&entry.info_dict, soc);
    let mut strategy = StrategyMap::new();
    strategy.insert(
        "aoe_knowledge".into(),
        serde_json::Value::String(entry.knowledge.dumps()),
    );
    strategy.insert(
        "aoe_info_dict".into(),
        serde_json::Value::String(entry.info_dict.dumps()),
    );
    strategy.insert(
        "aoe_md5".into(),
        serde_json::Value::String(entry.md5.clone()),
    );
    if let Some(Ok(tiling)) = tbe::entry_tiling(&entry.info_dict, &entry.knowledge) {
        strategy.extend(tiling);
    }
    let mut options = BTreeMap::from([("soc_version".to_owned(), soc.version.clone())]);
    if let Some(n) = file_cores {
        options.insert(cores::CORE_COUNT_OPTION.to_owned(), n.to_string());
    }
    let mut rec = Record::imported(
        Descriptor::Op(descriptor),
        options,
        strategy,
        entry.cost_time,
        how.source,
        origin,
        unix_time,
    );
    if let Some(b) = (how.baseline)(entry).filter(|b| b.is_finite() && *b > entry.cost_time) {
        rec.performance.baseline_us = b;
        rec.options.insert(
            BASELINE_OPTION.to_owned(),
            "estimated: simulated default / simulated stored tiling × board time".to_owned(),
        );
    }
    rec
}

/// Imports the verified entries of `parsed` into the bank's custom layer (atomically), under the
/// bank-write policy (`merge_into`): an AOE record's `cost_time` was measured on the board, so
/// it replaces a record whose time was simulated or measured on the host, whatever the numbers.
/// Rejected entries are only reported.
///
/// Records are keyed for `soc`, its core count included (the built-in description file's
/// `ai_core_cnt`, or `--aicore_num`); `parsed.core_count`, the count the bank file was tuned on
/// when known, is only recorded, in each record's options as `aoe_core_count`. AOE's shared
/// Ascend910B1 bank was tuned on 25 cores while the SoC's file says 24: a converter on the
/// 24-core part derives its keys with 24 and must hit these records, and a tiling split over
/// more blocks than there are cores still runs, in waves (as the simulator models it), so the
/// board's tiling answers for the keyed part.
pub fn import_aoe(
    bank: &Bank,
    parsed: &AoeBank,
    soc: &SocSpec,
    origin: Origin,
    unix_time: u64,
) -> Result<AoeImportReport, InterchangeError> {
    import_entries(bank, parsed, soc, origin, unix_time, &EntryImport::AOE)
}

/// [`import_aoe`] for entries of any AOE-schema source, named and given baselines by `how`.
/// A baseline is kept only when it is above the entry's own time (an estimated gain); the
/// record then says in its options ([`BASELINE_OPTION`]) that it was estimated.
pub fn import_entries(
    bank: &Bank,
    parsed: &AoeBank,
    soc: &SocSpec,
    origin: Origin,
    unix_time: u64,
    how: &EntryImport<'_>,
) -> Result<AoeImportReport, InterchangeError> {
    let mut report = AoeImportReport {
        accepted: parsed.accepted.len(),
        rejected: parsed.rejected.clone(),
        file_cores: parsed.core_count,
        keyed_cores: soc.core_count,
        core_type: soc.core_type.clone(),
        ..AoeImportReport::default()
    };
    // Several entries may share a key: one source (board times), so the policy keeps the
    // fastest, the first on a tie, before merging.
    let mut best: BTreeMap<BankKey, Record> = BTreeMap::new();
    for entry in &parsed.accepted {
        match aoe_descriptor(&entry.info_dict, soc) {
            (_, Some(why)) => report.unmapped.push((entry.md5.clone(), why)),
            (_, None) => report.mapped += 1,
        }
        match tbe::entry_tiling(&entry.info_dict, &entry.knowledge) {
            Some(Ok(_)) => report.tilings += 1,
            Some(Err(why)) => report.untiled.push((entry.md5.clone(), why.reason)),
            None => {}
        }
        let rec = record(entry, soc, parsed.core_count, origin, unix_time, how);
        let key = crate::layered::descriptor_key(&rec.descriptor).map_err(BankError::Key)?;
        let replace = best.get(&key).is_none_or(|old| {
            WritePolicy::MERGE
                .judge((&rec).into(), Held::Sound(old.into()))
                .replace
        });
        if replace {
            best.insert(key, rec);
        }
    }
    report.merge = merge_into(bank, best.into_iter().collect())?;
    Ok(report)
}
