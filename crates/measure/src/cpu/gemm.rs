//! A blocked, packed single-precision GEMM (Goto/BLIS structure) whose blocking comes from the
//! strategy: cache blocks `mc × kc` of A and `kc × nc` of B are packed into micro-panels, and a
//! register-blocked `mr × nr` micro-kernel (AVX2/FMA when the CPU has it, detected at run time;
//! portable code otherwise) computes each tile. Row blocks of C are shared among threads.

use std::thread;

/// Register tile of the micro-kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MicroTile {
    /// 4 rows × 8 columns.
    M4x8,
    /// 8 rows × 8 columns.
    M8x8,
    /// 6 rows × 16 columns.
    M6x16,
    /// 16 rows × 16 columns (one 512-bit vector per row).
    M16x16,
    /// 8 rows × 32 columns.
    M8x32,
    /// 12 rows × 32 columns.
    M12x32,
}

impl MicroTile {
    /// Every tile, in strategy-value order.
    pub const ALL: [MicroTile; 6] = [
        MicroTile::M4x8,
        MicroTile::M8x8,
        MicroTile::M6x16,
        MicroTile::M16x16,
        MicroTile::M8x32,
        MicroTile::M12x32,
    ];

    /// The tiles with a vectorised kernel on this host: the 256-bit ones with AVX2/FMA, the
    /// 512-bit ones also with AVX-512F; all of them elsewhere (portable code).
    pub(crate) fn available() -> Vec<MicroTile> {
        let k = Kernel::select(MicroTile::M4x8);
        MicroTile::ALL
            .into_iter()
            .filter(|m| !k.avx2 || k.avx512 || !m.is_512())
            .collect()
    }

    fn is_512(self) -> bool {
        matches!(
            self,
            MicroTile::M16x16 | MicroTile::M8x32 | MicroTile::M12x32
        )
    }

    /// Rows and columns.
    pub fn shape(self) -> (usize, usize) {
        match self {
            MicroTile::M4x8 => (4, 8),
            MicroTile::M8x8 => (8, 8),
            MicroTile::M6x16 => (6, 16),
            MicroTile::M16x16 => (16, 16),
            MicroTile::M8x32 => (8, 32),
            MicroTile::M12x32 => (12, 32),
        }
    }

    /// The strategy spelling, e.g. `6x16`.
    pub fn name(self) -> &'static str {
        match self {
            MicroTile::M4x8 => "4x8",
            MicroTile::M8x8 => "8x8",
            MicroTile::M6x16 => "6x16",
            MicroTile::M16x16 => "16x16",
            MicroTile::M8x32 => "8x32",
            MicroTile::M12x32 => "12x32",
        }
    }

    /// Parses the strategy spelling.
    pub fn parse(s: &str) -> Option<MicroTile> {
        MicroTile::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Order of the three cache-block loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopOrder {
    /// N blocks outermost, then K, then M (B panel packed once, shared by threads).
    Nkm,
    /// M blocks outermost, then K, then N (A block packed once, B repacked per row block).
    Mkn,
}

impl LoopOrder {
    /// The strategy spelling (`nkm`, `mkn`).
    pub fn name(self) -> &'static str {
        match self {
            LoopOrder::Nkm => "nkm",
            LoopOrder::Mkn => "mkn",
        }
    }

    /// Parses the strategy spelling.
    pub fn parse(s: &str) -> Option<LoopOrder> {
        [LoopOrder::Nkm, LoopOrder::Mkn]
            .into_iter()
            .find(|o| o.name() == s)
    }
}

/// The blocking of one GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmTiling {
    /// Rows of an A cache block.
    pub mc: usize,
    /// Reduction length of a cache block.
    pub kc: usize,
    /// Columns of a B cache block.
    pub nc: usize,
    /// Register tile.
    pub micro: MicroTile,
    /// Cache-block loop order.
    pub order: LoopOrder,
    /// Threads (row blocks of C are dealt round robin).
    pub threads: usize,
}

