import ave_core.lang as ave


@ave.kernel(threads=128, configs=[dict(BM=64, BN=64, BK=32, STAGES=3)])
def k2(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], B2: ave.Tensor[ave.bf16, 2],
       C: ave.Tensor[ave.f32, 2], C2: ave.Tensor[ave.f32, 2], C3: ave.Tensor[ave.f32, 2], C4: ave.Tensor[ave.f32, 2],
       BM: ave.constexpr = 64, BN: ave.constexpr = 64, BK: ave.constexpr = 32,
       STAGES: ave.constexpr = 3):
    A = ave.tag(A, lambda m, k: ave.label(row=m, k=k))
    B = ave.tag(B, lambda k, n: ave.label(k=k, col=n))
    B2 = ave.tag(B2, lambda k, n: ave.label(k=k, col=n))
    M, K = A.shape
    N = B.shape[1]
    m0 = ave.program_id(0) * BM
    n0 = ave.program_id(1) * BN
    KT = (K + BK - 1) // BK
    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=(2, 2), tile=(BM, BN, BK))

    def mainloop(Bt, Ct, mul):
        sA = ave.alloc((STAGES, BM, BK), ave.bf16, space="shared")
        sB = ave.alloc((STAGES, BK, BN), ave.bf16, space="shared")

        def issue(kt, s):
            k0 = kt * BK
            ave.copy_async(A[m0:m0 + BM, k0:k0 + BK], sA[s], vector_bytes=16,
                           mask=lambda m, k: (m < M) & (k < K))
            ave.copy_async(Bt[k0 * mul:k0 * mul + BK, n0:n0 + BN], sB[s], vector_bytes=16,
                           mask=lambda k, n: (k < K) & (n < N))

        for kt in ave.static_range(STAGES - 1):
            issue(kt, kt)
            ave.commit_async()
        acc = ave.zeros((BM, BN), ave.f32, tiled.c)
        for kt in ave.range(0, KT):
            s = kt % STAGES
            ave.wait_async(STAGES - 2)
            ave.barrier()
            if (kt + STAGES - 1) * BK < K:
                issue(kt + STAGES - 1, (kt + STAGES - 1) % STAGES)
            ave.commit_async()
            a = ave.ldmatrix(sA[s], tiled.a)
            b = ave.ldmatrix(sB[s], tiled.b)
            acc = ave.mma(a, b, acc, tiled)
        ave.wait_async(0)
        ave.store(Ct[m0:m0 + BM, n0:n0 + BN], acc, mask=lambda m, n: (m < M) & (n < N))

    mainloop(B, C, 1)
    mainloop(B2, C2, 1)
    mainloop(B, C3, 1)
    mainloop(B2, C4, 1)
