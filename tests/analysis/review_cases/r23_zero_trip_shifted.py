import ave_core.lang as ave
# (a page break goes on the line above)


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    n = Z.shape[0] // 32
    s = ave.alloc((32, 32), ave.f32, space="shared")
    t = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.copy(X[32:64, 0:32], t, vector_bytes=16)
    if True:
        n = n + 0
    for i in ave.range(0, n):
        ave.copy(ave.transpose(t), Z[i * 32:i * 32 + 32, 0:32], vector_bytes=4)
    ave.copy(ave.transpose(s), Y[0:32, 0:32], vector_bytes=4)
