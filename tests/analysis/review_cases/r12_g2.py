import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1]):
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    ids = ave.load(Ids[0:16], IDX)
    idx = ave.where(ave.coord((16,), 0, IDX) < 8, ids, ids + 100000)   # rows 8.. : past X
    x = ave.load(ave.gather(X, idx, 0)[0:16, 0:32], L)
    ave.store(Out[0:16, 0:32], x)