/// `C = A · B` for row-major `A` (m × k, row stride `lda`), `B` (k × n, `ldb`) and `C`
/// (m × n, `ldc`). C is overwritten. Panics if a slice is too short for its shape.
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    t: &GemmTiling,
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    c: &mut [f32],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(a.len() >= (m - 1) * lda + k && b.len() >= k.saturating_sub(1) * ldb + n);
    assert!(c.len() >= (m - 1) * ldc + n);
    if k == 0 {
        for i in 0..m {
            c[i * ldc..i * ldc + n].fill(0.0);
        }
        return;
    }
    let (mr, nr) = t.micro.shape();
    let g = Blocked {
        kernel: Kernel::select(t.micro),
        m,
        k,
        n,
        a,
        lda,
        b,
        ldb,
        ldc,
        mc: round_up(t.mc.max(mr), mr),
        kc: t.kc.max(1),
        nc: round_up(t.nc.max(nr), nr),
        mr,
        nr,
    };
    let threads = t.threads.max(1).min(m.div_ceil(g.mc));
    let per_thread = g.deal_row_blocks(&mut c[..(m - 1) * ldc + n], threads);
    match t.order {
        LoopOrder::Nkm => g.nkm(per_thread),
        LoopOrder::Mkn => g.mkn(per_thread),
    }
}

/// Row blocks of C one thread computes: (first row, the block's slice of C).
type RowBlocks<'c> = Vec<(usize, &'c mut [f32])>;

/// One GEMM's operands and its effective blocking (cache blocks rounded to the micro-tile).
struct Blocked<'a> {
    kernel: Kernel,
    m: usize,
    k: usize,
    n: usize,
    a: &'a [f32],
    lda: usize,
    b: &'a [f32],
    ldb: usize,
    ldc: usize,
    mc: usize,
    kc: usize,
    nc: usize,
    mr: usize,
    nr: usize,
}

impl Blocked<'_> {
    /// Splits C (rows `0..m`, trimmed to its last element) into disjoint `mc`-row blocks and
    /// deals them to `threads` threads round robin.
    fn deal_row_blocks<'c>(&self, c: &'c mut [f32], threads: usize) -> Vec<RowBlocks<'c>> {
        let mut per_thread: Vec<RowBlocks<'c>> = (0..threads).map(|_| Vec::new()).collect();
        let mut rest = c;
        let mut i = 0;
        let mut j = 0;
        while i < self.m {
            let rows = self.mc.min(self.m - i);
            let take = if i + rows == self.m {
                rest.len()
            } else {
                rows * self.ldc
            };
            let (head, tail) = rest.split_at_mut(take);
            per_thread[j % threads].push((i, head));
            j += 1;
            rest = tail;
            i += rows;
        }
        per_thread
    }

    /// N blocks outermost, then K, then M: each B panel is packed once and shared by the
    /// threads, each thread packing A for its own row blocks.
    fn nkm(&self, mut per_thread: Vec<RowBlocks<'_>>) {
        let threads = per_thread.len();
        let mut bbuf = PackBuf::new(self.kc * self.nc);
        let bpack = bbuf.as_mut_slice();
        let mut abufs: Vec<PackBuf> = (0..threads)
            .map(|_| PackBuf::new(self.mc * self.kc))
            .collect();
        let mut apacks: Vec<&mut [f32]> = abufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        let mut jc = 0;
        while jc < self.n {
            let ncb = self.nc.min(self.n - jc);
            let mut pc = 0;
            while pc < self.k {
                let kcb = self.kc.min(self.k - pc);
                pack_b(bpack, self.b, self.ldb, pc, kcb, jc, ncb, self.nr);
                let bp = &bpack[..];
                let run = |blocks: &mut RowBlocks<'_>, apack: &mut [f32]| {
                    for (ic, cblk) in blocks.iter_mut() {
                        let mcb = self.mc.min(self.m - *ic);
                        pack_a(apack, self.a, self.lda, *ic, mcb, pc, kcb, self.mr);
                        macro_kernel(
                            self.kernel,
                            mcb,
                            kcb,
                            ncb,
                            apack,
                            bp,
                            &mut cblk[jc..],
                            self.ldc,
                            pc > 0,
                        );
                    }
                };
                if threads == 1 {
                    run(&mut per_thread[0], apacks[0]);
                } else {
                    thread::scope(|s| {
                        for (blks, ap) in per_thread.iter_mut().zip(apacks.iter_mut()) {
                            s.spawn(move || run(blks, ap));
                        }
                    });
                }
                pc += kcb;
            }
            jc += ncb;
        }
    }

    /// M blocks outermost, then K, then N: each thread packs an A block once and repacks B
    /// for every row block.
    fn mkn(&self, mut per_thread: Vec<RowBlocks<'_>>) {
        let run = |blocks: &mut RowBlocks<'_>| {
            let mut abuf = PackBuf::new(self.mc * self.kc);
            let mut bbuf = PackBuf::new(self.kc * self.nc);
            let apack = abuf.as_mut_slice();
            let bpack = bbuf.as_mut_slice();
            for (ic, cblk) in blocks.iter_mut() {
                let mcb = self.mc.min(self.m - *ic);
                let mut pc = 0;
                while pc < self.k {
                    let kcb = self.kc.min(self.k - pc);
                    pack_a(apack, self.a, self.lda, *ic, mcb, pc, kcb, self.mr);
                    let mut jc = 0;
                    while jc < self.n {
                        let ncb = self.nc.min(self.n - jc);
                        pack_b(bpack, self.b, self.ldb, pc, kcb, jc, ncb, self.nr);
                        macro_kernel(
                            self.kernel,
                            mcb,
                            kcb,
                            ncb,
                            apack,
                            bpack,
                            &mut cblk[jc..],
                            self.ldc,
                            pc > 0,
                        );
                        jc += ncb;
                    }
                    pc += kcb;
                }
            }
        };
        if per_thread.len() == 1 {
            run(&mut per_thread[0]);
        } else {
            thread::scope(|s| {
                for blks in per_thread.iter_mut() {
                    s.spawn(move || run(blks));
                }
            });
        }
    }
}

