import ave_core.lang as ave

@ave.kernel(threads=128)
def k(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    C = ave.tag(C, lambda m, n: ave.label(row=m, col=n))
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2),
                          tile=(64, 64, 32))
    sA = ave.alloc((64, 32), ave.bf16)
    sB = ave.alloc((32, 64), ave.bf16)
    ave.copy(A[0:64, 0:32], sA, vector_bytes=16)
    ave.barrier()
    a = ave.ldmatrix(sA, tiled.a)
    acc = ave.zeros((64, 64), ave.f32, tiled.c)
    for nt in ave.static_range(2):
        ave.copy(B[0:32, nt * 64:nt * 64 + 64], sB, vector_bytes=16)
        ave.barrier()
        b = ave.ldmatrix(sB, tiled.b)
        acc = ave.mma(a, b, acc * 0.5, tiled)
        ave.store(C[0:64, nt * 64:nt * 64 + 64], acc)
        ave.barrier()
