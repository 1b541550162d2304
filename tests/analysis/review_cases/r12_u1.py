import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2],
      n: ave.i32):
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    sI = ave.alloc((16,), ave.i32)
    ave.store(sI, ave.full((16,), -1, ave.i32, IDX))     # padding: no row
    ave.barrier()
    if n > 0:                                            # the same for every thread
        ave.copy(Ids[0:16], sI, vector_bytes=4)
    ave.barrier()
    if n > 0:
        x = ave.load(ave.gather(X, sI, 0)[0:16, 0:32], L)    # only the table's rows
        ave.store(Out[0:16, 0:32], x)
