import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      D: ave.Tensor[ave.f32, 2], E: ave.Tensor[ave.f32, 2]):
    E = ave.tag(E, lambda m, n: ave.label(row=m, col=n))
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    sA = ave.alloc((64, 32), ave.bf16, space="shared")
    sB = ave.alloc((32, 64), ave.bf16, space="shared")
    sC = ave.alloc((64, 64), ave.f32, space="shared")
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in ave.range(0, (K + 31) // 32):
        k0 = (kt + 1) * 32          # BUG: k-tile 0 never read
        ave.copy(A[0:64, k0:k0 + 32], sA, mask=lambda m, k: (m < M) & (k < K))
        ave.copy(B[k0:k0 + 32, 0:64], sB, mask=lambda k, n: k < K)
        ave.barrier()
        acc = ave.mma(ave.load(sA, tiled.a), ave.load(sB, tiled.b), acc, tiled)
        ave.barrier()
    # a second result D = acc + (something staged in shared memory), only when K > 64
    ave.copy(E[0:64, 0:64], sC)
    ave.barrier()
    other = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b),
                    ave.load(sC, tiled.c), tiled)
    t = acc
    if K > 64:
        t = acc + other
    ave.store(D[0:64, 0:64], t, mask=lambda m, n: m < M)
