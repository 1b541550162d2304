# bias + even + odd k-tile accumulators, the bias masked with ave.where: each k once
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2],
      D: ave.Tensor[ave.f32, 2], flag: ave.i32):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    D = ave.tag(D, lambda m, n: ave.label(row=m, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    ev = ave.zeros((64, 64), ave.f32, tiled.c)
    od = ave.zeros((64, 64), ave.f32, tiled.c)
    ev = ave.mma(ave.load(A[0:64, 0:32], tiled.a), ave.load(B[0:32, 0:64], tiled.b), ev, tiled)
    od = ave.mma(ave.load(A[0:64, 32:64], tiled.a), ave.load(B[32:64, 0:64], tiled.b), od, tiled)
    c = ave.load(C[0:64, 0:64], tiled.c)
    z = ave.zeros((64, 64), ave.f32, tiled.c)
    c = ave.where(c > 0.0, c, z)
    ave.store(D[0:64, 0:64], c + ev + od)
