# C zeroed, k-tile 0 summed KT times through C (k0 = kt * 0), the last store under
# `if M > 8:`: "repeats k=0" -- the chain stored in the arm was undone at the join, unchecked.
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    sA = ave.alloc((64, 32), ave.bf16, space="shared")
    sB = ave.alloc((32, 64), ave.bf16, space="shared")
    ave.store(C[0:64, 0:64], ave.zeros((64, 64), ave.f32, tiled.c), mask=lambda m, n: m < M)
    ave.barrier()
    part = ave.load(C[0:64, 0:64], tiled.c, mask=lambda m, n: m < M)
    for kt in ave.range(0, (K + 31) // 32):
        k0 = kt * 0
        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))
        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)
        ave.barrier()
        part = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), part, tiled)
        ave.barrier()
    if M > 8:
        ave.store(C[0:64, 0:64], part, mask=lambda m, n: m < M)
