# W = C + A B (acc loaded from C), any K: full k-tiles under `if k0 + 32 <= K` (the
# documented runtime-branch guard); a partial last tile is skipped (K % 32 != 0: a real miss)
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      W: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    M, K = A.shape
    ave.assume(B.shape[0] == K)
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    m0 = ave.program_id(0) * 64
    ks = 0
    acc = ave.load(C[m0:m0 + 64, 0:64], tiled.c, mask=lambda m, n: m < M)
    for kt in ave.range(0, (K + 31) // 32):
        k0 = ks + kt * 32
        if k0 + 32 <= K:
            acc = ave.mma(ave.load(A[m0:m0 + 64, k0:k0 + 32], tiled.a, mask=lambda m, k: m < M),
                          ave.load(B[k0:k0 + 32, 0:64], tiled.b), acc, tiled)
    ave.store(W[m0:m0 + 64, 0:64], acc, mask=lambda m, n: m < M)
