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
    dict(BM=64, BN=64, BK=32, WM=2, WN=2, STAGES=3),
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
                       mask=lambda k, n: (k < K) & (n < N))
        ave.commit_async()

    def compute(s, acc):
        a = ave.ldmatrix(sA[s], tiled.a)
        b = ave.ldmatrix(sB[s], tiled.b)
        ave.assert_conform(a, b, contract=(1, 0))
        return ave.mma(a, b, acc, tiled)

    # Prologue: STAGES - 1 tiles in flight.
    for kt in ave.static_range(STAGES - 1):
        issue(kt, kt)

    acc = ave.zeros((BM, BN), ave.f32, tiled.c)
    for kt in ave.range(0, KT):
        s = kt % STAGES
        ave.wait_async(STAGES - 1)          # tile kt has landed (for this thread) ...
        ave.barrier()                       # ... for all threads; stage (kt-1) % STAGES is free
        s_fill = (kt + STAGES - 1) % STAGES
        ave.assert_disjoint(sA[s_fill], sA[s])
        ave.assert_disjoint(sB[s_fill], sB[s])
        issue(kt + STAGES - 1, s_fill)      # overlaps the math below
        acc = compute(s, acc)

    ave.wait_async(0)
    ave.store(C[m0:m0 + BM, n0:n0 + BN], acc, vector_bytes=8,
              mask=lambda m, n: (m < M) & (n < N))
