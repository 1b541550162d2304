import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    K = X.shape[1]
    KT = (K + 31) // 32
    s = ave.alloc((4, 32, 32), ave.f32)
    for b in ave.static_range(4):
        ave.copy(X[0:32, 0:32], s[b], vector_bytes=16)
    ave.barrier()
    for i in ave.range(KT - 1, -1, -1):
        ave.copy(s[i % 4], Y[0:32, 0:32], vector_bytes=16)
    ave.barrier()
    for j in ave.range(0, KT):
        ave.copy(s[(j + 3) % 4], Y[0:32, 0:32], vector_bytes=4)
        ave.copy(X[0:32, 0:32], s[j % 4], vector_bytes=16)
