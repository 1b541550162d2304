"""Small kernels used by the interpreter tests (read as text by the front end)."""

GEMM = '''
import ave_core.lang as ave

@ave.kernel(threads=128)
def gemm(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
         BM: ave.constexpr = 64, BN: ave.constexpr = 64, BK: ave.constexpr = 32,
         STAGES: ave.constexpr = 2):
    M, K = A.shape
    N = B.shape[1]
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(BM, BN, BK))
    sA = ave.alloc((STAGES, BM, BK), ave.bf16,
                   layout=ave.swizzled(ave.swizzle(2, 3, 3), ave.row_major((STAGES, BM, BK))))
    sB = ave.alloc((STAGES, BK, BN), ave.bf16,
                   layout=ave.swizzled(ave.swizzle(3, 3, 3), ave.row_major((STAGES, BK, BN))))
    acc = ave.zeros((BM, BN), ave.f32, tiled.c)
    m0 = ave.program_id(0) * BM
    n0 = ave.program_id(1) * BN
    KT = ave.cdiv(K, BK) if False else (K + BK - 1) // BK

    def issue(kt):
        ave.copy_async(A[m0:m0 + BM, kt * BK:kt * BK + BK], sA[kt % STAGES], vector_bytes=16,
                       mask=lambda m, k: (m < M) & (k < K))
        ave.copy_async(B[kt * BK:kt * BK + BK, n0:n0 + BN], sB[kt % STAGES], vector_bytes=16,
                       mask=lambda k, n: (k < K) & (n < N))

    for kt in ave.static_range(STAGES - 1):
        issue(kt)
        ave.commit_async()
    for kt in ave.range(0, KT):
        ave.wait_async(STAGES - 2)
        ave.barrier()
        a = ave.ldmatrix(sA[kt % STAGES], tiled.a)
        b = ave.ldmatrix(sB[kt % STAGES], tiled.b)
        acc = ave.mma(a, b, acc, tiled)
        ave.barrier()
        if kt + STAGES - 1 < KT:
            issue(kt + STAGES - 1)
        ave.commit_async()
    ave.store(C[m0:m0 + BM, n0:n0 + BN], acc, mask=lambda m, n: (m < M) & (n < N))
'''
