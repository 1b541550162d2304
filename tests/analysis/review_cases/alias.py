import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], NT: ave.i32):
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 16))
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for kt in range(2):
        kb = ave.minimum(kt, NT - 1) * 16
        a = ave.load(A[0:64, kt * 16:kt * 16 + 16], tiled.a)
        b = ave.load(B[kb:kb + 16, 0:64], tiled.b)
        acc = ave.mma(a, b, acc, tiled)
    ave.store(C[0:64, 0:64], acc)
    for kt in ave.range(0, NT):
        ave.copy(X[kt * 8:kt * 8 + 8, 0:32], Y[kt * 8:kt * 8 + 8, 0:32], vector_bytes=16,
                 mask=lambda r, c: r < Y.shape[0])
