"""BROKEN VARIANT of examples/moe.py (see examples/broken/manifest.toml).

The gather of X rows is masked with the routed-pair bound num_valid = T * TOPK instead of
the token bound T: the padding rows read X[T].

The correct kernel's description follows.

Fused MoE expert GEMM over routed tokens (vLLM's fused_moe kernel) for the NVIDIA H200.

Problem
    X: (T, K) bf16 hidden states (T tokens); W: (E, N, K) bf16 expert weights in
    nn.Linear layout (out_features x in_features, K contiguous: the B operand is read
    "column-major", which is what mma.sync's .col B wants); every token is routed to TOPK
    experts. The routing pass (vLLM's ``moe_align_block_size``) has produced:
    * sorted_token_ids (EM,) i32: routed pairs p = token * TOPK + slot, grouped by expert,
      each expert's bucket padded to a multiple of BM with the sentinel num_valid = T * TOPK;
    * expert_ids (EM / BM,) i32: the expert of each block of BM routed rows;
    * topk_weights (T * TOPK,) f32: the routing weight of pair p (flattened (T, TOPK)).
    Out: (T * TOPK, N) bf16, row p = X[p // TOPK] @ W[e]^T (times topk_weights[p] when
    MUL_ROUTED_WEIGHT); a separate reduction sums the TOPK rows of a token.
    The two configurations are the two calls of an MoE layer: the up/gate projection
    (X = hidden states, TOPK = 2 as Mixtral, no weight) and the down projection (X = the
    activated intermediate, one row per pair, so TOPK = 1, and the routing weight applied).
    Requires K % 8 == 0 and N % 8 == 0 (16-byte rows).

Tiling and thread organisation
    Program (pid_m, pid_n): BM routed rows (one expert: buckets are BM-aligned) x BN output
    columns; grid = (EM / BM, cdiv(N, BN)). Blocks past num_tokens_post_padded hold only
    sentinels: every load and store of theirs is masked off, and the routing pass must give
    them a valid expert id (the DSL has no early return).
    128 threads = 4 warps side by side along N (warps (1, 4)): each warp owns BM x 16 of the
    output (BN = 64), all BM rows. With BM = 64 that is 4 x 2 m16n8k16 atoms per k-step,
    32 accumulator registers; the A fragment (64 x 64 per BK slab) is the largest operand
    (64 registers). BM = 16 is the decode configuration (few tokens per expert): one m16 row
    of atoms, the kernel streams W.

The gather
    Each thread loads the sorted ids of exactly the rows its cp.async vectors belong to:
    the copy of a BM x BK bf16 tile moves vector i (BK / 8 vectors per row) with thread
    i % 128, so thread t copies rows t // (BK / 8) + (128 / (BK / 8)) * rep; ``ROWS`` is
    that TV layout, and ``ave.gather(X, ids // TOPK, 0)`` needs no data exchange between
    threads (Triton computes its row pointers the same way). Padding rows gather row T and
    are masked off (zero-filled); W comes from ``ave.gather(W, expert_ids[pid_m:pid_m + 1], 0)``.

Shared memory and pipeline
    sX (STAGES x BM x BK) and sW (STAGES x BN x BK), rows of 128 bytes with ``Swizzle<3,3,3>``
    (16-byte chunks whole; row % 8 XORed into the chunk: 8 rows of an ldmatrix hit 8 bank
    groups). STAGES = 4 stages of cp.async, written out as in examples/gemm.py: prologue of
    STAGES - 1 tiles; per k-tile wait_async(STAGES - 2), barrier, refill the stage read in the
    previous iteration, ldmatrix (B = sW[s].T, no .trans needed: K-contiguous), mma.
    Epilogue: optional scaling by the routing weight in f32, before the bf16 cast (the
    weights of the block's rows ride in the first cp.async group into a BM-float shared
    buffer, read back through a (BM, BN):(1, 0) broadcast layout in the accumulator
    layout), then a scatter store ``ave.scatter(Out, sorted_token_ids[...], 0)``, masked
    on the sentinel.

Invariants checked (tags: X -> (token, k); W -> (expert, col = n, k))
    * operand pairing: the mma checks by itself that the gathered X values and the W
      values it multiplies agree on k (the only field both carry): a missing transpose of
      the K-major weight, a wrong k offset, a stage or swizzle error all fail it.
    * stage separation: ``assert_disjoint`` of the stage refilled and the stage read.
    NOT expressible: the routing property -- that row p of a block really belongs to the
    expert expert_ids[pid_m] reads, and that the weight is the one of pair p. Which expert
    a token reaches is decided by values in global memory (sorted_token_ids, expert_ids),
    and Ave does not model the heap (the paper's own limit, §5): a wrong expert id or a
    wrong weight index is caught by tests, not by the checker.
"""

import ave_core.lang as ave


def row_swizzle(row_elems):
    """The CuTe swizzle for a row-major bf16 shared tile with rows of ``row_elems`` elements."""
    if row_elems == 32:
        sw = ave.swizzle(2, 3, 3)
    elif row_elems == 64:
        sw = ave.swizzle(3, 3, 3)
    else:
        sw = ave.swizzle(3, 3, 4)
    return sw


