
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
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(1, (K + 31) // 32 + 1):
        k0 = kt * 32
        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))
        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)
        ave.barrier()
        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)
        ave.barrier()
    ave.store(C[0:64, 0:64], acc, mask=lambda m, n: m < M)
