import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1]):
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    ids = ave.load(Ids[0:16], IDX)
    ave.store(Ids[0:16], ids + 1)                  # the kernel shifts its table by one
    nxt = ave.load(Ids[0:16], IDX)                 # = Ids[r] + 1: X.shape[0] for the last row
    x = ave.load(ave.gather(X, nxt, 0)[0:16, 0:32], L)
    ave.store(Out[0:16, 0:32], x)
