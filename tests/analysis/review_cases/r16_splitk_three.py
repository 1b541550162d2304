import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      D: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    D = ave.tag(D, lambda m, n: ave.label(row=m, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    # D = C + A B, K = 96: k-tile t into accumulator t (acc from C): correct
    acc = ave.load(C[0:64, 0:64], tiled.c)
    acc = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b), acc, tiled)
    acc2 = ave.zeros((64, 64), ave.f32, tiled.c)
    acc2 = ave.mma(ave.load(A[0:64, 32:64], tiled.a), ave.load(B[32:64, 0:64], tiled.b), acc2, tiled)
    acc3 = ave.zeros((64, 64), ave.f32, tiled.c)
    acc3 = ave.mma(ave.load(A[0:64, 64:96], tiled.a), ave.load(B[64:96, 0:64], tiled.b), acc3, tiled)
    ave.store(D[0:64, 0:64], (acc + acc2) + acc3)
