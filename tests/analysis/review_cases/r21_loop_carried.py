import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    n = Z.shape[0] // 32
    ave.assume(n >= 1)
    ave.assume(X.shape[0] >= 32 * n + 64)
    s = ave.alloc((32, 32), ave.f32, space="shared")
    t = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[0:32, 0:32], t, vector_bytes=16)
    ave.copy(X[32:64, 0:32], s, vector_bytes=16)
    ave.copy(ave.transpose(t), Y[0:32, 0:32], vector_bytes=4)
    for i in ave.range(0, n):
        ave.copy(ave.transpose(s), Z[i * 32:i * 32 + 32, 0:32], vector_bytes=4)
        ave.copy(X[i * 32 + 64:i * 32 + 96, 0:32], s, vector_bytes=16)
