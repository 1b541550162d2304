import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    # off-by-one reversed tile: rows M - (pid + 1) * 16 - 1 .. M - pid * 16 - 2
    r0 = ave.program_id(0) * 16
    r1 = X.shape[0] - (ave.program_id(0) + 1) * 16 - 1
    s = ave.alloc((16, 32), ave.f32, space="shared")
    ave.copy(X[r1:r1 + 16, 0:32], s, vector_bytes=16)
    ave.barrier()
    ave.copy(s, Y[r0:r0 + 16, 0:32], vector_bytes=16)
