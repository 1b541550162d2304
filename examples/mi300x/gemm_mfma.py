"""bf16 GEMM for the AMD MI300X (CDNA3, gfx942) with MFMA: C(f32) = A @ W^T.

The same computation as examples/gemm.py, written for a machine whose instructions differ.

Problem
    A: (M, K) bf16 row-major; W: (N, K) bf16 row-major (nn.Linear weight layout, "TN"
    GEMM: both operands K-contiguous, the layout LLM inference runs and hipBLASLt is
    tuned for); C: (M, N) f32. K % 8 == 0; the M, N, K edges are masked.

Tiling and wavefront organisation
    256 threads = 4 wavefronts of 64 lanes in a 2 x 2 grid, one wavefront per SIMD of a
    CU. Each wavefront owns a (BM / 2) x (BN / 2) block of C made of
    ``v_mfma_f32_32x32x8_bf16`` atoms (32 x 32 x 8: lane l holds A[l % 32][4 (l // 32) + 0..3],
    B[4 (l // 32) + 0..3][l % 32] and 16 f32 of D). BM = BN = 128: 2 x 2 atoms per k-step,
    64 accumulator VGPRs, A and B fragments of one BK = 32 slab 16 + 16 VGPRs, the global
    prefetch 8 + 8: about 120 of the 512 VGPRs (2 workgroups per CU by LDS). BM = 256:
    128 accumulators, one workgroup per CU, twice the reuse of each W tile.

LDS (double-buffered, XOR swizzled as Triton's AMD backend does)
    sA: 2 stages x BM rows x BK, sW: 2 x BN x BK, both K-contiguous (rows of 64 bytes for
    BK = 32). Each lane's MFMA operand is 4 consecutive k = 8 bytes (``ds_read_b64``); 16
    lanes of a ds_read_b64 read 16 consecutive rows at the same 8-byte group.
    ``xor_swizzle(shape, vec=4, per_phase=2, max_phase=8)``: the 8-byte group index
    (c // 4) is XORed with (r // 2) % 8 -- two 64-byte rows share a 128-byte bank line, so
    the phase advances every two rows -- and the 16 reads land on 16 different 8-byte bank
    pairs: conflict-free. (For BK = 64, 128-byte rows: per_phase = 1, max_phase = 16.)
    The price of 8-byte groups: a 16-byte global vector is written as two ``ds_write_b64``.

Pipeline (register-staged, one barrier per k-tile)
    Direct-to-LDS loads (``buffer_load_dword ... lds``) move one dword per lane on gfx942
    and cannot honour a swizzled LDS layout lane by lane, so -- like hipBLASLt and
    Triton's stream pipeliner on MI300X -- tiles travel global -> VGPRs
    (``buffer_load_dwordx4``, 16-byte vectors) -> LDS:
        prologue: tile 0 -> registers -> stage 0; barrier.
        iteration kt (s = kt % 2):
            issue the global loads of tile kt + 1 into registers (masked past the end);
            sched_barrier(0): the loads stay ahead of the math, their latency hides under it;
            ds_read the A and B fragments of stage s (tiled.a, tiled.b) and the MFMAs;
            sched_barrier(0): the LDS writes stay behind the MFMAs (s_waitcnt vmcnt lands here);
            write tile kt + 1 into stage (kt + 1) % 2; barrier (s_barrier): the new stage is
            visible, and every wave is done with stage s before it is overwritten next time.

Invariants checked (tags: A -> (row=m, k=k), W -> (col=n, k=k))
    * MFMA operand pairing: the mma checks that A and W values agree on k (and
      ``assert_conform`` states it once more).
    * stage separation: the LDS stage written in iteration kt is not the one read.
"""

import ave_core.lang as ave


