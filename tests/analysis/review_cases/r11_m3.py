import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], d: ave.i32):
    M = X.shape[0]
    ave.assume(d <= -64)
    L = ave.tv_layout(ave.layout(32, 1), ave.layout(1, 1), (32,))
    o = (M % 64) // d             # floor: -1 for every M % 64 > 0 (Euclid: 0)
    x = ave.load(X[o:o + 32], L, mask=lambda r: r < M)
    ave.store(Y[0:32], x)
