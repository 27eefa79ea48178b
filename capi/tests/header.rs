//! The committed C header is exactly what cbindgen generates from the crate today.
//! Regenerate after changing the API: `TUNEBANK_BLESS=1 cargo test -p tunebank-capi --test header`
//! (outside CI: under CI, `CI=true` or `CI=1`, a set `TUNEBANK_BLESS` fails the test and writes
//! nothing, so CI never passes by rewriting what it checks).

#[path = "../../tests/it/common/ci.rs"]
mod ci;

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("config");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = crate_dir.join("include/tunebank.h");
    if std::env::var_os("TUNEBANK_BLESS").is_some() {
        assert!(
            !ci::in_ci(),
            "TUNEBANK_BLESS is set under CI: CI checks the committed header, it never rewrites it"
        );
        std::fs::write(&path, &generated).expect("write header");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "capi/include/tunebank.h is stale; regenerate it with \
         `TUNEBANK_BLESS=1 cargo test -p tunebank-capi --test header` and commit it"
    );
}
