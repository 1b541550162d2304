import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], Z: ave.Tensor[ave.f32, 1]):
    # X: (M, N) flat; block b reads X[b * N : b * N + 32] once per k-tile of Z;
    # precondition KT * N >= 32: for KT = 1 each row holds the tile, for KT = 2 (N = 16)
    # the last block's tile runs past X
    N = Y.shape[0]
    KT = (Z.shape[0] + 31) // 32
    ave.assume(KT * N >= 32)
    row0 = ave.program_id(0) * N
    s = ave.alloc((32,), ave.f32, space="shared")
    for t in ave.range(0, KT):
        ave.copy(X[row0:row0 + 32], s, vector_bytes=4)
        ave.barrier()
