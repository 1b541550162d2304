import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      D: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b), acc, tiled)
    acc = ave.mma(ave.load(A[0:64, 32:64], tiled.a), ave.load(B[32:64, 0:64], tiled.b), acc, tiled)
    if ave.warp_id() >= 2:
        # BUG: warps 2, 3 add k-tile 0 a second time
        acc = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b), acc, tiled)
    if ave.warp_id() < 2:
        ave.store(D[0:64, 0:64], acc)
    ave.store(C[0:64, 0:64], acc)
