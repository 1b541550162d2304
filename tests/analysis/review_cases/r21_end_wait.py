import ave_core.lang as ave


@ave.kernel(threads=64)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    KT = X.shape[0]
    s = ave.alloc((2, 64), ave.f32, space="shared")
    ave.copy_async(X[0, 0:64], s[0], vector_bytes=16)
    ave.commit_async()
    ave.copy_async(X[0, 0:64], s[1], vector_bytes=16)
    ave.commit_async()
    ave.wait_async(2)
    ave.barrier()
    for kt in ave.range(0, KT):
        ave.copy(s[kt % 2], Y[0, 0:64], vector_bytes=4)
        ave.barrier()
        ave.copy_async(X[0, 0:64], s[kt % 2], vector_bytes=16)
        ave.commit_async()
        ave.wait_async(2)
        ave.barrier()
    ave.wait_async(0)
