import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 2], flag: ave.i32):
    # each block reads a 32-wide window at stride 16 (X[f*16 : f*16 + 32]) -- alone
    # reported (a window wider than its stride); an access in a branch not taken
    # (`flag > 0`) at stride 32 lends its contract and the window is "proved"
    pid = ave.program_id(0)
    s = ave.alloc((32,), ave.f32, space="shared")
    ave.copy(X[pid * 16:pid * 16 + 32], s, vector_bytes=4)
    ave.barrier()
    ave.copy(s, Y[pid, 0:32], vector_bytes=4)
    ave.barrier()
    if flag > 0:
        ave.copy(X[pid * 32:pid * 32 + 32], s, vector_bytes=4)
        ave.barrier()
        ave.copy(s, Y[pid, 0:32], vector_bytes=4)
