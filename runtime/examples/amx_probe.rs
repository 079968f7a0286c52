//! Diagnostic: what Intel AMX tile instructions cost on this machine, in TSC ticks per
//! iteration (best of 20 runs), for the sequences `kernels/amx.rs` issued per 16 × 16 ×
//! 32 block before its operands swapped (weights as A, activation digits as B; the
//! counts of loads, products and stores are the same today): how long a `tdpbssd` takes and whether its depth K matters, what the tile
//! loads, zeroings and stores add, and how much of the epilogue's AVX-512 work overlaps
//! with them. On the shared 2-vCPU Xeon the figures moved by 2× from one minute to the
//! next (other tenants share the host), so compare the lines of one
//! run. What held every time: K = 64 costs what K = 32 costs.
//!
//! The "2 row tiles" lines pair two weight tiles against one activation tile, which
//! loads the activation once for both (llama.cpp's AMX kernel pairs tiles so). Here,
//! with the operands in L1, a pair cost 90-105 ticks against 2 × 84 for two single
//! blocks (bf16), 132 against 2 × 87-100 with the epilogues. In the real kernel it did
//! not pay (2026-11-30, kernel_probe gemm q4_0 1536 576 128, ns per tile product):
//! 64.1 single, 66.7 paired with each block's sums added into lanes in memory, 74-83
//! with the sums kept per lane run; without any epilogue the paired tile work alone
//! took 52-59. Two row tiles need 32 accumulators, so the epilogue leaves registers,
//! and that costs more than the loads saved.
//!
//! cargo run --release --example amx_probe
#![allow(
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks,
    reason = "a probe of raw tile instructions for measurements, not part of slm"
)]

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn main() {
    probe::run();
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn main() {
    eprintln!("amx_probe needs x86-64 Linux with AMX");
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod probe {
    use std::arch::asm;
    use std::arch::x86_64::*;

    #[repr(C, align(64))]
    struct Aligned<const N: usize>([u8; N]);

    /// Palette 1: tmm0-1 16 rows × `a_bytes` (weights), tmm2-3 8 × 64 (activations),
    /// tmm4-7 16 × 64 (sums); with `a_bytes` = 64 the products are K = 64 deep.
    fn configure(a_bytes: u16) {
        let mut c = Aligned::<64>([0; 64]);
        c.0[0] = 1;
        let b_rows = if a_bytes == 64 { 16 } else { 8 };
        let shapes = [
            (16u8, a_bytes),
            (16, a_bytes),
            (b_rows, 64),
            (b_rows, 64),
            (16, 64),
            (16, 64),
            (16, 64),
            (16, 64),
        ];
        for (i, (rows, colsb)) in shapes.into_iter().enumerate() {
            c.0[16 + 2 * i..18 + 2 * i].copy_from_slice(&colsb.to_le_bytes());
            c.0[48 + i] = rows;
        }
        // Safety: a valid palette-1 configuration.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) c.0.as_ptr(), options(nostack, readonly)) };
    }

    fn best(label: &str, iters: usize, mut f: impl FnMut(usize)) {
        let mut best = u64::MAX;
        for _ in 0..20 {
            // Safety: rdtsc has no preconditions.
            let t = unsafe { _rdtsc() };
            for i in 0..iters {
                f(i);
            }
            best = best.min(unsafe { _rdtsc() } - t);
        }
        println!("{label:48} {:7.1} ticks/iter", best as f64 / iters as f64);
    }

    /// The epilogue's vector work for one block: 16 rows of 255·h + l, convert, scale,
    /// add.
    #[target_feature(enable = "avx512f")]
    unsafe fn epilogue(src: *const i32, acc: &mut [__m512; 16]) {
        let sc = _mm512_set1_ps(1.0001);
        for (r, acc) in acc.iter_mut().enumerate() {
            let h = _mm512_loadu_si512(src.add(16 * r) as *const _);
            let l = _mm512_loadu_si512(src.add(256 + 16 * r) as *const _);
            let i = _mm512_add_epi32(_mm512_sub_epi32(_mm512_slli_epi32::<8>(h), h), l);
            *acc = _mm512_add_ps(*acc, _mm512_mul_ps(_mm512_cvtepi32_ps(i), sc));
        }
    }

    /// Palette 1 for bf16 products: tmm0-1 weights (16 pairs × 16 rows), tmm2-3 the
    /// activation's two bf16 planes (16 tokens × 32 values), tmm4-5 16 × 16 f32 sums.
    /// Palette 1 with all eight tiles 16 rows × 64 bytes (bf16 operands and f32 sums).
    fn configure_bf16() {
        let mut c = Aligned::<64>([0; 64]);
        c.0[0] = 1;
        for i in 0..8 {
            c.0[16 + 2 * i..18 + 2 * i].copy_from_slice(&64u16.to_le_bytes());
            c.0[48 + i] = 16;
        }
        // Safety: a valid palette-1 configuration.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) c.0.as_ptr(), options(nostack, readonly)) };
    }

    /// The bf16 block's epilogue: one f32 sum row per token, scaled and added.
    #[target_feature(enable = "avx512f")]
    unsafe fn epilogue_f32(src: *const f32, acc: &mut [__m512; 16]) {
        let sc = _mm512_set1_ps(1.0001);
        for (r, acc) in acc.iter_mut().enumerate() {
            let s = _mm512_loadu_ps(src.add(16 * r));
            *acc = _mm512_add_ps(*acc, _mm512_mul_ps(s, sc));
        }
    }

    pub fn run() {
        if !is_x86_feature_detected!("avx512f") || __cpuid_count(7, 0).edx & (3 << 24) != 3 << 24 {
            eprintln!("no AMX-INT8 or AVX-512 on this CPU");
            return;
        }
        let ret: i64;
        // Safety: arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) only grants the tile state.
        unsafe {
            asm!("syscall", inlateout("rax") 158i64 => ret, in("rdi") 0x1023i64,
                in("rsi") 18i64, lateout("rcx") _, lateout("r11") _, options(nostack));
        }
        if ret != 0 {
            eprintln!("the kernel did not grant the AMX tile state");
            return;
        }
        let a = Aligned::<4096>([1; 4096]);
        let acts = vec![2u8; 1 << 20];
        let mut sums = vec![[0i32; 512]; 4];
        let mut acc = [unsafe { _mm512_setzero_ps() }; 16];
        let n = 20_000;
        for (k, a_bytes) in [("K = 32", 32u16), ("K = 64", 64)] {
            configure(a_bytes);
            best(&format!("tdpbssd × 2, {k}"), n, |i| unsafe {
                if i.is_multiple_of(2) {
                    asm!("tdpbssd tmm4, tmm0, tmm2", "tdpbssd tmm6, tmm0, tmm3");
                } else {
                    asm!("tdpbssd tmm5, tmm1, tmm2", "tdpbssd tmm7, tmm1, tmm3");
                }
            });
        }
        configure(32);
        let pa = a.0.as_ptr();
        // One 16-bit block as the GEMM issues it: the product of block i + 2 and the
        // store of block i + 1 (into the other slot), then the epilogue of block i.
        let mut block = |i: usize, vector: bool| unsafe {
            let dst = sums[(i + 1) % 4].as_mut_ptr();
            let src = sums[i % 4].as_ptr();
            let h = acts.as_ptr().add((i * 1024) % (256 << 10));
            let l = h.add(512);
            // Slot tiles: (weights, high sums, low sums), and the other slot's sums.
            macro_rules! go {
                ($ta:literal, $th:literal, $tl:literal, $sh:literal, $sl:literal) => {
                    asm!(concat!("tileloadd tmm", $ta, ", [{a}+{s}*1]"),
                        "tileloadd tmm2, [{h}+{t}*1]", "tileloadd tmm3, [{l}+{t}*1]",
                        concat!("tilezero tmm", $th), concat!("tilezero tmm", $tl),
                        concat!("tdpbssd tmm", $th, ", tmm", $ta, ", tmm2"),
                        concat!("tdpbssd tmm", $tl, ", tmm", $ta, ", tmm3"),
                        concat!("tilestored [{o}+{t}*1], tmm", $sh),
                        concat!("tilestored [{o2}+{t}*1], tmm", $sl),
                        a = in(reg) pa, h = in(reg) h, l = in(reg) l, o = in(reg) dst,
                        o2 = in(reg) dst.add(256), s = in(reg) 32usize, t = in(reg) 64usize)
                };
            }
            if i.is_multiple_of(2) {
                go!("0", "4", "6", "5", "7");
            } else {
                go!("1", "5", "7", "4", "6");
            }
            if vector {
                epilogue(src, &mut acc);
            }
        };
        best(
            "16-bit block: 3 loads, 2 zeroings, 2 products, 2 stores",
            n,
            |i| block(i, false),
        );
        best("the same with the epilogue's vector work", n, |i| {
            block(i, true)
        });
        best("the epilogue's vector work alone", n, |i| unsafe {
            epilogue(sums[i % 4].as_ptr(), &mut acc)
        });
        // The same block as a bf16 product (exact while every partial sum stays below
        // 2²⁴: q4_0 with 16-bit activations, both types with today's 13-bit ones): the activation as two bf16 planes, 256·hi and lo, one
        // weight tile for both, both products into one f32 sum tile, one store, and an
        // epilogue with one load per token and no combining.
        // Two row tiles against one token tile, 16-bit digits: per pair of block
        // products 4 loads, 4 zeroings, 4 products, 4 stores (all eight tiles in use,
        // so no slot to store one pair while the next one multiplies).
        let mut dsums = vec![[0i32; 1024]; 2];
        let mut pair = |i: usize, vector: bool| unsafe {
            let dst = dsums[(i + 1) % 2].as_mut_ptr();
            let src = dsums[i % 2].as_ptr();
            let h = acts.as_ptr().add((i * 1024) % (256 << 10));
            let l = h.add(512);
            asm!("tileloadd tmm0, [{a}+{s}*1]", "tileloadd tmm1, [{b}+{s}*1]",
                "tileloadd tmm2, [{h}+{t}*1]", "tileloadd tmm3, [{l}+{t}*1]",
                "tilezero tmm4", "tilezero tmm5", "tilezero tmm6", "tilezero tmm7",
                "tdpbssd tmm4, tmm0, tmm2", "tdpbssd tmm5, tmm0, tmm3",
                "tdpbssd tmm6, tmm1, tmm2", "tdpbssd tmm7, tmm1, tmm3",
                "tilestored [{o}+{t}*1], tmm4", "tilestored [{o1}+{t}*1], tmm5",
                "tilestored [{o2}+{t}*1], tmm6", "tilestored [{o3}+{t}*1], tmm7",
                a = in(reg) pa, b = in(reg) pa.add(512), h = in(reg) h, l = in(reg) l,
                o = in(reg) dst, o1 = in(reg) dst.add(256), o2 = in(reg) dst.add(512),
                o3 = in(reg) dst.add(768), s = in(reg) 32usize, t = in(reg) 64usize);
            if vector {
                epilogue(src, &mut acc);
                epilogue(src.add(512), &mut acc);
            }
        };
        best("16-bit, 2 row tiles: 4 ld, 4 zero, 4 prod, 4 st", n, |i| {
            pair(i, false)
        });
        best("the same with both epilogues", n, |i| pair(i, true));
        if __cpuid_count(7, 0).edx & (1 << 22) == 0 {
            eprintln!("no AMX-BF16 on this CPU");
            // Safety: releases the tile state requested above.
            unsafe { asm!("tilerelease", options(nostack, nomem)) };
            return;
        }
        let bf = Aligned::<4096>([0; 4096]);
        let mut fsums = vec![[0f32; 256]; 4];
        configure_bf16();
        let pb = bf.0.as_ptr();
        let mut block_bf = |i: usize, vector: bool| unsafe {
            let dst = fsums[(i + 1) % 4].as_mut_ptr();
            let src = fsums[i % 4].as_ptr();
            let h = acts.as_ptr().add((i * 2048) % (256 << 10));
            let l = h.add(1024);
            macro_rules! go {
                ($tw:literal, $tc:literal, $ts:literal) => {
                    asm!(concat!("tileloadd tmm", $tw, ", [{a}+{s}*1]"),
                        "tileloadd tmm2, [{h}+{s}*1]", "tileloadd tmm3, [{l}+{s}*1]",
                        concat!("tilezero tmm", $tc),
                        concat!("tdpbf16ps tmm", $tc, ", tmm2, tmm", $tw),
                        concat!("tdpbf16ps tmm", $tc, ", tmm3, tmm", $tw),
                        concat!("tilestored [{o}+{s}*1], tmm", $ts),
                        a = in(reg) pb, h = in(reg) h, l = in(reg) l, o = in(reg) dst,
                        s = in(reg) 64usize)
                };
            }
            if i.is_multiple_of(2) {
                go!("0", "4", "5");
            } else {
                go!("1", "5", "4");
            }
            if vector {
                epilogue_f32(src, &mut acc);
            }
        };
        best(
            "bf16 block: 3 loads, 1 zeroing, 2 products, 1 store",
            n,
            |i| block_bf(i, false),
        );
        best("the same with its epilogue", n, |i| block_bf(i, true));
        // Two row tiles against one token tile: per pair of block products, 4 loads
        // (both weight tiles, the two planes once), 2 zeroings, 4 products, 2 stores.
        let mut psums = vec![[0f32; 512]; 2];
        let mut pair_bf = |i: usize, vector: bool| unsafe {
            let dst = psums[(i + 1) % 2].as_mut_ptr();
            let src = psums[i % 2].as_ptr();
            let h = acts.as_ptr().add((i * 2048) % (256 << 10));
            let l = h.add(1024);
            macro_rules! go {
                ($c0:literal, $c1:literal, $s0:literal, $s1:literal) => {
                    asm!("tileloadd tmm0, [{a}+{s}*1]", "tileloadd tmm1, [{b}+{s}*1]",
                        "tileloadd tmm2, [{h}+{s}*1]", "tileloadd tmm3, [{l}+{s}*1]",
                        concat!("tilezero tmm", $c0), concat!("tilezero tmm", $c1),
                        concat!("tdpbf16ps tmm", $c0, ", tmm2, tmm0"),
                        concat!("tdpbf16ps tmm", $c1, ", tmm2, tmm1"),
                        concat!("tdpbf16ps tmm", $c0, ", tmm3, tmm0"),
                        concat!("tdpbf16ps tmm", $c1, ", tmm3, tmm1"),
                        concat!("tilestored [{o}+{s}*1], tmm", $s0),
                        concat!("tilestored [{o2}+{s}*1], tmm", $s1),
                        a = in(reg) pb, b = in(reg) pb.add(1024), h = in(reg) h, l = in(reg) l,
                        o = in(reg) dst, o2 = in(reg) dst.add(256),
                        s = in(reg) 64usize)
                };
            }
            if i.is_multiple_of(2) {
                go!("4", "5", "6", "7");
            } else {
                go!("6", "7", "4", "5");
            }
            if vector {
                epilogue_f32(src, &mut acc);
                epilogue_f32(src.add(256), &mut acc);
            }
        };
        best("bf16, 2 row tiles: 4 loads, 2 zero, 4 prod, 2 st", n, |i| {
            pair_bf(i, false)
        });
        best("the same with both epilogues", n, |i| pair_bf(i, true));
        std::hint::black_box(&acc);
        // Safety: releases the tile state requested above.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}
