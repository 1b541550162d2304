import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    # correct: k-tile 0 summed, staged through shared memory, reloaded (times an untagged
    # all-ones fragment), then k-tile 1 added: C = A B with K = 64
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    sC = ave.alloc((64, 64), ave.f32, space="shared")
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b), acc, tiled)
    ave.store(sC, acc)
    ave.barrier()
    ones = ave.full((64, 64), 1.0, ave.f32, tiled.c)
    acc2 = ave.load(sC, tiled.c) * ones
    acc2 = ave.mma(ave.load(A[0:64, 32:64], tiled.a), ave.load(B[32:64, 0:64], tiled.b), acc2, tiled)
    ave.store(C[0:64, 0:64], acc2)
