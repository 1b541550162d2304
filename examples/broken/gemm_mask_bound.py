"""BROKEN VARIANT of examples/gemm.py (see examples/broken/manifest.toml).

B's copy is masked with the wrong bound (n < M instead of n < N).

The correct kernel's description follows.

Pipelined bf16 GEMM for the NVIDIA H200 (sm_90), mma.sync path: C(f32) = A @ B.

Problem
    A: (M, K) bf16 row-major, B: (K, N) bf16 row-major, C: (M, N) f32 row-major, any
    M, N, K with K % 8 == 0 and N % 8 == 0 (rows start 16-byte aligned, so no 16-byte
    cp.async vector straddles a row end); the M, N and K edges are masked.

Tiling and thread organisation
    One program (CTA) computes the BM x BN tile of C at (program_id(0) * BM,
    program_id(1) * BN); grid = (cdiv(M, BM), cdiv(N, BN)), M-tiles on axis 0 so that
    CTAs launched together share the B column panel in L2.
    128 threads = 4 warps in a WM x WN = 2 x 2 grid (warp w at (w // 2, w % 2)); each warp
    owns a (BM / 2) x (BN / 2) block of C, a grid of m16n8k16 atoms
    (``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``).
    With BM = BN = 128 a warp owns 64 x 64: 4 x 8 atoms, 128 f32 accumulator registers per
    thread, plus 32 + 32 registers of A and B fragments for one BK = 32 slab (two k-steps of
    16): about 200 registers, under the 255 limit; 2 CTAs (8 warps) per SM.
    The second configuration (BM = 64, STAGES = 4) is for skinny or small problems where
    128 x 128 tiles leave most of the 132 SMs idle.

Shared memory (per stage, swizzled; 48 KB in all for both configurations)
    sA[s]: BM x BK = BM x 32 bf16, rows of 64 bytes. The 16-byte vectors (8 bf16: element
    offset bits 0..2) must stay contiguous for cp.async and for ldmatrix, so the swizzle
    only permutes whole 16-byte chunks (M = 3). ldmatrix reads 8 consecutive rows at one
    16-byte chunk c; unswizzled, the chunk's bank group (offset bits 3..5 = c + 4 * (r % 2))
    takes only 2 values over those 8 rows: a 4-way bank conflict. ``Swizzle<2,3,3>`` XORs
    offset bits 6..7 (= (r // 2) % 4) into bits 3..4 (the chunk), so 8 consecutive rows land
    in 8 different bank groups: conflict-free, and each row keeps its own 64 bytes (B = 2:
    only the 4 chunks of a row are permuted). This is CUTLASS's SmemLayoutAtom for
    32-element bf16 rows. The cp.async writes (8 threads per 128-byte phase: rows r, r + 1,
    chunks 0..3) also hit 8 distinct bank groups.
    sB[s]: BK x BN = 32 x 128 bf16, rows of 256 bytes: all 8 rows of an ldmatrix.trans read
    would sit in the same bank group; ``Swizzle<3,3,4>`` XORs offset bits 7..9 (= r % 8)
    into bits 3..5, again 8 distinct bank groups.
    ``row_swizzle`` picks the swizzle from the row length; the stage stride (BM * BK
    elements, a multiple of 2**10) lies above the swizzled bits, so one swizzle over the
    whole (STAGES, rows, cols) allocation is the same as one per stage.

Pipeline (written out, STAGES deep; one commit group per k-tile)
    prologue: issue k-tiles 0 .. STAGES-2 (cp.async, 16-byte vectors, masked at the edges:
    masked-out elements are zero-filled, so the K tail adds nothing).
    steady state, iteration kt (runtime loop, KT = cdiv(K, BK) trips):
        wait_async(STAGES - 2)  -> this thread's copies of tile kt have landed;
        barrier                 -> everyone's copies of tile kt are visible, and every warp
                                   has finished reading stage (kt - 1) % STAGES;
        issue tile kt + STAGES - 1 into stage (kt + STAGES - 1) % STAGES = (kt - 1) % STAGES
            (tiles past the end are fully masked: zero-fill, no global traffic, and the
            commit keeps one group per iteration so the wait count stays right);
        ldmatrix the A and B fragments of stage kt % STAGES (tiled.a, tiled.b; B with
            ldmatrix.trans since B is n-contiguous), and the 2 x 4 x 8 mma.sync.
    epilogue: wait_async(0); C stored straight from the accumulator fragments with 8-byte
    vectors (c0, c1 are adjacent columns: a quad writes one full 32-byte sector), masked
    at the M and N edges.

Invariants checked (tags: A -> (row=m, k=k), B -> (k=k, col=n))
    * operand pairing: every A value an mma consumes has the same k as the B value it is
      multiplied with -- ``ave.assert_conform(a, b, contract=(1, 0))`` before the mma, and
      the mma checks it again by itself. It catches a reader/writer swizzle mismatch, a
      wrong stage index, a wrong k offset.
    * stage separation: the stage refilled in iteration kt never overlaps the stage read in
      iteration kt (``ave.assert_disjoint`` for sA and sB).
    * (from the analysis itself) a stage read before a wait_async has retired its copies is
      an uninitialized read (AVE203), or -- when the stage still holds an older tile -- a
      pairing violation: a wrong wait count or prologue depth shows up here.
    The missing-barrier hazard (refilling a stage other warps still read) is a race between
    epochs, checked by the interpreter's race detection, not by a tag assertion.
"""

