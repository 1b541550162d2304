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
    # D = C + A B, K = 96: C staged through shared memory (an accumulator read from shared
    # memory is not followed), k-tile 0 added to it, k-tile 1 into a second accumulator,
    # the two summed, then k-tile 2 added to the sum by one more MMA: correct
    sC = ave.alloc((64, 64), ave.f32, space="shared")
    ave.copy(C[0:64, 0:64], sC)
    ave.barrier()
    acc = ave.load(sC, tiled.c)
    acc = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b), acc, tiled)
    acc2 = ave.zeros((64, 64), ave.f32, tiled.c)
    acc2 = ave.mma(ave.load(A[0:64, 32:64], tiled.a), ave.load(B[32:64, 0:64], tiled.b), acc2, tiled)
    s = acc + acc2
    s = ave.mma(ave.load(A[0:64, 64:96], tiled.a), ave.load(B[64:96, 0:64], tiled.b), s, tiled)
    ave.store(D[0:64, 0:64], s)
