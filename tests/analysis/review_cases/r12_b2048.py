import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2]):
    E = Ids.shape[0]
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    sI = ave.alloc((2048,), ave.i32)
    ave.copy(Ids[0:2048], sI, vector_bytes=4, mask=lambda p: p < E, other=-1)   # padded with -1
    ave.barrier()
    if E >= 16:                                   # rows 0..15 are table entries
        x = ave.load(ave.gather(X, sI[0:16], 0)[0:16, 0:32], L)
        ave.store(Out[0:16, 0:32], x)