/// A packing buffer aligned to 64 bytes, so that packed panels start on cache lines (512-bit
/// loads that straddle two lines are much slower).
struct PackBuf {
    blocks: Vec<Line>,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

impl PackBuf {
    fn new(len: usize) -> PackBuf {
        PackBuf {
            blocks: vec![Line([0.0; 16]); len.div_ceil(16)],
        }
    }

    fn as_mut_slice(&mut self) -> &mut [f32] {
        let len = self.blocks.len() * 16;
        // SAFETY: `Line` is `repr(C)` over 16 f32 with no padding (64 bytes), so the blocks
        // are `len` contiguous, initialised f32 values owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<f32>(), len) }
    }
}

fn round_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

/// Packs rows `ic..ic+mcb`, columns `pc..pc+kcb` of A into `mr`-row slivers: for each sliver,
/// for each p, `mr` consecutive values (zero padded past the last row).
#[allow(clippy::too_many_arguments)]
fn pack_a(
    dst: &mut [f32],
    a: &[f32],
    lda: usize,
    ic: usize,
    mcb: usize,
    pc: usize,
    kcb: usize,
    mr: usize,
) {
    let slivers = mcb.div_ceil(mr);
    for s in 0..slivers {
        let base = s * mr * kcb;
        let rows = mr.min(mcb - s * mr);
        let out = &mut dst[base..base + mr * kcb];
        if rows < mr {
            out.fill(0.0);
        }
        for r in 0..rows {
            let src = &a[(ic + s * mr + r) * lda + pc..][..kcb];
            for (p, &v) in src.iter().enumerate() {
                out[p * mr + r] = v;
            }
        }
    }
}

/// Packs rows `pc..pc+kcb`, columns `jc..jc+ncb` of B into `nr`-column slivers: for each
/// sliver, for each p, `nr` consecutive values (zero padded past the last column).
#[allow(clippy::too_many_arguments)]
fn pack_b(
    dst: &mut [f32],
    b: &[f32],
    ldb: usize,
    pc: usize,
    kcb: usize,
    jc: usize,
    ncb: usize,
    nr: usize,
) {
    let slivers = ncb.div_ceil(nr);
    for s in 0..slivers {
        let base = s * nr * kcb;
        let cols = nr.min(ncb - s * nr);
        let out = &mut dst[base..base + nr * kcb];
        for p in 0..kcb {
            let src = &b[(pc + p) * ldb + jc + s * nr..][..cols];
            let o = &mut out[p * nr..p * nr + nr];
            o[..cols].copy_from_slice(src);
            o[cols..].fill(0.0);
        }
    }
}

/// Computes the `mcb × ncb` block of C from packed A and B; `accumulate` adds to C instead of
/// overwriting it.
#[allow(clippy::too_many_arguments)]
fn macro_kernel(
    kernel: Kernel,
    mcb: usize,
    kcb: usize,
    ncb: usize,
    apack: &[f32],
    bpack: &[f32],
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
) {
    let (mr, nr) = kernel.micro.shape();
    let mut tmp = [0f32; 16 * 32];
    for js in 0..ncb.div_ceil(nr) {
        let cols = nr.min(ncb - js * nr);
        let bp = &bpack[js * nr * kcb..][..nr * kcb];
        for is in 0..mcb.div_ceil(mr) {
            let rows = mr.min(mcb - is * mr);
            let ap = &apack[is * mr * kcb..][..mr * kcb];
            let coff = is * mr * ldc + js * nr;
            if rows == mr && cols == nr {
                // SAFETY: the tile lies inside C (rows and columns checked above; C's slice
                // covers `(rows-1)·ldc + cols` elements from `coff` by construction of the
                // row blocks), and the packed panels hold `mr·kcb` and `nr·kcb` values.
                unsafe {
                    kernel.run(
                        kcb,
                        ap.as_ptr(),
                        bp.as_ptr(),
                        c.as_mut_ptr().add(coff),
                        ldc,
                        accumulate,
                    )
                };
            } else {
                // SAFETY: `tmp` holds mr·nr ≤ 512 values with row stride nr.
                unsafe { kernel.run(kcb, ap.as_ptr(), bp.as_ptr(), tmp.as_mut_ptr(), nr, false) };
                for r in 0..rows {
                    let dst = &mut c[coff + r * ldc..][..cols];
                    let src = &tmp[r * nr..r * nr + cols];
                    if accumulate {
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d += s;
                        }
                    } else {
                        dst.copy_from_slice(src);
                    }
                }
            }
        }
    }
}

