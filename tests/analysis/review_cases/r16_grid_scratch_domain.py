import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], n: ave.i32):
    # block b reads X[32b : 32b + 32] and a 32-wide window at stride 16,
    # X[16b : 16b + 32] (inside the block's own 32-row tile); then a circular read
    # X[n % M] -- in bounds for every n and every M >= 1
    M = X.shape[0]
    pid = ave.program_id(0)
    s = ave.alloc((64,), ave.f32, space="shared")
    ave.copy(X[pid * 32:pid * 32 + 32], s[0:32], vector_bytes=4)
    ave.copy(X[pid * 16:pid * 16 + 32], s[32:64], vector_bytes=4)
    w = n % M
    ave.copy(X[w:w + 1], s[0:1], vector_bytes=4)
    ave.barrier()
    ave.copy(s[0:32], Y[pid * 32:pid * 32 + 32], vector_bytes=4)
