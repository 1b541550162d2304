# C += A B, accumulated through global memory one k-tile at a time (load C, one MMA,
# store C): correct -- every k summed once into C.
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    M, K = A.shape
    ave.assume(B.shape[0] == K)
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(2, 2), tile=(64, 64, 32))
    for kt in ave.range(0, K // 32):
        k0 = kt * 32
        acc = ave.load(C[0:64, 0:64], tiled.c)
        acc = ave.mma(ave.load(A[0:64, k0:k0 + 32], tiled.a),
                      ave.load(B[k0:k0 + 32, 0:64], tiled.b), acc, tiled)
        ave.store(C[0:64, 0:64], acc)
