import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    N = X.shape[0]
    s = ave.alloc((32, 32), ave.f32)
    ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    ave.commit_async()
    if ave.thread_id() < N:
        ave.wait_async(0)
    else:
        ave.wait_async(0)
    ave.barrier()
    ave.copy(s, Z[0:32, 0:32], vector_bytes=16)
