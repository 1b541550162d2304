import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1], Out: ave.Tensor[ave.f32, 2]):
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    sI = ave.alloc((16,), ave.i32)
    x = ave.load(ave.gather(X, sI, 0)[0:16, 0:32], L)
    ave.store(Out[0:16, 0:32], x)
