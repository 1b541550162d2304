import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    tvT = ave.tv_layout(ave.layout((32, 4), (32, 8)), ave.layout(8, 1), (32, 32))
    s = ave.alloc((32, 32), ave.f32)
    ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.barrier()
    if ave.warp_id() == 0:
        ave.copy(X[0:8, 0:32], s[0:8, 0:32], vector_bytes=16, threads=ave.layout(32, 1))
    if ave.warp_id() == 1:
        y = ave.load(s, tvT)
        ave.store(Y[0:32, 0:32], y)
