# split-K on a 1-D grid: block pid computes output row-tile pid // 2 over k-half pid % 2,
# writing its partial sum to its own workspace slab W[(pid % 2) * M + m0 ...]; the two
# slabs add up to A B. Correct split-K (the grid linearised, as stream-K/persistent
# schedulers do).
import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], W: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    pid = ave.program_id(0)
    m0 = (pid // 2) * 64
    k0 = (pid % 2) * 64
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(ave.load(A[m0:m0 + 64, k0:k0 + 32], tiled.a),
                  ave.load(B[k0:k0 + 32, 0:64], tiled.b), acc, tiled)
    acc = ave.mma(ave.load(A[m0:m0 + 64, k0 + 32:k0 + 64], tiled.a),
                  ave.load(B[k0 + 32:k0 + 64, 0:64], tiled.b), acc, tiled)
    w0 = (pid % 2) * 128 + m0
    ave.store(W[w0:w0 + 64, 0:64], acc)
