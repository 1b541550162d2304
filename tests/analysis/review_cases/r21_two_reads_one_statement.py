import ave_core.lang as ave


@ave.kernel(threads=64)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    L = ave.tv_layout(ave.layout(64, 1), ave.layout(1, 1), (64,))
    s = ave.alloc((3, 64), ave.f32, space="shared")
    ave.copy_async(X[0, 0:64], s[0], vector_bytes=16)
    ave.commit_async()
    ave.copy_async(X[1, 0:64], s[1], vector_bytes=16)
    ave.commit_async()
    ave.copy_async(X[2, 0:64], s[2], vector_bytes=16)
    ave.commit_async()
    ave.wait_async(3)
    ave.barrier()
    ave.store(Y[0, 0:64], ave.load(s[0], L) + ave.load(s[1], L))
    ave.wait_async(0)
