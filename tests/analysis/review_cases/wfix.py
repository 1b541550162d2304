import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((2, 32, 32), ave.f32)

    def step():
        ave.copy_async(X[32:64, 0:32], s[1], vector_bytes=16)
        ave.commit_async()
        ave.copy(s[0], Y[0:32, 0:32], vector_bytes=16)

    ave.copy_async(X[0:32, 0:32], s[0], vector_bytes=16)
    ave.commit_async()
    step()
    ave.wait_async(0)
    ave.barrier()
    ave.copy(s[1], Y[32:64, 0:32], vector_bytes=16)
