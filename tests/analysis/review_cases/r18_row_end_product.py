# the row end written (pid + 1) * N
import ave_core.lang as ave

@ave.kernel(threads=128)
def rowcopy(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], N: ave.i32):
    pid = ave.program_id(0)
    row0 = pid * N
    s = ave.alloc((128,), ave.f32, space="shared")
    ave.copy(X[row0:row0 + 128], s, vector_bytes=4, mask=lambda i: i < (pid + 1) * N)
    ave.barrier()
    ave.copy(s, Y[row0:row0 + 128], vector_bytes=4, mask=lambda i: i < (pid + 1) * N)
