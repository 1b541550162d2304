import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Out: ave.Tensor[ave.f32, 2], Ids: ave.Tensor[ave.i32, 1]):
    L = ave.tv_layout(ave.layout((8, 16), (64, 1)), ave.layout(4, 16), (16, 32))
    IDX = ave.tv_layout(ave.layout(128, 0), ave.layout(16, 1), (16,))
    pid = ave.program_id(0)
    ids = ave.load(Ids[pid * 16:pid * 16 + 16], IDX)
    own = ave.full((16,), pid, ave.i32, IDX)            # alone: trusted to the grid
    x = ave.load(ave.gather(X, ave.maximum(ids, own), 0)[0:16, 0:32], L)
    ave.store(Out[pid * 16:pid * 16 + 16, 0:32], x)
