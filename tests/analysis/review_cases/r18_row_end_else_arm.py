# A flat row per block (row0 = pid * N), grid = cdiv(M, N): the first copy handles the
# partial last row correctly ((i < row0 + N) & (i < M)). The else-arm (the partial last
# row) re-reads the row UNMASKED: out of bounds for the last block.
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], N: ave.i32):
    M = X.shape[0]
    row0 = ave.program_id(0) * N
    s = ave.alloc((128,), ave.f32, space="shared")
    ave.copy(X[row0:row0 + 128], s, vector_bytes=4, mask=lambda i: (i < row0 + N) & (i < M))
    ave.barrier()
    if row0 + N <= M:
        ave.copy(s, Y[row0:row0 + 128], vector_bytes=4, mask=lambda i: (i < row0 + N) & (i < M))
    else:
        ave.copy(X[row0:row0 + 128], s, vector_bytes=4)
        ave.barrier()
        ave.copy(s, Y[row0:row0 + 128], vector_bytes=4, mask=lambda i: (i < row0 + N) & (i < M))
