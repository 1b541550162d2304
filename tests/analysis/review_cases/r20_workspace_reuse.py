# Correct: one workspace W reused for two output tiles -- zeroed, accumulated through, loaded
# into C, zeroed again. Zeros over a chain whose load was checked at its use are a start
# (it was AVE205).
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      W: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    sA = ave.alloc((64, 32), ave.bf16, space="shared")
    sB = ave.alloc((32, 64), ave.bf16, space="shared")
    for nt in ave.static_range(2):
        n0 = nt * 64
        ave.store(W[0:64, 0:64], ave.zeros((64, 64), ave.f32, tiled.c))
        ave.barrier()
        for kt in ave.range(0, (K + 31) // 32):
            k0 = kt * 32
            ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))
            ave.copy(B[k0:k0 + 32, n0:n0 + 64], sB, mask=lambda k, n: k < K)
            ave.barrier()
            part = ave.load(W[0:64, 0:64], tiled.c)
            part = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), part, tiled)
            ave.store(W[0:64, 0:64], part)
            ave.barrier()
        ave.store(C[0:64, n0:n0 + 64], ave.load(W[0:64, 0:64], tiled.c), mask=lambda m, n: m < M)
        ave.barrier()
