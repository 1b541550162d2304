import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2]):
    X = ave.tag(X, lambda m, n: ave.label(row=m, col=n))
    Out = ave.tag(Out, lambda m, n: ave.label(row=m, col=n))
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    x0 = ave.load(X[0:16, 0:32], L)
    x1 = ave.load(X[16:32, 0:32], L)
    ave.store(Out[0:16, 0:32], x1 + x0)
