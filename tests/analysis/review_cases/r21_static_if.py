import ave_core.lang as ave


@ave.kernel(threads=128, configs=[dict(F=0), dict(F=1)])
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2], Z: ave.Tensor[ave.f32, 2],
      F: ave.constexpr = 0):
    s = ave.alloc((32, 32), ave.f32, space="shared")
    t = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.copy(X[32:64, 0:32], t, vector_bytes=16)
    if F == 0:
        ave.copy(ave.transpose(s), Y[0:32, 0:32], vector_bytes=4)
    ave.copy(ave.transpose(t), Z[0:32, 0:32], vector_bytes=4)
