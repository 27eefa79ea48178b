//! What the Gaussian process sees of a configuration: each varying parameter's value rank
//! ([`Space::features`]), then, per integer parameter whose values differ in how many times
//! 2 divides them, that count scaled to [0, 1] (its power-of-two alignment), so an effect that
//! follows alignment rather than size (block sizes 384, 448, 512 fast and 416, 480 slow) is a
//! smooth coordinate instead of a comb.

use crate::expr::Value;
use crate::space::{ConfigId, Features, Space};

/// The largest power of two counted; 0 counts as this aligned.
const MAX_TWOS: u32 = 12;

/// The feature map of one space.
#[derive(Debug, Clone)]
pub(super) struct ModelFeatures {
    /// The space's size, to tell whether the map is for the space at hand.
    space_len: usize,
    /// Per aligned parameter: its index and each value's alignment coordinate.
    align: Vec<(usize, Vec<f64>)>,
}

impl ModelFeatures {
    /// The map for `space`; with `alignment` false, the rank features alone.
    pub(super) fn new(space: &Space, alignment: bool) -> Self {
        let mut align = Vec::new();
        for (j, p) in space.params().iter().enumerate().filter(|_| alignment) {
            let twos: Option<Vec<u32>> = (p.values.iter())
                .map(|v| match v {
                    Value::Int(i) if *i == 0 => Some(MAX_TWOS),
                    Value::Int(i) => Some(i.unsigned_abs().trailing_zeros().min(MAX_TWOS)),
                    _ => None,
                })
                .collect();
            let Some(twos) = twos else { continue };
            let (lo, hi) = (twos.iter().min(), twos.iter().max());
            let (Some(&lo), Some(&hi)) = (lo, hi) else {
                continue;
            };
            if hi > lo {
                let span = f64::from(hi - lo);
                align.push((j, twos.iter().map(|&t| f64::from(t - lo) / span).collect()));
            }
        }
        ModelFeatures {
            space_len: space.len(),
            align,
        }
    }

    /// Whether this map was built for `space`.
    pub(super) fn is_for(&self, space: &Space) -> bool {
        self.space_len == space.len()
    }

    /// Number of coordinates.
    pub(super) fn dims(&self, space: &Space) -> usize {
        space.feature_dims() + self.align.len()
    }

    /// Configuration `id`'s coordinates.
    pub(super) fn of(&self, space: &Space, id: ConfigId) -> Features {
        let mut f = space.features(id);
        let c = space.config(id);
        for (j, coord) in &self.align {
            f.push(coord[usize::from(c[*j])]);
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Parameter;

    #[test]
    fn integer_parameters_whose_alignment_varies_get_a_coordinate() {
        let params = vec![
            Parameter::ints("block", &[352, 384, 416, 448, 512]),
            // All odd: alignment never varies, no coordinate.
            Parameter::ints("odd", &[1, 3, 5]),
            Parameter::new("name", vec![Value::Str("a".into()), Value::Str("b".into())]),
            Parameter::ints("zero", &[0, 1]),
        ];
        let space = Space::enumerate(params, &[], &Default::default()).unwrap();
        let f = ModelFeatures::new(&space, true);
        assert_eq!(f.dims(&space), space.feature_dims() + 2);
        let plain = ModelFeatures::new(&space, false);
        assert_eq!(plain.dims(&space), space.feature_dims());
        let id = |c: [u16; 4]| space.id_of(&c).unwrap();
        let align = |c: [u16; 4]| {
            let v = f.of(&space, id(c));
            assert_eq!(&v[..space.feature_dims()], &space.features(id(c))[..]);
            (v[space.feature_dims()], v[space.feature_dims() + 1])
        };
        // 352 = 11·2⁵, 416 = 13·2⁵ share the least alignment; 448 = 7·2⁶; 384 = 3·2⁷;
        // 512 = 2⁹ the most. Rank order (352 < 384 < 416) is not alignment order.
        let a: Vec<f64> = (0..5).map(|v| align([v, 0, 0, 0]).0).collect();
        assert_eq!(a, vec![0.0, 0.5, 0.0, 0.25, 1.0]);
        // 0 counts as the most aligned value.
        assert_eq!(align([0, 0, 0, 0]).1, 1.0);
        assert_eq!(align([0, 0, 0, 1]).1, 0.0);
    }
}
