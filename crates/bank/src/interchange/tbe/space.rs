//! TBE's MatMul tiling space: the tilings AOE's operator tuning can store as `knowledge` for
//! one GEMM, so that the simulator's best can be sought among the tilings the board chose
//! from (`calibrate --aoe`, `tbe_best_us`).
//!
//! The rule is CANN's GEMM tiling (`cache_tiling.cc`: `GetL0Factors` — "m_l0, n_l0, k_l0 is a
//! factor of single core m, n, k" — and `GetNearestFactor` for the L1 chunks), in fractals:
//! - a multi-core split `block_dim = [1, n_dim, m_dim, 1]`, `n_dim · m_dim ≤ cores`, each core
//!   holding `ceil(N1 / n_dim)` × `ceil(M1 / m_dim)` fractals (K is never split: the simulator
//!   never splits it);
//! - L0 tiles `m_l0 | m_core`, `n_l0 | n_core`, `k_l0 | K1`, within L0A, L0B and L0C with their
//!   double buffers (`AL0_matrix = [m_l0, k_l0, …]`, `BL0_matrix = [k_l0, n_l0, …]`,
//!   `CL0_matrix = [n_l0, m_l0, …]`);
//! - per operand an L1 chunk: all of the core's data (`[]`), or `k_l1` fractals of K with
//!   `k_l1 = t · k_l0`, `t | K1 / k_l0`, times `mult` output tiles along its axis where the chunk
//!   spans K (`mult` dividing the core's tiles; 1 otherwise), within L1 with both chunks' buffers;
//! - every ping-pong flag 1 or 2.
//!
//! Every stored tiling of the 26 records of AOE's 910B1 MatMul bank is a point of this space
//! ([`TbeSpace::broken_rule`], checked on the full data), which is what makes the rule AOE's and
//! not a guess: 26 of 26 stored L0 K tiles divide K1 (K1 = 535, 61, 125 among them), and the
//! N tile of a prime N1 (41, 83) is 1.

use crate::interchange::pyjson::PyJson;
use crate::interchange::tbe::knowledge::list;
use crate::interchange::tbe::TbeGemm;

/// The buffer sizes a tiling must fit, bytes (the simulated SoC's).
#[derive(Clone, Copy, Debug)]
pub struct Buffers {
    /// L0A.
    pub l0a: i64,
    /// L0B.
    pub l0b: i64,
    /// L0C (fp32 accumulators).
    pub l0c: i64,
    /// L1.
    pub l1: i64,
}

/// TBE's tiling space of one GEMM on `cores` cores (see the module docs).
#[derive(Clone, Debug)]
pub struct TbeSpace {
    g: TbeGemm,
    /// Input element bytes (a fractal row of K0 elements is 32 bytes).
    in_bytes: i64,
    buffers: Buffers,
    /// `(n_dim, m_dim)` splits, one per distinct per-core size (the fewest cores for it).
    splits: Vec<(i64, i64)>,
}

/// The divisors of `n ≥ 1`, ascending.
fn divisors(n: i64) -> Vec<i64> {
    (1..=n).filter(|d| n % d == 0).collect()
}

/// One of `v` (not empty), drawn with `next`.
fn pick<T: Copy>(next: &mut dyn FnMut() -> u64, v: &[T]) -> T {
    v[(next() % v.len() as u64) as usize]
}

