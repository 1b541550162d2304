import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1],
      n: ave.i32):
    X = ave.tag(X, lambda t, c: ave.label(tok=t, col=c))
    Out = ave.tag(Out, lambda t, c: ave.label(tok=t, col=c))
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    sI = ave.alloc((16,), ave.i32)
    ave.copy(Ids[0:16], sI, vector_bytes=4, mask=lambda p: p < n)   # 0 past the first n
    ave.barrier()
    i0 = ave.load(Ids[0:16], IDX, mask=lambda p: p < n)             # the same values
    x = ave.load(ave.gather(X, i0, 0)[0:16, 0:32], L)
    ave.store(ave.scatter(Out, sI, 0)[0:16, 0:32], x)
