import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    K = A.shape[1]
    KT = (K + 15) // 16
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    off = 0
    for kt in ave.range(0, KT - 1):
        a = ave.load(A[0:64, off:off + 16], tiled.a, mask=lambda m, k: k < K)
        b = ave.load(B[off:off + 16, 0:64], tiled.b, mask=lambda k, n: k < K)
        acc = ave.mma(a, b, acc, tiled)
        off = off + 16
    kl = (KT - 1) * 16
    a = ave.load(A[0:64, off:off + 16], tiled.a, mask=lambda m, k: k < K)
    b = ave.load(B[kl:kl + 16, 0:64], tiled.b, mask=lambda k, n: k < K)
    acc = ave.mma(a, b, acc, tiled)
    ave.store(C[0:64, 0:64], acc)
