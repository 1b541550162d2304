import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    KT = (K + 31) // 32
    s = ave.alloc((2, 32, 32), ave.f32)
    ave.copy_async(X[0:32, 0:32], s[0], vector_bytes=16, mask=lambda m, k: k < K)
    ave.copy_async(X[0:32, 32:64], s[1], vector_bytes=16, mask=lambda m, k: k < K)
    ave.commit_async()
    for kt in ave.range(0, KT):
        ave.wait_async(0)
        ave.barrier()
        ave.copy(s[kt % 2], Y[0:32, kt * 32:kt * 32 + 32], vector_bytes=16, mask=lambda m, k: k < K)
        ave.barrier()
        if (kt + 3) * 32 < K:          # should be (kt + 2) * 32 < K
            ave.copy_async(X[0:32, (kt + 2) * 32:(kt + 3) * 32], s[kt % 2], vector_bytes=16,
                           mask=lambda m, k: k < K)
        ave.commit_async()
