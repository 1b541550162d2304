import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2]):
    X = ave.tag(X, lambda t, n: ave.label(tok=t, col=n))
    Out = ave.tag(Out, lambda t, n: ave.label(tok=t, col=n))
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    sI = ave.alloc((2048,), ave.i32)
    ave.copy(Ids[0:2048], sI, vector_bytes=16)     # the whole routing table, staged once
    ave.barrier()
    x = ave.load(ave.gather(X, sI[0:16], 0)[0:16, 0:32], L)
    ave.store(ave.scatter(Out, sI[0:16], 0)[0:16, 0:32], x)
