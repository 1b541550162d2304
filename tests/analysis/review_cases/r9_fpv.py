import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1]):
    X = ave.tag(X, lambda t, c: ave.label(tok=t, col=c))
    Out = ave.tag(Out, lambda t, c: ave.label(tok=t, col=c))
    T = X.shape[0]
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    IDX2 = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    i0 = ave.load(Ids[0:16], IDX)
    i1 = ave.where(ave.coord((16,), 0, IDX) >= 0, i0, 0)
    x = ave.load(ave.gather(X, i0, 0)[0:16, 0:32], L, mask=lambda t, c: t < T)
    ave.store(ave.scatter(Out, i1, 0)[0:16, 0:32], x)
