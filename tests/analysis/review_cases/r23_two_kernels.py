import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((32, 32), ave.f32, space="shared")
    t = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.copy(X[32:64, 0:32], t, vector_bytes=16)
    ave.copy(ave.transpose(s), Y[0:32, 0:32], vector_bytes=4)
    ave.copy(ave.transpose(t), Z[0:32, 0:32], vector_bytes=4)


@ave.kernel(threads=128)
def k2(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    if ave.warp_id() == 0:
        ave.copy(ave.transpose(s), Y[0:32, 0:32], vector_bytes=4)