@ave.kernel(threads=128, configs=[
    dict(BM=64, BN=64, BK=64, STAGES=4, TOPK=2, MUL_ROUTED_WEIGHT=False),   # up/gate projection
    dict(BM=16, BN=64, BK=64, STAGES=4, TOPK=1, MUL_ROUTED_WEIGHT=True),    # down projection, decode
])
def fused_moe(X: ave.Tensor[ave.bf16, 2], W: ave.Tensor[ave.bf16, 3],
              Out: ave.Tensor[ave.bf16, 2], sorted_token_ids: ave.Tensor[ave.i32, 1],
              expert_ids: ave.Tensor[ave.i32, 1], topk_weights: ave.Tensor[ave.f32, 1],
              BM: ave.constexpr = 64, BN: ave.constexpr = 64, BK: ave.constexpr = 64,
              STAGES: ave.constexpr = 4, TOPK: ave.constexpr = 2,
              MUL_ROUTED_WEIGHT: ave.constexpr = False):
    X = ave.tag(X, lambda t, k: ave.label(token=t, k=k))
    W = ave.tag(W, lambda e, n, k: ave.label(expert=e, col=n, k=k))
    # Out row p is routed pair p = token * TOPK + slot (sorted_token_ids holds pair ids)
    Out = ave.tag(Out, lambda p, n: ave.label(token=p // TOPK, col=n))

    T, K = X.shape
    N = W.shape[1]
    num_valid = T * TOPK                # routed pairs; the padding sentinel
    pid_m = ave.program_id(0)
    pid_n = ave.program_id(1)
    r0 = pid_m * BM
    n0 = pid_n * BN
    KT = (K + BK - 1) // BK

    # Thread t holds the ids of the rows its copy vectors belong to (see "The gather").
    VPR = BK // 8                       # 16-byte vectors per row of an X tile
    RPR = 128 // VPR                    # rows one pass of the 128 threads covers
    ROWS = ave.tv_layout(ave.layout((VPR, RPR), (0, 1)), ave.layout(BM // RPR, RPR), (BM,))

    tiled = ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32),
                          warps=(1, 4), tile=(BM, BN, BK))
    sX = ave.alloc((STAGES, BM, BK), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(BK), ave.row_major((STAGES, BM, BK))))
    sW = ave.alloc((STAGES, BN, BK), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(BK), ave.row_major((STAGES, BN, BK))))

    ids = ave.load(sorted_token_ids[r0:r0 + BM], ROWS)
    Xg = ave.gather(X, ids // TOPK, 0)                  # row r = X[ids[r] // TOPK]
    We = ave.gather(W, expert_ids[pid_m:pid_m + 1], 0)  # (1, N, K): this block's expert

    def issue(kt, s):
        k0 = kt * BK
        ave.copy_async(Xg[0:BM, k0:k0 + BK], sX[s], vector_bytes=16,
                       mask=lambda t, k: (t < num_valid) & (k < K))  # BUG: X rows are tokens (< T)
        ave.copy_async(We[0, n0:n0 + BN, k0:k0 + BK], sW[s], vector_bytes=16,
                       mask=lambda e, n, k: (n < N) & (k < K))
        ave.commit_async()

    if MUL_ROUTED_WEIGHT:
        # The routing weights of the block's rows, in shared memory, seen as a BM x BN tile
        # with stride 0 along N (CUTLASS's broadcast epilogue layout): loading it with
        # tiled.c gives every accumulator its row's weight. Fetched in the first group.
        sWt = ave.alloc((BM, BN), ave.f32, space="shared", layout=ave.layout((BM, BN), (1, 0)))
        ave.copy_async(ave.gather(topk_weights, sorted_token_ids[r0:r0 + BM], 0)[0:BM],
                       ave.view(sWt[0:BM, 0:1], (BM,)), vector_bytes=4,
                       mask=lambda p: p < num_valid)

    for kt in ave.static_range(STAGES - 1):
        issue(kt, kt)

    acc = ave.zeros((BM, BN), ave.f32, tiled.c)
    for kt in ave.range(0, KT):
        s = kt % STAGES
        ave.wait_async(STAGES - 2)
        ave.barrier()
        s_fill = (kt + STAGES - 1) % STAGES
        ave.assert_disjoint(sX[s_fill], sX[s])
        ave.assert_disjoint(sW[s_fill], sW[s])
        issue(kt + STAGES - 1, s_fill)
        a = ave.ldmatrix(sX[s], tiled.a)
        b = ave.ldmatrix(sW[s].T, tiled.b)
        acc = ave.mma(a, b, acc, tiled)     # checks the k pairing of X and W by itself

    ave.wait_async(0)
    if MUL_ROUTED_WEIGHT:
        ave.barrier()                       # the weights are visible (also when KT == 0)
        acc = acc * ave.load(sWt, tiled.c)  # scaled in f32, before the bf16 rounding
    ave.store(ave.scatter(Out, sorted_token_ids[r0:r0 + BM], 0)[0:BM, n0:n0 + BN],
              ave.cast(acc, ave.bf16), vector_bytes=4,
              mask=lambda p, n: (p < num_valid) & (n < N))
