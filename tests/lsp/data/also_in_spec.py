import ave_core.lang as ave

@ave.kernel(threads=128, configs=[dict(BUG=0), dict(BUG=1), dict(BUG=2)])
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2], BUG: ave.constexpr = 0):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2), tile=(64, 64, 16))
    sA = ave.alloc((64, 16), ave.bf16)
    sB = ave.alloc((16, 64), ave.bf16)
    LA = ave.tv_layout(ave.layout((64, 2), (1, 0)), ave.layout(16, 64), (64, 16))
    LB = ave.tv_layout(ave.layout((64, 2), (1, 0)), ave.layout(16, 64), (16, 64))
    if ave.warp_id() < 2:
        ave.store(sA, ave.load(A[0:64, 0:16], LA))
    else:
        if BUG == 1:
            ave.store(sB, ave.load(B[16:32, 0:64], LB))
        else:
            ave.store(sB, ave.load(B[0:16, 0:64], LB))
    ave.barrier()
    a = ave.load(sA, tiled.a)
    if BUG == 2:
        b = ave.load(sA.T, tiled.b)  # wrong: reads sA (64x16 -> 16x64)
    else:
        b = ave.load(sB, tiled.b)
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    acc = ave.mma(a, b, acc, tiled)
    ave.store(C[0:64, 0:64], acc)
