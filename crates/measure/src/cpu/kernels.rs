//! Host kernels besides GEMM, each with its plain reference: convolution (im2col + the packed
//! GEMM, or direct), softmax and layer norm over the last axis (row blocks, vector lanes), and
//! elementwise ops (tiles, threads).

use std::thread;

use super::gemm::{sgemm, GemmTiling};

/// A 2-D convolution in NCHW / OIHW, no groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv {
    /// Batch.
    pub n: usize,
    /// Input channels.
    pub cin: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub cout: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Strides (H, W).
    pub stride: (usize, usize),
    /// Padding (top, left); bottom and right follow from the output size.
    pub pad: (usize, usize),
    /// Output height.
    pub ho: usize,
    /// Output width.
    pub wo: usize,
}

impl Conv {
    /// Input value at (image, channel, y, x) with zero padding.
    #[inline]
    fn at(&self, x: &[f32], img: usize, c: usize, y: isize, xx: isize) -> f32 {
        if y < 0 || xx < 0 || y as usize >= self.h || xx as usize >= self.w {
            0.0
        } else {
            x[((img * self.cin + c) * self.h + y as usize) * self.w + xx as usize]
        }
    }

    /// The plain reference (f64 accumulation).
    pub fn reference(&self, x: &[f32], wt: &[f32]) -> Vec<f32> {
        let mut out = vec![0f32; self.n * self.cout * self.ho * self.wo];
        for img in 0..self.n {
            for oc in 0..self.cout {
                for oy in 0..self.ho {
                    for ox in 0..self.wo {
                        let mut acc = 0f64;
                        for c in 0..self.cin {
                            for ky in 0..self.kh {
                                for kx in 0..self.kw {
                                    let y =
                                        (oy * self.stride.0 + ky) as isize - self.pad.0 as isize;
                                    let xx =
                                        (ox * self.stride.1 + kx) as isize - self.pad.1 as isize;
                                    acc += f64::from(self.at(x, img, c, y, xx))
                                        * f64::from(
                                            wt[((oc * self.cin + c) * self.kh + ky) * self.kw + kx],
                                        );
                                }
                            }
                        }
                        out[((img * self.cout + oc) * self.ho + oy) * self.wo + ox] = acc as f32;
                    }
                }
            }
        }
        out
    }

    /// im2col then `W (cout × cin·kh·kw) · col (cin·kh·kw × ho·wo)` per image.
    pub fn im2col(
        &self,
        t: &GemmTiling,
        x: &[f32],
        wt: &[f32],
        out: &mut [f32],
        col: &mut Vec<f32>,
    ) {
        let kk = self.cin * self.kh * self.kw;
        let hw = self.ho * self.wo;
        col.resize(kk * hw, 0.0);
        for img in 0..self.n {
            for c in 0..self.cin {
                for ky in 0..self.kh {
                    for kx in 0..self.kw {
                        let row = (c * self.kh + ky) * self.kw + kx;
                        let dst = &mut col[row * hw..(row + 1) * hw];
                        for oy in 0..self.ho {
                            let y = (oy * self.stride.0 + ky) as isize - self.pad.0 as isize;
                            for ox in 0..self.wo {
                                let xx = (ox * self.stride.1 + kx) as isize - self.pad.1 as isize;
                                dst[oy * self.wo + ox] = self.at(x, img, c, y, xx);
                            }
                        }
                    }
                }
            }
            let o = &mut out[img * self.cout * hw..(img + 1) * self.cout * hw];
            sgemm(t, self.cout, kk, hw, wt, kk, col, hw, o, hw);
        }
    }

