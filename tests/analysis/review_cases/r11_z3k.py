import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], Z: ave.Tensor[ave.f32, 1], d: ave.i32):
    M = X.shape[0]
    N = Z.shape[0]
    L = ave.tv_layout(ave.layout(32, 1), ave.layout(1, 1), (32,))
    if d > 0:                                    # only divides by a positive d
        q = N // d
        z = ave.load(Z[q:q + 32], L, mask=lambda r: r < N)
        ave.store(Y[32:64], z)
    o = ave.where(d == 0, -32, 0)                # d = 0 reads 32 rows before X
    x = ave.load(X[o:o + 32], L, mask=lambda r: r < M)
    ave.store(Y[0:32], x)
