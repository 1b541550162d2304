import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], n: ave.i32):
    M = X.shape[0]
    L = ave.tv_layout(ave.layout(128, 1), ave.layout(1, 1), (128,))
    o = n >> 1
    x = ave.load(X[o:o + 128], L, mask=lambda r: r < M)
    ave.store(Y[0:128], x)
