import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    M = X.shape[0]
    K = X.shape[1]
    KT = (K + 31) // 32
    MT = (M + 31) // 32
    s = ave.alloc((2, 32, 32), ave.f32)
    for mt in ave.range(0, MT):
        m0 = mt * 32
        ave.barrier()
        ave.copy_async(X[m0:m0 + 32, 0:32], s[0], vector_bytes=16,
                       mask=lambda m, k: (k < K) & (m < M))
        ave.commit_async()
        for kt in ave.range(0, KT):
            ave.wait_async(0)
            ave.barrier()
            if kt + 1 < KT:
                ave.copy_async(X[m0:m0 + 32, (kt + 1) * 32:(kt + 2) * 32], s[(kt + 1) % 2],
                               vector_bytes=16, mask=lambda m, k: (k < K) & (m < M))
            ave.commit_async()
            ave.copy(s[kt % 2], Y[m0:m0 + 32, kt * 32:kt * 32 + 32], vector_bytes=16,
                     mask=lambda m, k: (k < K) & (m < M))
