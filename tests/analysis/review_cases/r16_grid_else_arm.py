import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1]):
    # full tiles unmasked, the last partial tile masked; the else arm also reads the
    # previous tile (X[m0 - 16:m0]) unmasked -- below 0 for block 0 when M < 16
    M = X.shape[0]
    m0 = ave.program_id(0) * 16
    s = ave.alloc((16,), ave.f32, space="shared")
    if m0 + 16 <= M:
        ave.copy(X[m0:m0 + 16], s, vector_bytes=4)
    else:
        ave.copy(X[m0:m0 + 16], s, vector_bytes=4, mask=lambda m: m < M)
        ave.barrier()
        ave.copy(X[m0 - 16:m0], s, vector_bytes=4)
    ave.barrier()
    ave.copy(s, Y[m0:m0 + 16], vector_bytes=4, mask=lambda m: m < Y.shape[0])
