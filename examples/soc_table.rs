//! The simulator's SoC models and where each figure comes from: one markdown row per SoC of
//! the key table (every SoC description file of CANN 8.1), as `crates/measure/src/README.md` shows it.
//!
//! `cargo run --release --example soc_table`

use tunebank::key::platform::platform_source;
use tunebank::key::socs;
use tunebank::measure::sim::SocModel;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| SoC | cube cores × clock | vector units × clock | L0A / L0B / L0C KiB | L1 / UB KiB | L2 MiB | GM / L2 read B/cycle/core | memory GB/s | launch µs | fp32 cube, bf16, ND loads |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut notes = Vec::new();
    for f in socs() {
        let source = platform_source(f.version)?;
        match SocModel::resolve(f.version) {
            Ok(m) => {
                let kib = |b: u64| b / 1024;
                let mem = if m.chip_mem_bw_source.starts_with("the SoC file") {
                    format!("{:.0}", m.chip_mem_bw / 1e9)
                } else {
                    notes.push(format!(
                        "{}: memory bandwidth: {}",
                        m.version, m.chip_mem_bw_source
                    ));
                    format!("{:.1} [n{}]", m.chip_mem_bw / 1e9, notes.len())
                };
                let yes = |b: bool| if b { "yes" } else { "no" };
                println!(
                    "| {} | {} × {:.3} GHz | {} × {:.3} GHz | {} / {} / {} | {} / {} | {} | {} / {} | {mem} | {} | {}, {}, {} |",
                    m.version,
                    m.cube_cores,
                    m.clock_ghz,
                    m.vector_units,
                    m.vector_clock_ghz,
                    kib(m.l0a),
                    kib(m.l0b),
                    kib(m.l0c),
                    kib(m.l1),
                    kib(m.ub),
                    m.l2 / (1 << 20),
                    m.mem_read_bpc,
                    m.l2_read_bpc,
                    m.launch_us,
                    yes(m.cube_fp32),
                    yes(m.bf16),
                    yes(m.nd_nz_on_the_fly),
                );
            }
            Err(why) => println!("| {} | not modelled: {why} |||||||||", f.version),
        }
        if source != tunebank::key::platform::PlatformSource::Embedded {
            notes.push(format!("{}: read from {source}", f.version));
        }
    }
    for (i, n) in notes.iter().enumerate() {
        println!("\n[n{}] {n}", i + 1);
    }
    Ok(())
}