/// A micro-kernel: the tile and whether the AVX2/FMA version runs.
#[derive(Clone, Copy, Debug)]
struct Kernel {
    micro: MicroTile,
    avx2: bool,
    avx512: bool,
}

impl Kernel {
    fn select(micro: MicroTile) -> Kernel {
        #[cfg(target_arch = "x86_64")]
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        #[cfg(target_arch = "x86_64")]
        let avx512 = avx2 && is_x86_feature_detected!("avx512f");
        #[cfg(not(target_arch = "x86_64"))]
        let avx512 = false;
        Kernel {
            micro,
            avx2,
            avx512,
        }
    }

    /// # Safety
    /// `a` holds `mr·kc` and `b` `nr·kc` readable values; `c` points at an `mr × nr` tile with
    /// row stride `ldc`, writable.
    unsafe fn run(
        self,
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        acc: bool,
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.avx512 && self.micro.is_512() {
            match self.micro {
                MicroTile::M16x16 => avx512::kernel::<16, 1>(kc, a, b, c, ldc, acc),
                MicroTile::M8x32 => avx512::kernel::<8, 2>(kc, a, b, c, ldc, acc),
                _ => avx512::kernel::<12, 2>(kc, a, b, c, ldc, acc),
            }
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            match self.micro {
                MicroTile::M4x8 => avx2::kernel::<4, 1>(kc, a, b, c, ldc, acc),
                MicroTile::M8x8 => avx2::kernel::<8, 1>(kc, a, b, c, ldc, acc),
                MicroTile::M6x16 => avx2::kernel::<6, 2>(kc, a, b, c, ldc, acc),
                MicroTile::M16x16 => avx2::kernel::<16, 2>(kc, a, b, c, ldc, acc),
                MicroTile::M8x32 => avx2::kernel::<8, 4>(kc, a, b, c, ldc, acc),
                MicroTile::M12x32 => avx2::kernel::<12, 4>(kc, a, b, c, ldc, acc),
            }
            return;
        }
        match self.micro {
            MicroTile::M4x8 => portable::<4, 8>(kc, a, b, c, ldc, acc),
            MicroTile::M8x8 => portable::<8, 8>(kc, a, b, c, ldc, acc),
            MicroTile::M6x16 => portable::<6, 16>(kc, a, b, c, ldc, acc),
            MicroTile::M16x16 => portable::<16, 16>(kc, a, b, c, ldc, acc),
            MicroTile::M8x32 => portable::<8, 32>(kc, a, b, c, ldc, acc),
            MicroTile::M12x32 => portable::<12, 32>(kc, a, b, c, ldc, acc),
        }
    }
}

