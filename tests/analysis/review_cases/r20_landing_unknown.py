# An asynchronous copy under a runtime branch whose bytes are read unconditionally: AVE203
# with the budget, AVE205 when z3 cannot decide the branch -- it was clean with 5 ms.
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], N: ave.i32, P: ave.i32):
    ave.assume((X.shape[0] >= 128) & (Y.shape[0] >= 128) & (N >= 1) & (P >= 2))
    s = ave.alloc((128,), ave.f32, space="shared")
    if (N * N * N) % P > 0:
        ave.copy_async(X[0:128], s, vector_bytes=4)
    ave.commit_async()
    ave.wait_async(0)
    ave.barrier()
    ave.copy(s, Y[0:128], vector_bytes=4)
