import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2],
      n: ave.i32):
    X = ave.tag(X, lambda t, c: ave.label(tok=t, col=c))
    Out = ave.tag(Out, lambda t, c: ave.label(tok=t, col=c))
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    sI = ave.alloc((16,), ave.i32)
    if n > 0:                                   # the same for every thread
        ave.copy(Ids[0:16], sI, vector_bytes=4)
    else:
        ave.copy(Ids[16:32], sI, vector_bytes=4)
    ave.barrier()
    x = ave.load(ave.gather(X, sI, 0)[0:16, 0:32], L)
    ave.store(ave.scatter(Out, sI, 0)[0:16, 0:32], x)    # Out[sI[r]] = X[sI[r]]
