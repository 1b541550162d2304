import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    tv = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    x = ave.load(X[0:16, 0:32], tv)
    m = ave.max(x, axis=1)
    mb = ave.zeros((16, 32), ave.f32, tv) + m[:, None]
    s = ave.alloc((16, 32), ave.f32, layout=ave.layout((16, 32), (1, 0)))
    ave.store(s, mb)
    ave.barrier()
    ave.store(Y[0:16, 0:32], ave.load(s, tv))
