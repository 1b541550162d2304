import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    N = Y.shape[1]
    KT = (K + 31) // 32
    ave.assume(N <= KT * 32)
    s = ave.alloc((32, 64), ave.f32)
    ave.copy(X[0:32, 0:32], s[0:32, 0:32], vector_bytes=16)
    ave.barrier()
    for i in ave.range(0, KT):
        ave.copy(s[0:32, 0:32], Y[0:32, 0:32], vector_bytes=16, mask=lambda m, n: n < N)
    if N > 32:
        ave.copy(s[0:32, 32:64], Y[0:32, 0:32], vector_bytes=16)
