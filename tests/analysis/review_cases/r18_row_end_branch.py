# the r17 row copy under a uniform runtime branch (flag > 0): in bounds for whole-row launches
import ave_core.lang as ave

@ave.kernel(threads=128)
def rowcopy(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], N: ave.i32, flag: ave.i32):
    row0 = ave.program_id(0) * N
    s = ave.alloc((128,), ave.f32, space="shared")
    if flag > 0:
        ave.copy(X[row0:row0 + 128], s, vector_bytes=4, mask=lambda i: i < row0 + N)
        ave.barrier()
        ave.copy(s, Y[row0:row0 + 128], vector_bytes=4, mask=lambda i: i < row0 + N)
