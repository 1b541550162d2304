import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    s = ave.alloc((32, 64), ave.f32)
    ave.copy(X[0:32, 0:64], s, vector_bytes=16)
    ave.barrier()
    if K > 64:
        ave.copy_async(X[0:32, 64:128], s, vector_bytes=16)
        ave.commit_async()
    else:
        ave.commit_async()
    ave.wait_async(1)
    ave.barrier()
    ave.copy(s, Z[0:32, 0:64], vector_bytes=16)
    ave.wait_async(0)