    /// Direct convolution: `oc_block` output channels at a time, output rows split among
    /// `threads`.
    pub fn direct(&self, oc_block: usize, threads: usize, x: &[f32], wt: &[f32], out: &mut [f32]) {
        let hw = self.ho * self.wo;
        let ocb = oc_block.max(1);
        let rows: Vec<(usize, &mut [f32])> = out.chunks_mut(hw).enumerate().collect();
        // rows[i] is (image, channel) plane i; group planes by oc block and deal to threads.
        let threads = threads.max(1);
        let mut per: Vec<Vec<(usize, &mut [f32])>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, plane) in rows {
            per[(i / ocb) % threads].push((i, plane));
        }
        let work = |planes: &mut Vec<(usize, &mut [f32])>| {
            for (i, plane) in planes.iter_mut() {
                let img = *i / self.cout;
                let oc = *i % self.cout;
                plane.fill(0.0);
                for c in 0..self.cin {
                    for ky in 0..self.kh {
                        for kx in 0..self.kw {
                            let wv = wt[((oc * self.cin + c) * self.kh + ky) * self.kw + kx];
                            for oy in 0..self.ho {
                                let y = (oy * self.stride.0 + ky) as isize - self.pad.0 as isize;
                                if y < 0 || y as usize >= self.h {
                                    continue;
                                }
                                let dst = &mut plane[oy * self.wo..(oy + 1) * self.wo];
                                for (ox, d) in dst.iter_mut().enumerate() {
                                    let xx =
                                        (ox * self.stride.1 + kx) as isize - self.pad.1 as isize;
                                    if xx >= 0 && (xx as usize) < self.w {
                                        *d += wv
                                            * x[((img * self.cin + c) * self.h + y as usize)
                                                * self.w
                                                + xx as usize];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
        if threads == 1 {
            work(&mut per[0]);
        } else {
            thread::scope(|s| {
                for p in per.iter_mut() {
                    s.spawn(move || work(p));
                }
            });
        }
    }
}

/// Which row operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// Softmax over the last axis.
    Softmax,
    /// Layer norm over the last axis (no affine parameters; epsilon 1e-5).
    LayerNorm,
}

/// Row-op reference in f64.
pub fn row_reference(op: RowOp, x: &[f32], len: usize) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    for (src, dst) in x.chunks(len).zip(out.chunks_mut(len)) {
        match op {
            RowOp::Softmax => {
                let mx = src.iter().fold(f64::MIN, |m, &v| m.max(f64::from(v)));
                let s: f64 = src.iter().map(|&v| (f64::from(v) - mx).exp()).sum();
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = ((f64::from(v) - mx).exp() / s) as f32;
                }
            }
            RowOp::LayerNorm => {
                let n = len as f64;
                let mean = src.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
                let var = src
                    .iter()
                    .map(|&v| (f64::from(v) - mean).powi(2))
                    .sum::<f64>()
                    / n;
                let inv = 1.0 / (var + 1e-5).sqrt();
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = ((f64::from(v) - mean) * inv) as f32;
                }
            }
        }
    }
    out
}

/// Row op with `row_block` rows per work item (dealt to `threads`) and `lanes`-wide partial
/// accumulators (1, 4, 8 or 16).
pub fn row_op(
    op: RowOp,
    x: &[f32],
    out: &mut [f32],
    len: usize,
    row_block: usize,
    lanes: usize,
    threads: usize,
) {
    let rb = row_block.max(1);
    let threads = threads.max(1);
    let mut per: Vec<Vec<(&[f32], &mut [f32])>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, (src, dst)) in x.chunks(rb * len).zip(out.chunks_mut(rb * len)).enumerate() {
        per[i % threads].push((src, dst));
    }
    let work = |items: &mut Vec<(&[f32], &mut [f32])>| {
        for (src, dst) in items.iter_mut() {
            for (s, d) in src.chunks(len).zip(dst.chunks_mut(len)) {
                match lanes {
                    1 => row::<1>(op, s, d),
                    4 => row::<4>(op, s, d),
                    8 => row::<8>(op, s, d),
                    _ => row::<16>(op, s, d),
                }
            }
        }
    };
    if threads == 1 {
        work(&mut per[0]);
    } else {
        thread::scope(|s| {
            for p in per.iter_mut() {
                s.spawn(move || work(p));
            }
        });
    }
}

#[inline(always)]
fn lanes_reduce<const L: usize>(
    x: &[f32],
    init: f32,
    map: impl Fn(f32) -> f32,
    f: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut acc = [init; L];
    let chunks = x.chunks_exact(L);
    let rem = chunks.remainder();
    for ch in chunks {
        for l in 0..L {
            acc[l] = f(acc[l], map(ch[l]));
        }
    }
    let mut r = init;
    for &a in &acc {
        r = f(r, a);
    }
    for &v in rem {
        r = f(r, map(v));
    }
    r
}

fn row<const L: usize>(op: RowOp, s: &[f32], d: &mut [f32]) {
    match op {
        RowOp::Softmax => {
            let mx = lanes_reduce::<L>(s, f32::MIN, |v| v, f32::max);
            for (o, &v) in d.iter_mut().zip(s) {
                *o = (v - mx).exp();
            }
            let sum = lanes_reduce::<L>(d, 0.0, |v| v, |a, b| a + b);
            let inv = 1.0 / sum;
            for o in d.iter_mut() {
                *o *= inv;
            }
        }
        RowOp::LayerNorm => {
            let n = s.len() as f32;
            let mean = lanes_reduce::<L>(s, 0.0, |v| v, |a, b| a + b) / n;
            for (o, &v) in d.iter_mut().zip(s) {
                *o = v - mean;
            }
            let var = lanes_reduce::<L>(d, 0.0, |v| v * v, |a, b| a + b) / n;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for o in d.iter_mut() {
                *o *= inv;
            }
        }
    }
}

/// An elementwise op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemOp {
    /// a + b.
    Add,
    /// a − b.
    Sub,
    /// a · b.
    Mul,
    /// max(a, 0).
    Relu,
    /// 1 / (1 + e^−a).
    Sigmoid,
    /// tanh(a).
    Tanh,
    /// a·Φ(a), tanh approximation.
    Gelu,
}

impl ElemOp {
    /// The op for a (lowercased) op type.
    pub fn from_op_type(s: &str) -> Option<ElemOp> {
        Some(match s {
            "add" => ElemOp::Add,
            "sub" => ElemOp::Sub,
            "mul" => ElemOp::Mul,
            "relu" => ElemOp::Relu,
            "sigmoid" => ElemOp::Sigmoid,
            "tanh" => ElemOp::Tanh,
            "gelu" | "fastgelu" => ElemOp::Gelu,
            _ => return None,
        })
    }

