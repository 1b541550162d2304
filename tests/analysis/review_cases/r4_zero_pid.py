import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((32, 32), ave.f32)
    for i in ave.range(ave.program_id(0), 4):
        ave.copy(X[0:32, 0:32], s, vector_bytes=16)
    ave.barrier()
    ave.copy(s, Y[0:32, 0:32], vector_bytes=16)
