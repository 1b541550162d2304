# Shared bytes only a runtime loop writes, read after it: the loop's zero-trip variant is
# analysed even when z3 cannot decide that some size runs it zero times (AVE203).
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], N: ave.i32, P: ave.i32):
    ave.assume((X.shape[0] >= 128) & (Y.shape[0] >= 128) & (N >= 1) & (P >= 2))
    s = ave.alloc((128,), ave.f32, space="shared")
    for j in ave.range(0, (N * N * N) % P):
        ave.copy(X[0:128], s, vector_bytes=4)
    ave.barrier()
    ave.copy(s, Y[0:128], vector_bytes=4)
