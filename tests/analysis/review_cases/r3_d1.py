import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    s = ave.alloc((32, 32), ave.f32)
    ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    ave.commit_async()
    if ave.warp_id() == 0:
        ave.commit_async()
    if K > 64:
        ave.wait_async(1)
    else:
        ave.wait_async(1)
    ave.wait_async(0)
    ave.barrier()
    if ave.warp_id() == 0:
        ave.copy_async(X[0:4, 0:32], s[0:4, 0:32], vector_bytes=16, threads=ave.layout(32, 1))
        ave.commit_async()
    ave.barrier()
    ave.copy(s, Z[0:32, 0:32], vector_bytes=16)
    ave.wait_async(0)
