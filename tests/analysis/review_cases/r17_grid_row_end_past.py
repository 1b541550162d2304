# As r17_grid_row_end, the mask one element past the row end: the last row reads X[rows * N]
import ave_core.lang as ave

@ave.kernel(threads=128)
def rowcopy(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], N: ave.i32):
    X = ave.tag(X, lambda i: ave.label(e=i))
    row0 = ave.program_id(0) * N
    s = ave.alloc((1024,), ave.f32, space="shared")
    ave.copy(X[row0:row0 + 1024], s, vector_bytes=4, mask=lambda i: i < row0 + N + 1)
    ave.barrier()
    ave.copy(s, Y[row0:row0 + 1024], vector_bytes=4, mask=lambda i: i < row0 + N + 1)
