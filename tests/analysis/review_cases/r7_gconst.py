import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], n: ave.i32):
    X = ave.tag(X, lambda m, c: ave.label(row=m, col=c))
    Out = ave.tag(Out, lambda m, c: ave.label(row=m, col=c))
    M, N = X.shape
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    s = ave.alloc((16, 32), ave.f32)
    idx = ave.full((16,), 3, ave.i32, ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,)))
    g = ave.gather(X, idx, 0)
    x = ave.load(g[0:16, 0:32], L)
    ave.store(Out[0:16, 0:32], x)
