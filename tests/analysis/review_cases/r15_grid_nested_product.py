import ave_core.lang as ave

@ave.kernel(threads=32)
def rowsum(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 2]):
    # X: a (B, S, D) tensor stored flat, Y: (S, D); block b adds batch b's S*D elements
    # into Y -- the same flat tail bug as r14_grid_flat_tail with the row length S * D
    S, D = Y.shape
    base = ave.program_id(0) * S * D
    s = ave.alloc((32,), ave.f32, space="shared")
    for t in ave.range(0, (S * D + 31) // 32):
        ave.copy(X[base + t * 32:base + t * 32 + 32], s, vector_bytes=4)
        ave.barrier()
