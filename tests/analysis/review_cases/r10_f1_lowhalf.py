import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2]):
    T = X.shape[0]
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    sI = ave.alloc((16,), ave.i32)
    ave.copy(Ids[0:16], sI, vector_bytes=4)
    ave.barrier()
    # the low i16 half of every i32 entry (little-endian): half h of entry r at 2r + h
    halves = ave.view(sI, (2, 16), ave.i16, layout=ave.layout((2, 16), (1, 2)))
    lo = ave.load(halves[0], IDX)
    idx = ave.cast(lo, ave.i32)
    x = ave.load(ave.gather(X, idx, 0)[0:16, 0:32], L, mask=lambda t, c: t < T)
    ave.store(Out[0:16, 0:32], x)
