import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((32, 32), ave.f32, space="shared")
    u = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[0:16, 0:32], s[0:16, 0:32], vector_bytes=16)
    ave.copy(X[32:64, 0:32], u, vector_bytes=16)
    ave.copy(ave.transpose(u), Y[0:32, 0:32], vector_bytes=4)
    ave.copy(X[16:32, 0:32], s[16:32, 0:32], vector_bytes=16)
    ave.copy(ave.transpose(s), Z[0:32, 0:32], vector_bytes=4)