import ave_core.lang as ave


def row_swizzle(row_elems):
    """The CuTe swizzle for a row-major bf16 shared tile with rows of ``row_elems`` elements.

    Chunks of 8 elements (16 bytes) stay whole (M = 3); the chunk index is XORed with the
    row bits that select the 128-byte bank line, so that 8 consecutive rows read at the same
    chunk hit 8 different bank groups.
    """
    if row_elems == 32:
        sw = ave.swizzle(2, 3, 3)       # 64-byte rows: 2 rows per 128-byte line
    elif row_elems == 64:
        sw = ave.swizzle(3, 3, 3)       # 128-byte rows
    else:
        sw = ave.swizzle(3, 3, 4)       # 256-byte rows (128 elements)
    return sw


@ave.kernel(threads=128, configs=[
    dict(BM=128, BN=128, BK=32, WM=2, WN=2, STAGES=3),
    dict(BM=64, BN=128, BK=32, WM=2, WN=2, STAGES=4),
])
def gemm(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
         BM: ave.constexpr = 128, BN: ave.constexpr = 128, BK: ave.constexpr = 32,
         WM: ave.constexpr = 2, WN: ave.constexpr = 2, STAGES: ave.constexpr = 3):
    # Every element of A carries its (row, k), every element of B its (k, col).
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))   # C[m, n] = row m of A times col n of B

    M, K = A.shape
    N = B.shape[1]
    m0 = ave.program_id(0) * BM
    n0 = ave.program_id(1) * BN
    KT = (K + BK - 1) // BK

    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(WM, WN), tile=(BM, BN, BK))
    sA = ave.alloc((STAGES, BM, BK), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(BK), ave.row_major((STAGES, BM, BK))))
    sB = ave.alloc((STAGES, BK, BN), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(BN), ave.row_major((STAGES, BK, BN))))

    def issue(kt, s):
        # k-tile kt -> stage s, one commit group; out-of-range elements are zero-filled.
        k0 = kt * BK
        ave.copy_async(A[m0:m0 + BM, k0:k0 + BK], sA[s], vector_bytes=16,
                       mask=lambda m, k: (m < M) & (k < K))
        ave.copy_async(B[k0:k0 + BK, n0:n0 + BN], sB[s], vector_bytes=16,
                       mask=lambda k, n: (k < K) & (n < M))  # BUG: bound copied from A
        ave.commit_async()

    # Prologue: STAGES - 1 tiles in flight.
    for kt in ave.static_range(STAGES - 1):
        issue(kt, kt)

    acc = ave.zeros((BM, BN), ave.f32, tiled.c)
    for kt in ave.range(0, KT):
        s = kt % STAGES
        ave.wait_async(STAGES - 2)          # tile kt has landed (for this thread) ...
        ave.barrier()                       # ... for all threads; stage (kt-1) % STAGES is free
        s_fill = (kt + STAGES - 1) % STAGES
        ave.assert_disjoint(sA[s_fill], sA[s])
        ave.assert_disjoint(sB[s_fill], sB[s])
        issue(kt + STAGES - 1, s_fill)      # overlaps the math below
        a = ave.ldmatrix(sA[s], tiled.a)
        b = ave.ldmatrix(sB[s], tiled.b)
        ave.assert_conform(a, b, contract=(1, 0))
        acc = ave.mma(a, b, acc, tiled)

    ave.wait_async(0)
    ave.store(C[m0:m0 + BM, n0:n0 + BN], acc, vector_bytes=8,
              mask=lambda m, n: (m < M) & (n < N))
