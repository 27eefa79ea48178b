//! The normalisation layers: BatchNorm (with the Scale after it folded in), Scale alone and
//! PReLU, whose per-channel blobs become `[C]` or `[C,1,1]` initializers.

use std::collections::BTreeMap;

use super::layers::squeeze_to;
use super::params::Params;
use super::{Builder, Layer};
use crate::graph::Attr;
use crate::ModelError;

type Attrs = BTreeMap<String, Attr>;

impl Builder<'_> {
    /// BatchNorm, with the Scale right after it on its top folded in (ATC's fold).
    pub(super) fn batch_norm(
        &mut self,
        layer: &Layer<'_>,
        next: Option<&Layer<'_>>,
    ) -> Result<bool, ModelError> {
        let eps = Params::of(layer, "batch_norm_param")
            .float("eps")
            .map_err(|r| self.invalid(r))?
            .unwrap_or(1e-5);
        let blobs = self.blobs(layer)?;
        if blobs.len() != 3 {
            return Err(self.weights_error(
                layer,
                format!(
                    "{} blob(s): expected 3 (mean, variance, moving-average factor)",
                    blobs.len()
                ),
            ));
        }
        let mean = squeeze_to(&blobs[0], 1);
        let Some(&c) = mean.first().filter(|c| **c > 0 && mean.len() == 1) else {
            return Err(self.weights_error(
                layer,
                format!("mean blob shape {:?}: expected [channels]", blobs[0]),
            ));
        };
        if squeeze_to(&blobs[1], 1) != [c] {
            return Err(self.weights_error(
                layer,
                format!(
                    "variance blob shape {:?}: expected [{c}] like the mean",
                    blobs[1]
                ),
            ));
        }
        let scale = next.filter(|n| {
            n.ty == "Scale" && n.bottoms.len() == 1 && n.bottoms.first() == layer.tops.first()
        });
        let x = self.bottom(layer, 0)?;
        let (gamma, beta, out_layer) = match scale {
            Some(s) => {
                let (g, b) = self.scale_blobs(s, Some(c))?;
                let b = match b {
                    Some(b) => b,
                    None => self.weight_tensor(format!("{}.beta", s.name), vec![c]),
                };
                (g, b, s)
            }
            None => (
                self.weight_tensor(format!("{}.gamma", layer.name), vec![c]),
                self.weight_tensor(format!("{}.beta", layer.name), vec![c]),
                layer,
            ),
        };
        let m = self.weight_tensor(format!("{}.mean", layer.name), vec![c]);
        let v = self.weight_tensor(format!("{}.var", layer.name), vec![c]);
        let outputs: Vec<String> = out_layer
            .tops
            .iter()
            .map(|t| self.top(out_layer, t))
            .collect();
        self.push(
            layer.name.clone(),
            "BatchNormalization",
            vec![x, gamma, beta, m, v],
            outputs,
            Attrs::from([("epsilon".into(), Attr::Float(eps))]),
        );
        Ok(scale.is_some())
    }

    /// A Scale layer's gamma (and beta when `bias_term`) as initializers of `[C]`.
    fn scale_blobs(
        &mut self,
        layer: &Layer<'_>,
        channels: Option<i64>,
    ) -> Result<(String, Option<String>), ModelError> {
        let bias = Params::of(layer, "scale_param")
            .bool("bias_term")
            .map_err(|r| self.invalid(r))?
            .unwrap_or(false);
        let blobs = self.weight_and_bias_blobs(layer, bias, "gamma", "beta")?;
        let g = squeeze_to(&blobs[0], 1);
        if g.len() != 1 || channels.is_some_and(|c| g[0] != c) {
            return Err(self.weights_error(
                layer,
                format!(
                    "gamma blob shape {:?}: expected [{}]",
                    blobs[0],
                    channels.map_or("channels".into(), |c| c.to_string())
                ),
            ));
        }
        let gamma = self.weight_tensor(format!("{}.gamma", layer.name), g.clone());
        let beta = if bias {
            if squeeze_to(&blobs[1], 1) != g {
                return Err(self.weights_error(
                    layer,
                    format!("beta blob shape {:?}: expected {g:?} like gamma", blobs[1]),
                ));
            }
            Some(self.weight_tensor(format!("{}.beta", layer.name), g))
        } else {
            None
        };
        Ok((gamma, beta))
    }

    /// A Scale not after a BatchNorm: `Mul` by `[C,1,1]` (and `Add`), or `Mul` of two bottoms.
    pub(super) fn scale(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let x = self.bottom(layer, 0)?;
        if layer.bottoms.len() > 1 {
            let y = self.bottom(layer, 1)?;
            self.node(layer, "Mul", vec![x, y], Attrs::new());
            return Ok(());
        }
        let (gamma, beta) = self.scale_blobs(layer, None)?;
        for t in [Some(&gamma), beta.as_ref()].into_iter().flatten() {
            let c = self.initializers[t].dims[0];
            self.initializers.get_mut(t).expect("just made").dims = vec![c, 1, 1];
        }
        match beta {
            Some(b) => {
                let scaled = self.step(layer, "mul", "Mul", vec![x, gamma], Attrs::new());
                self.node(layer, "Add", vec![scaled, b], Attrs::new());
            }
            None => {
                self.node(layer, "Mul", vec![x, gamma], Attrs::new());
            }
        }
        Ok(())
    }

    pub(super) fn prelu(&mut self, layer: &Layer<'_>) -> Result<(), ModelError> {
        let shared = Params::of(layer, "prelu_param")
            .bool("channel_shared")
            .map_err(|r| self.invalid(r))?
            .unwrap_or(false);
        let blobs = self.blobs(layer)?;
        let slope = blobs.first().map(|b| squeeze_to(b, 1)).unwrap_or_default();
        if blobs.len() != 1 || slope.len() != 1 || (shared && slope[0] != 1) {
            return Err(self.weights_error(layer, format!("blobs {blobs:?}: expected one slope blob, [1] when channel_shared, else [channels]")));
        }
        let dims = if shared {
            vec![1]
        } else {
            vec![slope[0], 1, 1]
        };
        let x = self.bottom(layer, 0)?;
        let s = self.weight_tensor(format!("{}.slope", layer.name), dims);
        self.node(layer, "PRelu", vec![x, s], Attrs::new());
        Ok(())
    }
}
