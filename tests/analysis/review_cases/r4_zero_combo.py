import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    KT = (K + 31) // 32
    s = ave.alloc((32, 32), ave.f32)
    for i in ave.range(1, KT):
        ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.barrier()
    for j in ave.range(0, KT - 1):
        ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
