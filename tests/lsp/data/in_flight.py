import ave_core.lang as ave


@ave.kernel(threads=64)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((2, 64), ave.f32, space="shared")
    ave.copy_async(X[0, 0:64], s[0], vector_bytes=16)
    ave.commit_async()
    ave.copy_async(X[1, 0:64], s[1], vector_bytes=16)
    ave.commit_async()
    ave.copy(s[0], Y[0, 0:64], vector_bytes=4)
    ave.wait_async(0)
    ave.barrier()
    ave.copy(s[1], Y[1, 0:64], vector_bytes=4)
