import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], n: ave.i32):
    X = ave.tag(X, lambda m, k: ave.label(row=m, k=k))
    s = ave.alloc((32, 32), ave.f32)
    if n < 10:
        ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    elif n < 20:
        ave.copy_async(X[32:64, 0:32], s, vector_bytes=16)
    else:
        ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    ave.commit_async()
    ave.wait_async(0)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
