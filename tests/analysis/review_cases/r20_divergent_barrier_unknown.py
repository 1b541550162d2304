# A barrier under a per-thread condition z3 decides only with time (nonlinear in the sizes):
# AVE209 with the budget, AVE205 (unknown) without -- it was clean with a budget of 20 ms.
import ave_core.lang as ave

@ave.kernel(threads=128)
def transpose(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    m0 = ave.program_id(0) * 32
    n0 = ave.program_id(1) * 32
    s = ave.alloc((32, 32), ave.f32, space="shared")
    ave.copy(X[m0:m0 + 32, n0:n0 + 32], s, vector_bytes=16)
    ave.barrier()
    if (ave.thread_id() * X.shape[1]) % X.shape[0] < 64:
        ave.barrier()
    ave.barrier()
    ave.copy(ave.transpose(s), Y[n0:n0 + 32, m0:m0 + 32], vector_bytes=4)
