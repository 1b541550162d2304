import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    N = X.shape[0]
    s = ave.alloc((32, 64), ave.f32)
    ave.copy_async(X[0:32, 0:64], s, vector_bytes=16)
    if ave.thread_id() < N:
        ave.commit_async()
    ave.commit_async()
    ave.wait_async(1)
    ave.barrier()
    ave.copy(s, Z[0:32, 0:64], vector_bytes=16)