    /// Inputs the op reads.
    pub fn arity(self) -> usize {
        match self {
            ElemOp::Add | ElemOp::Sub | ElemOp::Mul => 2,
            _ => 1,
        }
    }

    #[inline(always)]
    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            ElemOp::Add => a + b,
            ElemOp::Sub => a - b,
            ElemOp::Mul => a * b,
            ElemOp::Relu => a.max(0.0),
            ElemOp::Sigmoid => 1.0 / (1.0 + (-a).exp()),
            ElemOp::Tanh => a.tanh(),
            ElemOp::Gelu => 0.5 * a * (1.0 + (0.797_884_6 * (a + 0.044_715 * a * a * a)).tanh()),
        }
    }

    /// The reference, in f64.
    pub fn reference(self, a: &[f32], b: &[f32]) -> Vec<f32> {
        a.iter()
            .enumerate()
            .map(|(i, &x)| {
                let x = f64::from(x);
                let y = b.get(i).map(|&v| f64::from(v)).unwrap_or(0.0);
                (match self {
                    ElemOp::Add => x + y,
                    ElemOp::Sub => x - y,
                    ElemOp::Mul => x * y,
                    ElemOp::Relu => x.max(0.0),
                    ElemOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
                    ElemOp::Tanh => x.tanh(),
                    ElemOp::Gelu => {
                        0.5 * x
                            * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh())
                    }
                }) as f32
            })
            .collect()
    }

    /// Runs over tiles of `tile` elements dealt to `threads`. `b` is empty for unary ops.
    pub fn run(self, a: &[f32], b: &[f32], out: &mut [f32], tile: usize, threads: usize) {
        let tile = tile.max(1);
        let threads = threads.max(1);
        let mut per: Vec<Vec<(usize, &mut [f32])>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, o) in out.chunks_mut(tile).enumerate() {
            per[i % threads].push((i * tile, o));
        }
        let work = |items: &mut Vec<(usize, &mut [f32])>| {
            for (start, o) in items.iter_mut() {
                let src = &a[*start..*start + o.len()];
                if b.is_empty() {
                    for (d, &x) in o.iter_mut().zip(src) {
                        *d = self.apply(x, 0.0);
                    }
                } else {
                    let sb = &b[*start..*start + o.len()];
                    for ((d, &x), &y) in o.iter_mut().zip(src).zip(sb) {
                        *d = self.apply(x, y);
                    }
                }
            }
        };
        if threads == 1 {
            work(&mut per[0]);
        } else {
            thread::scope(|s| {
                for p in per.iter_mut() {
                    s.spawn(move || work(p));
                }
            });
        }
    }
}