def lds_layout(stages, rows, cols):
    """LDS layout of ``stages`` K-contiguous bf16 MFMA operand tiles of rows x cols.

    A Triton-AMD style XOR swizzle over the (stages * rows) x cols buffer: groups of 4
    elements (8 bytes, one lane's 32x32x8 operand) stay whole; the group index is XORed
    with the row's phase, so that 16 consecutive rows read at one group hit 16 different
    8-byte bank pairs. It is composed with (stage, r, c) -> colex index of the buffer,
    (stage * rows + r) + stages * rows * c, so that ``t[s]`` is stage s.
    """
    if cols == 32:
        sw = ave.xor_swizzle((stages * rows, cols), 4, 2, 8)    # 64-byte rows
    else:
        sw = ave.xor_swizzle((stages * rows, cols), 4, 1, 16)   # 128-byte rows (cols = 64)
    return ave.composition(sw, ave.layout((stages, rows, cols), (rows, 1, stages * rows)))


def copy_layout(rows, cols):
    """TV layout of a rows x cols bf16 tile over 256 threads in 16-byte vectors.

    Thread t moves the 8 elements of vector t % G of row t // G (G = cols // 8 vectors per
    row), then the same 256 rows / G further down: a wavefront reads whole 64- or 128-byte
    row segments (coalesced ``buffer_load_dwordx4``). Indices are colexicographic over
    (rows, cols): index = r + rows * c.
    """
    G = cols // 8
    return ave.tv_layout(ave.layout((G, 256 // G), (8 * rows, 1)),
                         ave.layout((8, rows * G // 256), (rows, 256 // G)),
                         (rows, cols))


@ave.kernel(threads=256, target="amd", configs=[
    dict(BM=128, BN=128, BK=32),
    dict(BM=256, BN=128, BK=32),
])
def gemm_mfma(A: ave.Tensor[ave.bf16, 2], W: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
              BM: ave.constexpr = 128, BN: ave.constexpr = 128, BK: ave.constexpr = 32):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    W = ave.tag(W, lambda n, k: ave.label(col=n, k=k))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))

    M, K = A.shape
    N = W.shape[0]
    m0 = ave.program_id(0) * BM
    n0 = ave.program_id(1) * BN
    KT = (K + BK - 1) // BK

    tiled = ave.tiled_mma(ave.mfma_atom("32x32x8", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(BM, BN, BK))
    sA = ave.alloc((2, BM, BK), ave.bf16, space="shared", layout=lds_layout(2, BM, BK))
    sW = ave.alloc((2, BN, BK), ave.bf16, space="shared", layout=lds_layout(2, BN, BK))
    COPY_A = copy_layout(BM, BK)
    COPY_W = copy_layout(BN, BK)

    # Prologue: tile 0 -> stage 0.
    ga = ave.load(A[m0:m0 + BM, 0:BK], COPY_A, vector_bytes=16,
                  mask=lambda m, k: (m < M) & (k < K))
    gw = ave.load(W[n0:n0 + BN, 0:BK], COPY_W, vector_bytes=16,
                  mask=lambda n, k: (n < N) & (k < K))
    ave.store(sA[0], ga, vector_bytes=8)
    ave.store(sW[0], gw, vector_bytes=8)
    ave.barrier()

    acc = ave.zeros((BM, BN), ave.f32, tiled.c)
    for kt in ave.range(0, KT):
        s = kt % 2
        sn = (kt + 1) % 2
        k1 = (kt + 1) * BK
        # Global loads of the next tile, in flight during the MFMAs below.
        ga = ave.load(A[m0:m0 + BM, k1:k1 + BK], COPY_A, vector_bytes=16,
                      mask=lambda m, k: (m < M) & (k < K))
        gw = ave.load(W[n0:n0 + BN, k1:k1 + BK], COPY_W, vector_bytes=16,
                      mask=lambda n, k: (n < N) & (k < K))
        ave.sched_barrier(0)

        a = ave.load(sA[s], tiled.a, vector_bytes=8)
        b = ave.load(sW[s].T, tiled.b)
        ave.assert_conform(a, b, contract=(1, 0))
        acc = ave.mma(a, b, acc, tiled)
        ave.sched_barrier(0)

        ave.assert_disjoint(sA[sn], sA[s])
        ave.assert_disjoint(sW[sn], sW[s])
        ave.store(sA[sn], ga, vector_bytes=8)
        ave.store(sW[sn], gw, vector_bytes=8)
        ave.barrier()

    ave.store(C[m0:m0 + BM, n0:n0 + BN], acc, mask=lambda m, n: (m < M) & (n < N))
