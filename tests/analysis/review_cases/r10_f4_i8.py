import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], n: ave.i8):
    M = X.shape[0]
    ave.assume(n >= 0)
    L = ave.tv_layout(ave.layout(32, 1), ave.layout(1, 1), (32,))
    o = ave.where(n + 100 < 0, -32, 0)          # i8: 100 + 100 wraps to -56
    x = ave.load(X[o:o + 32], L, mask=lambda r: r < M)
    ave.store(Y[0:32], x)
