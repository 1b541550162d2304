import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1]):
    X = ave.tag(X, lambda t, c: ave.label(tok=t, col=c))
    Out = ave.tag(Out, lambda t, c: ave.label(tok=t, col=c))
    M, N = X.shape
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    idx0 = ave.load(Ids[0:16], IDX)
    x = ave.load(ave.gather(X, idx0, 0)[0:16, 0:32], L)
    ave.store(Ids[0:16], idx0 + 1)
    idx1 = ave.load(Ids[0:16], IDX)
    ave.store(ave.scatter(Out, idx1, 0)[0:16, 0:32], x)
