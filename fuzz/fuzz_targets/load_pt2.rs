//! Arbitrary bytes as a PyTorch `.pt2`: bytes that start as a ZIP are the archive itself; any
//! other bytes are the program's JSON, stored as the archive's `models/model.json` (so the
//! fuzzer works on the schema, not on the ZIP layer). Import must return a model or an error,
//! never panic, and an imported model must infer, fuse and resolve (or report why not) without
//! panicking.
#![no_main]
use std::io::Write as _;

use libfuzzer_sys::fuzz_target;
use tunebank::key::{FsReader, ResolvedOptions};
use tunebank::model::{load_pt2_bytes, resolve_units};

fn archive(program: &[u8]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored);
    if z.start_file("fuzz/models/model.json", opts).is_err() || z.write_all(program).is_err() {
        return Vec::new();
    }
    let _ = z.finish();
    buf.into_inner()
}

fuzz_target!(|data: &[u8]| {
    let bytes = if data.starts_with(b"PK") {
        data.to_vec()
    } else {
        archive(data)
    };
    let Ok(model) = load_pt2_bytes(&bytes, "fuzz.pt2") else {
        return;
    };
    let Ok(options) = ResolvedOptions::from_args(["--soc_version=Ascend910B2"], &FsReader) else {
        return;
    };
    let Ok(soc) = options.soc() else {
        return;
    };
    let Ok(profiles) = model.tuning_units(&options) else {
        return;
    };
    for p in &profiles {
        let _ = resolve_units(&p.units, &p.graph.profile, &options, &soc);
    }
});
