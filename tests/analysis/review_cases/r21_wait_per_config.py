import ave_core.lang as ave


@ave.kernel(threads=64, configs=[dict(A=True), dict(A=False)])
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], A: ave.constexpr = True):
    s = ave.alloc((2, 64), ave.f32, space="shared")
    ave.copy_async(X[0, 0:64], s[0], vector_bytes=16)
    ave.commit_async()
    ave.copy_async(X[1, 0:64], s[1], vector_bytes=16)
    ave.commit_async()
    if A:
        ave.wait_async(2)
    else:
        ave.wait_async(2)
    ave.barrier()
    ave.copy(s[0], Y[0, 0:64], vector_bytes=4)
    ave.wait_async(0)
