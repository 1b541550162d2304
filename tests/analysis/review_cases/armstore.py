import ave_core.lang as ave

@ave.kernel(threads=128)
def wb(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(32, 32, 32))
    a = ave.load(A[0:32, 0:32], tiled.a)
    b = ave.load(B[0:32, 0:32], tiled.b)
    acc = ave.zeros((32, 32), ave.f32, tiled.c)
    if ave.warp_id() < 2:
        acc = ave.mma(a, b, acc, tiled)
        ave.store(C[0:32, 0:32], acc)
    else:
        acc = ave.mma(a, b, acc, tiled)
        ave.store(C[0:32, 0:32], acc)