/// # Safety
/// As [`Kernel::run`].
unsafe fn portable<const MR: usize, const NR: usize>(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    accumulate: bool,
) {
    let mut acc = [[0f32; NR]; MR];
    for p in 0..kc {
        let ap = std::slice::from_raw_parts(a.add(p * MR), MR);
        let bp = std::slice::from_raw_parts(b.add(p * NR), NR);
        for i in 0..MR {
            for j in 0..NR {
                acc[i][j] += ap[i] * bp[j];
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        let dst = std::slice::from_raw_parts_mut(c.add(i * ldc), NR);
        for (d, v) in dst.iter_mut().zip(row) {
            *d = if accumulate { *d + v } else { *v };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// `MR` rows × `NV`·8 columns with 256-bit FMA.
    ///
    /// # Safety
    /// The CPU supports AVX2 and FMA; pointers as in `Kernel::run`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn kernel<const MR: usize, const NV: usize>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        let mut acc = [[_mm256_setzero_ps(); NV]; MR];
        let mut ap = a;
        let mut bp = b;
        for _ in 0..kc {
            let mut bv = [_mm256_setzero_ps(); NV];
            for (v, slot) in bv.iter_mut().enumerate() {
                *slot = _mm256_loadu_ps(bp.add(v * 8));
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let av = _mm256_broadcast_ss(&*ap.add(i));
                for v in 0..NV {
                    row[v] = _mm256_fmadd_ps(av, bv[v], row[v]);
                }
            }
            ap = ap.add(MR);
            bp = bp.add(NV * 8);
        }
        for (i, row) in acc.iter().enumerate() {
            for (v, val) in row.iter().enumerate() {
                let dst = c.add(i * ldc + v * 8);
                let out = if accumulate {
                    _mm256_add_ps(_mm256_loadu_ps(dst), *val)
                } else {
                    *val
                };
                _mm256_storeu_ps(dst, out);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// `MR` rows × `NV`·16 columns with 512-bit FMA.
    ///
    /// # Safety
    /// The CPU supports AVX-512F; pointers as in `Kernel::run`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn kernel<const MR: usize, const NV: usize>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        let mut acc = [[_mm512_setzero_ps(); NV]; MR];
        let mut ap = a;
        let mut bp = b;
        for _ in 0..kc {
            let mut bv = [_mm512_setzero_ps(); NV];
            for (v, slot) in bv.iter_mut().enumerate() {
                *slot = _mm512_loadu_ps(bp.add(v * 16));
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*ap.add(i));
                for v in 0..NV {
                    row[v] = _mm512_fmadd_ps(av, bv[v], row[v]);
                }
            }
            ap = ap.add(MR);
            bp = bp.add(NV * 16);
        }
        for (i, row) in acc.iter().enumerate() {
            for (v, val) in row.iter().enumerate() {
                let dst = c.add(i * ldc + v * 16);
                let out = if accumulate {
                    _mm512_add_ps(_mm512_loadu_ps(dst), *val)
                } else {
                    *val
                };
                _mm512_storeu_ps(dst, out);
            }
        }
    }
}

/// The plain reference: `C = A · B`, row-major, accumulated in f64.
pub fn reference(m: usize, k: usize, n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let av = f64::from(a[i * k + p]);
            for (cv, &bv) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *cv += av * f64::from(bv);
            }
        }
    }
    c.into_iter().map(|v| v as f32).collect()
}