fn ceil(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

fn ints(v: &[i64]) -> PyJson {
    PyJson::List(v.iter().map(|&x| PyJson::Int(i128::from(x))).collect())
}

/// One operand's L1 chunk: `None` for all of the core's data, else `(k_l1 fractals, mult)`.
type L1Chunk = Option<(i64, i64)>;

impl TbeSpace {
    /// The space of `g` on `cores` cores with `in_bytes`-byte inputs and the SoC's `buffers`.
    pub fn new(g: &TbeGemm, cores: i64, in_bytes: i64, buffers: Buffers) -> Self {
        let mut best: std::collections::BTreeMap<(i64, i64), (i64, i64)> = Default::default();
        for n_dim in 1..=g.n1.min(cores) {
            for m_dim in 1..=g.m1.min(cores / n_dim) {
                let core = (ceil(g.n1, n_dim), ceil(g.m1, m_dim));
                let e = best.entry(core).or_insert((n_dim, m_dim));
                if n_dim * m_dim < e.0 * e.1 {
                    *e = (n_dim, m_dim);
                }
            }
        }
        Self {
            g: *g,
            in_bytes,
            buffers,
            splits: best.into_values().collect(),
        }
    }

    /// Bytes of one L0 operand tile of `rows` × `k_l0` fractals (a fractal is 16 rows of 32 bytes).
    fn l0_bytes(&self, rows: i64, k_l0: i64) -> i64 {
        rows * k_l0 * 16 * self.g.k0 * self.in_bytes
    }

    /// Bytes an L1 chunk holds with its buffers: `rows_tile` fractal rows per output tile.
    fn l1_bytes(&self, chunk: L1Chunk, rows_tile: i64, rows_core: i64, pb: i64) -> i64 {
        let row = 16 * self.g.k0 * self.in_bytes;
        match chunk {
            None => rows_core * self.g.k1 * row * pb,
            Some((k_l1, mult)) => mult * rows_tile * k_l1 * row * pb,
        }
    }

    /// One operand's L1 chunk, drawn: all of the core's data, or `t · k_l0` fractals of K for a
    /// divisor `t` of `K1 / k_l0`, holding a divisor of its `tiles` output tiles where it
    /// spans K.
    fn chunk(&self, next: &mut dyn FnMut() -> u64, k_l0: i64, tiles: i64) -> L1Chunk {
        let steps = self.g.k1 / k_l0;
        let mut opts = divisors(steps);
        opts.push(0); // all of the core's data
        match pick(next, &opts) {
            0 => None,
            t if t == steps => Some((t * k_l0, pick(next, &divisors(tiles)))),
            t => Some((t * k_l0, 1)),
        }
    }

    /// One tiling drawn uniformly per choice (split, L0 tiles, flags, L1 chunks), as a TBE
    /// `knowledge` dict with the fields `tbe::tiling_of` reads; `None` when `tries` draws all
    /// break a buffer limit. `next` is the caller's seeded generator.
    pub fn sample(&self, next: &mut dyn FnMut() -> u64, tries: usize) -> Option<PyJson> {
        let k_divisors = divisors(self.g.k1);
        for _ in 0..tries {
            let (n_dim, m_dim) = pick(next, &self.splits);
            let (n_core, m_core) = (ceil(self.g.n1, n_dim), ceil(self.g.m1, m_dim));
            // Each tile among the divisors that fit their buffers singly (1 always does).
            let b = self.buffers;
            let fits = |d: &[i64], ok: &dyn Fn(i64) -> bool| -> Vec<i64> {
                d.iter().copied().filter(|&x| x == 1 || ok(x)).collect()
            };
            let m_l0 = pick(
                next,
                &fits(&divisors(m_core), &|m| {
                    self.l0_bytes(m, 1) <= b.l0a && m * 1024 <= b.l0c
                }),
            );
            let n_l0 = pick(
                next,
                &fits(&divisors(n_core), &|n| {
                    self.l0_bytes(n, 1) <= b.l0b && m_l0 * n * 1024 <= b.l0c
                }),
            );
            let k_l0 = pick(
                next,
                &fits(&k_divisors, &|k| {
                    self.l0_bytes(m_l0, k) <= b.l0a && self.l0_bytes(n_l0, k) <= b.l0b
                }),
            );
            let [pa1, pb1, pa0, pb0, pc0] = [(); 5].map(|_| pick(next, &[1, 2]));
            if self.l0_bytes(m_l0, k_l0) * pa0 > self.buffers.l0a
                || self.l0_bytes(n_l0, k_l0) * pb0 > self.buffers.l0b
                || m_l0 * n_l0 * 256 * 4 * pc0 > self.buffers.l0c
            {
                continue;
            }
            let a = self.chunk(next, k_l0, m_core / m_l0);
            let b = self.chunk(next, k_l0, n_core / n_l0);
            if self.l1_bytes(a, m_l0, m_core, pa1) + self.l1_bytes(b, n_l0, n_core, pb1)
                > self.buffers.l1
            {
                continue;
            }
            return Some(self.knowledge(
                [n_dim, m_dim],
                [m_l0, n_l0, k_l0],
                [a, b],
                [pa1, pb1, pa0, pb0, pc0],
            ));
        }
        None
    }

    fn knowledge(&self, split: [i64; 2], l0: [i64; 3], l1: [L1Chunk; 2], pb: [i64; 5]) -> PyJson {
        let [m, n, k] = l0;
        let k0 = self.g.k0;
        let l1_shape = |c: L1Chunk| match c {
            None => ints(&[]),
            Some((k_l1, mult)) => ints(&[k_l1 * k0, mult, 1, 1, 0]),
        };
        let e = |k: &str, v: PyJson| (k.to_owned(), v);
        let p = |v: i64| PyJson::Int(i128::from(v));
        PyJson::Dict(vec![
            e("AL1_shape", l1_shape(l1[0])),
            e("BL1_shape", l1_shape(l1[1])),
            e("AL0_matrix", ints(&[m, k, 16, k0, 1, 1, 0])),
            e("BL0_matrix", ints(&[k, n, 16, k0, 1, 1, 0])),
            e("CL0_matrix", ints(&[n, m, 16, 16, 1, 1, 0])),
            e("block_dim", ints(&[1, split[0], split[1], 1, 0])),
            e(
                "manual_pingpong_buffer",
                PyJson::Dict(vec![
                    e("AL1_pbuffer", p(pb[0])),
                    e("BL1_pbuffer", p(pb[1])),
                    e("AL0_pbuffer", p(pb[2])),
                    e("BL0_pbuffer", p(pb[3])),
                    e("CL0_pbuffer", p(pb[4])),
                ]),
            ),
        ])
    }

    /// The rule of the space a stored `knowledge` breaks, or `None` when it is a point of the
    /// space (buffer limits aside: the board ran it); a `knowledge` missing a field of the
    /// tiling is outside it, the field named. A `BL0_matrix` of `[]` (B's tile spans the core)
    /// and different A and B L0 K tiles, both of which AOE stores, are accepted.
    pub fn broken_rule(&self, k: &PyJson) -> Option<String> {
        self.check(k).err()
    }

    /// [`TbeSpace::broken_rule`] as a result: `Err` with the rule broken.
    fn check(&self, k: &PyJson) -> Result<(), String> {
        let g = &self.g;
        let bd = list(k, "block_dim")?;
        let (n_dim, m_dim) = match bd.as_slice() {
            [_, n, m, 1, ..] if *n >= 1 && *m >= 1 => (*n, *m),
            _ => return Err(format!("block_dim {bd:?}: expected [batch, N, M, 1, …]")),
        };
        let (n_core, m_core) = (ceil(g.n1, n_dim), ceil(g.m1, m_dim));
        let al0 = list(k, "AL0_matrix")?;
        let [m_l0, ka, ..] = al0[..] else {
            return Err(format!("AL0_matrix {al0:?}: expected [m, k, …]"));
        };
        let bl0 = list(k, "BL0_matrix")?;
        let (kb, n_l0) = match bl0.as_slice() {
            [] => (g.k1, n_core),
            [kb, n, ..] => (*kb, *n),
            _ => return Err(format!("BL0_matrix {bl0:?}")),
        };
        for (what, tile, whole) in [
            ("M", m_l0, m_core),
            ("N", n_l0, n_core),
            ("A's K", ka, g.k1),
            ("B's K", kb, g.k1),
        ] {
            if tile < 1 || whole % tile != 0 {
                return Err(format!("L0 {what} tile {tile} does not divide {whole}"));
            }
        }
        for (name, k_l0, tiles) in [
            ("AL1_shape", ka, m_core / m_l0),
            ("BL1_shape", kb, n_core / n_l0),
        ] {
            match list(k, name)?.as_slice() {
                [] => {}
                [k_el, mult, ..] => {
                    let k_l1 = k_el / g.k0;
                    let ok = k_el % g.k0 == 0
                        && k_l1 % k_l0 == 0
                        && (g.k1 / k_l0) % (k_l1 / k_l0) == 0
                        && *mult >= 1
                        && (*mult == 1 || (k_l1 == g.k1 && tiles % mult == 0));
                    if !ok {
                        return Err(format!(
                            "{name} [{k_el}, {mult}]: K not a factor multiple of the L0 K \
                             {k_l0}, or a multiple of tiles not dividing {tiles}"
                        ));
                    }
                }
                s => return Err(format!("{name} {s:?}")),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interchange::aoe::parse_unified_bank;
    use crate::interchange::tbe::{gemm_of, tiling_of};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Ascend910B1's buffers (its platform_config: L0A/L0B 64 KiB, L0C 128 KiB, L1 512 KiB).
    const B1: Buffers = Buffers {
        l0a: 65536,
        l0b: 65536,
        l0c: 131072,
        l1: 524288,
    };

    fn entries() -> Vec<crate::interchange::aoe::AoeEntry> {
        let path = concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/fixtures/ascend/Ascend910B1_matmul_unified_bank.sample.json"
        );
        parse_unified_bank(&std::fs::read_to_string(path).unwrap())
            .unwrap()
            .accepted
    }

    /// A seeded generator for the draws (any fixed stream does: the tests check properties of
    /// every draw).
    fn draws(seed: u64) -> impl FnMut() -> u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        move || rng.gen()
    }

    /// The board's stored tilings are points of the space; every drawn tiling is one too, fits
    /// the buffers, maps to the simulator's parameters, and the draws spread over the space.
    #[test]
    fn stored_and_drawn_tilings_are_points_of_tbes_space() {
        for e in entries() {
            let g = gemm_of(&e.info_dict).unwrap();
            let space = TbeSpace::new(&g, 25, 2, B1);
            assert_eq!(space.broken_rule(&e.knowledge), None, "{}", e.md5);
            let (mut next, mut tiles) = (draws(7), std::collections::BTreeSet::new());
            for _ in 0..300 {
                let k = space
                    .sample(&mut next, 50)
                    .unwrap_or_else(|| panic!("{}: no tiling fits", e.md5));
                assert_eq!(space.broken_rule(&k), None, "{} {}", e.md5, k.dumps());
                let t = tiling_of(&k, &g).unwrap();
                let v = |n: &str| t[n].as_i64().unwrap();
                let (bm, bn) = (v("blockDimM"), v("blockDimN"));
                assert!(bm * bn <= 25);
                // L0 tiles: factors of the core's fractals (K: of all of K), within L0C.
                assert_eq!(ceil(g.m1, bm) % (v("baseM") / 16), 0, "{}", k.dumps());
                assert_eq!(ceil(g.n1, bn) % (v("baseN") / 16), 0, "{}", k.dumps());
                assert_eq!((g.k1 * g.k0) % v("baseK"), 0, "{}", k.dumps());
                assert!(v("baseM") * v("baseN") * 4 * v("dbL0C") <= B1.l0c);
                tiles.insert((v("baseM"), v("baseN"), v("baseK"), bm, bn));
            }
            assert!(
                tiles.len() >= 20.min(space.splits.len()),
                "{}: {tiles:?}",
                e.md5
            );
        }
    }

    /// N1 = 83 is prime: on one core along N the only N tiles are 1 and 83 fractals; a split
    /// over 5 cores gives each 17 (prime again) and over 4 gives 21 = 3 · 7.
    #[test]
    fn a_prime_n_takes_its_tiles_from_the_cores_share() {
        let e = entries()
            .into_iter()
            .find(|e| e.md5.starts_with("01b915d5"));
        let g = gemm_of(&e.unwrap().info_dict).unwrap();
        assert_eq!(g.n1, 83);
        let space = TbeSpace::new(&g, 25, 2, B1);
        let mut next = draws(1);
        let mut by_split =
            std::collections::BTreeMap::<i64, std::collections::BTreeSet<i64>>::new();
        for _ in 0..3000 {
            let k = space.sample(&mut next, 50).unwrap();
            let t = tiling_of(&k, &g).unwrap();
            let n = t["blockDimN"].as_i64().unwrap();
            by_split
                .entry(n)
                .or_default()
                .insert(t["baseN"].as_i64().unwrap() / 16);
        }
        assert!(by_split[&1].is_subset(&[1, 83].into()), "{by_split:?}");
        assert!(
            by_split[&4].is_subset(&[1, 3, 7, 21].into()),
            "{by_split:?}"
        );
        assert!(by_split[&4].len() >= 2, "{by_split:?}");
    }

    /// A stored tiling with a K tile that does not divide K1, or an L1 chunk of K that is not a
    /// whole number of L0 tiles, is outside the space, and the rule it breaks is named.
    #[test]
    fn a_tile_that_does_not_divide_is_outside_the_space() {
        let e = entries()
            .into_iter()
            .find(|e| e.md5.starts_with("01b915d5"));
        let e = e.unwrap();
        let g = gemm_of(&e.info_dict).unwrap();
        let space = TbeSpace::new(&g, 25, 2, B1);
        let with = |field: &str, v: PyJson| {
            let mut k = e.knowledge.clone();
            if let PyJson::Dict(items) = &mut k {
                items.iter_mut().find(|(n, _)| n == field).unwrap().1 = v;
            }
            k
        };
        // K1 = 64: an L0 K of 24 fractals does not divide it.
        let k = with("AL0_matrix", ints(&[4, 24, 16, 16, 1, 1, 0]));
        let err = space.broken_rule(&k).unwrap();
        assert!(err.contains("A's K tile 24 does not divide 64"), "{err}");
        // An L1 chunk of 24 fractals of K over L0 K tiles of 16.
        let k = with("AL1_shape", ints(&[384, 1, 1, 1, 0]));
        let err = space.broken_rule(&k).unwrap();
        assert!(err.starts_with("AL1_shape [384, 1]"), "{err}");
        // K split over cores: not a tiling of this space.
        let k = with("block_dim", ints(&[1, 1, 25, 2, 0]));
        assert!(space.broken_rule(&k).unwrap().starts_with("block_dim"));
    }
}
