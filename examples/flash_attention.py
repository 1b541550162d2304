"""Flash attention forward (FA2-style) for the NVIDIA H200 (sm_90), mma.sync path, d = 128.

Problem
    O = softmax(Q K^T * sm_scale [+ causal mask]) V per (batch, head).
    Q, O: (B, H, S_Q, D) bf16; K, V: (B, H_KV, S_KV, D) bf16 (contiguous); D = 128;
    grouped-query attention with GROUP = H / H_KV query heads per K/V head (GROUP = 1:
    ordinary multi-head attention). Any S_Q and S_KV. CAUSAL (a constexpr): query row i
    sees the keys n <= i + S_KV - S_Q (bottom-right aligned, as FlashAttention >= 2.1;
    needs S_Q <= S_KV, stated with ``ave.assume``: then every program sees a key, and the
    key loop runs at least once -- with no key, no barrier would separate the Q copy from
    the epilogue's stores into sQ).

Algorithm
    One program owns BR query rows of one (batch, head): grid = (cdiv(S_Q, BR), B, H),
    as FlashAttention-2 (m_block, batch, head). It walks the keys in blocks of BC, keeping
    per row the running max m, the running sum l and an un-normalised f32 accumulator O
    (online softmax). Scores are kept in the log2 domain: x = S * (sm_scale * log2(e)),
    p = exp2(x - m_new), alpha = exp2(m_old - m_new) -- one FFMA + ex2.approx per score
    instead of a multiply by log2(e) inside every exp. At the end O / l is stored as bf16.
    Masking costs nothing in most blocks: only a block holding keys past S_KV (the last
    one) or, when CAUSAL, crossing the diagonal takes the runtime branch that builds the key
    (and row) index of each score with ``ave.coord`` and sets the masked scores to a finite
    "minus infinity" (exp2 of it is 0, and no inf - inf). A causal program stops after the
    last block its last row can see: about half the work.

Why these tile sizes on an H200 (the paper's MI300X kernel: 512 threads, Br = 256,
Bc = 64, i.e. 8 wavefronts of 64 lanes, 32 rows each)
    The NVIDIA equivalent is FlashAttention-2's sm80/sm90 forward configuration for
    d = 128: 128 threads = 4 warps, Br = 128, Bc = 64. Each warp owns 32 rows (as each
    MI300X wavefront does), but a warp has 32 lanes, not 64, so the same rows cost twice
    the registers per lane: O = 32 x 128 f32 / 32 lanes = 128 registers. Live at once:
    during S = Q K^T, O + S (64) + one k-step of Q and K fragments (8 + 16); during P V,
    O + P (bf16, 32) + a V operand (64 keys x 64 columns, 64): about 225 either way, under
    the 255 limit -- with Q re-read from shared memory every iteration (FA2's default:
    Q in registers would add 64 and spill). 2 CTAs per SM: 2 x 128 x 255 registers fill the
    64 K register file, and 2 x 96 KB of shared memory fit in the 228 KB. A wider Bc (128)
    would double S and the V operand and spill; 8 warps x 32 rows (Br = 256) leaves one CTA
    per SM and no overlap between CTAs. The third configuration (Br = 64, 16 rows per warp)
    is for short sequences: twice the programs to fill 132 SMs.

Thread organisation
    Two tiled MMAs of m16n8k16 atoms, warps (4, 1) (warp w owns rows [w * BR/4, (w+1) * BR/4)):
    tqk: S(BR x BC) += Q(BR x 16) K^T(16 x BC), 8 k-steps over d; tpv: O_half(BR x 64) +=
    P(BR x BC) V(BC x 64), for the two halves of d. P leaves the first MMA in the C layout
    and enters the second as the A operand: ``ave.convert(p, tpv.a)`` is register-only for
    m16n8k16 (the C fragments of two adjacent n8 atoms are exactly one k16 A fragment:
    c0 c1 | c2 c3 of n-atom 2j and 2j + 1 = a0 a1 | a2 a3 | a4 a5 | a6 a7). O is kept as two
    64-column halves distributed exactly like S (BC = 64), so that the row statistics
    (reductions of S) broadcast onto O without data movement.

Shared memory (96 KB for BR = 128): sQ (BR x 128), sK and sV (2 stages x BC x 128), all
    rows of 256 bytes with ``Swizzle<3,3,4>``: 16-byte chunks stay whole (cp.async and
    ldmatrix vectors); offset bits 7..9 (row % 8) are XORed into the chunk bits 3..5, so the
    8 rows an ldmatrix (K: plain; V: .trans) reads at one chunk hit 8 different bank groups.
    After the loop the normalised O tile is staged through sQ (no longer read) and written
    out with 16-byte coalesced vectors.

Pipeline (cp.async, double-buffered K and V, one commit group per tile)
    prologue: Q, K_0, V_0 (three groups).
    iteration j (s = j % 2, sn = (j + 1) % 2):
        wait_async(1) + barrier: K_j (and the first time Q) visible to all; every warp is
            past iteration j - 1, so nobody reads sK[sn] any more -> issue K_{j+1} into sK[sn];
        S = Q K_j^T (ldmatrix from sQ and sK[s]), online softmax, P -> bf16 A operand;
        wait_async(1) + barrier: V_j visible; nobody reads sV[sn] -> issue V_{j+1} into sV[sn];
        O += P V_j (ldmatrix.trans from sV[s]).
    K_{j+1} loads during S_j, softmax and PV_j; V_{j+1} during PV_j and S_{j+1}. Tiles past
    S_KV are fully masked (zero fill, no traffic); the commits keep the group count right.

Invariants checked (tags: Q -> (batch, head = h // GROUP, row, k = d); K -> (batch,
head, key, k = d); V -> (batch, head, key, col = d))
    * Q K^T pairing: ``assert_conform(q, k, fields=("batch", "head", "k"),
      contract=(1, 0))`` -- the two operands come from the same batch and (K/V) head and
      agree on the head-dim index d (a wrong GQA head mapping, a K read from the wrong
      program id, a swizzle or slice error in the d direction all fail it).
    * P V pairing: ``assert_conform(p, v, fields=("batch", "head", "key"), contract=(1, 0))``
      -- P's column (the key its score came from: S takes the key field from K^T's column)
      meets the V row of the same key: a V read without the transpose, from the wrong
      stage, or before its copy has landed (a wrong wait count) fails it. Every mma checks
      its pairing again by itself.
    * stage separation: the K (V) stage refilled in iteration j never overlaps the stage
      read in iteration j (``assert_disjoint``).
    * (from the analysis itself) accumulation: ``S = Q K^T`` sums every d once, and each
      half of ``O += P V_j`` -- one MMA chain over all key blocks, through the online
      softmax's rescaling ``o * alpha`` -- sums no key twice (a KV block visited twice, K
      and V alike, pairs right and is caught here: AVE206).

Configurations
    0: multi-head attention; 1: GQA (e.g. Llama-3-70B: 64 query heads over 8 K/V heads);
    2: Br = 64 for short sequences. CAUSAL = True specialises any of them (a launch
    argument, like Triton's constexprs).
"""

import ave_core.lang as ave

LOG2E = 1.4426950408889634      # exp(x) = exp2(x * log2(e))
NEG_BIG = -1.0e30               # finite "minus infinity": exp2(NEG_BIG - m) == 0, no inf - inf


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
    dict(BR=128, BC=64, GROUP=1),       # multi-head attention
    dict(BR=128, BC=64, GROUP=8),       # GQA, e.g. 64 query heads over 8 K/V heads
    dict(BR=64, BC=64, GROUP=1),        # short sequences
])
def flash_attention(Q: ave.Tensor[ave.bf16, 4], K: ave.Tensor[ave.bf16, 4],
                    V: ave.Tensor[ave.bf16, 4], O: ave.Tensor[ave.bf16, 4],
                    sm_scale: ave.f32,
                    BR: ave.constexpr = 128, BC: ave.constexpr = 64, D: ave.constexpr = 128,
                    GROUP: ave.constexpr = 1, CAUSAL: ave.constexpr = False):
    # Query head h reads K/V head h // GROUP: that is the head a Q element must meet.
    Q = ave.tag(Q, lambda b, h, m, d: ave.label(batch=b, head=h // GROUP, row=m, k=d))
    K = ave.tag(K, lambda b, h, n, d: ave.label(batch=b, head=h, key=n, k=d))
    V = ave.tag(V, lambda b, h, n, d: ave.label(batch=b, head=h, key=n, col=d))
    O = ave.tag(O, lambda b, h, m, d: ave.label(batch=b, head=h // GROUP, row=m, col=d))

    S_Q = Q.shape[2]
    S_KV = K.shape[2]
    if CAUSAL:
        ave.assume(S_Q <= S_KV, "causal attention needs S_Q <= S_KV")   # (see Problem)
    m0 = ave.program_id(0) * BR
    b = ave.program_id(1)
    h = ave.program_id(2)
    hk = h // GROUP                     # the K/V head of query head h

    DH = D // 2                         # O is kept as two halves of DH (= BC) columns
    atom = ave.mma_atom("m16n8k16", ave.bf16, ave.f32)
    tqk = ave.tiled_mma(atom, warps=(4, 1), tile=(BR, BC, 16))
    tpv = ave.tiled_mma(atom, warps=(4, 1), tile=(BR, DH, BC))

    sQ = ave.alloc((BR, D), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(D), ave.row_major((BR, D))))
    sK = ave.alloc((2, BC, D), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(D), ave.row_major((2, BC, D))))
    sV = ave.alloc((2, BC, D), ave.bf16, space="shared",
                   layout=ave.swizzled(row_swizzle(D), ave.row_major((2, BC, D))))

    def load_k(j, s):
        n0 = j * BC
        ave.copy_async(K[b, hk, n0:n0 + BC, 0:D], sK[s], vector_bytes=16,
                       mask=lambda bb, hh, n, d: n < S_KV)
        ave.commit_async()

    def load_v(j, s):
        n0 = j * BC
        ave.copy_async(V[b, hk, n0:n0 + BC, 0:D], sV[s], vector_bytes=16,
                       mask=lambda bb, hh, n, d: n < S_KV)
        ave.commit_async()

    # Prologue: Q, K_0, V_0 in flight (three groups).
    ave.copy_async(Q[b, h, m0:m0 + BR, 0:D], sQ, vector_bytes=16,
                   mask=lambda bb, hh, m, d: m < S_Q)
    ave.commit_async()
    load_k(0, 0)
    load_v(0, 0)

    # Row statistics live in the row slice of S's layout (what ave.max(s, axis=1) yields).
    m_i = ave.max(ave.full((BR, BC), NEG_BIG, ave.f32, tqk.c), axis=1)
    l_i = ave.sum(ave.zeros((BR, BC), ave.f32, tqk.c), axis=1)
    o_lo = ave.zeros((BR, DH), ave.f32, tpv.c)
    o_hi = ave.zeros((BR, DH), ave.f32, tpv.c)
    qk_scale = sm_scale * LOG2E

    # The keys this program visits, and the first key some row of it must not see.
    n_end = S_KV
    n_free = S_KV
    if CAUSAL:
        n_end = ave.minimum(S_KV, m0 + BR + S_KV - S_Q)     # past the last row's diagonal
        n_free = ave.minimum(S_KV, m0 + 1 + S_KV - S_Q)     # the first row's diagonal
    NJ = (n_end + BC - 1) // BC
    for j in ave.range(0, NJ):
        s = j % 2
        sn = (j + 1) % 2

        ave.wait_async(1)                   # K_j (and Q) landed; V_j may be in flight
        ave.barrier()                       # visible to all; nobody reads sK[sn] any more
        ave.assert_disjoint(sK[sn], sK[s])
        load_k(j + 1, sn)

        # S = Q K_j^T, 8 k-steps over the head dimension.
        acc = ave.zeros((BR, BC), ave.f32, tqk.c)
        for kk in ave.static_range(D // 16):
            q = ave.ldmatrix(sQ[0:BR, kk * 16:kk * 16 + 16], tqk.a)
            k = ave.ldmatrix(sK[s][0:BC, kk * 16:kk * 16 + 16].T, tqk.b)
            ave.assert_conform(q, k, fields=("batch", "head", "k"), contract=(1, 0))
            acc = ave.mma(q, k, acc, tqk)

        # Online softmax in the log2 domain; masks only in the blocks that need them.
        x = acc * qk_scale
        if (j + 1) * BC > n_free:
            keys = j * BC + ave.coord((BR, BC), 1, tqk.c)
            keep = keys < S_KV
            if CAUSAL:
                keep = keep & (keys <= m0 + ave.coord((BR, BC), 0, tqk.c) + (S_KV - S_Q))
            x = ave.where(keep, x, NEG_BIG)
        m_new = ave.maximum(m_i, ave.max(x, axis=1))
        p = ave.exp2(x - m_new[:, None])
        alpha = ave.exp2(m_i - m_new)
        l_i = l_i * alpha + ave.sum(p, axis=1)
        m_i = m_new
        o_lo = o_lo * alpha[:, None]
        o_hi = o_hi * alpha[:, None]
        pa = ave.convert(ave.cast(p, ave.bf16), tpv.a)     # C layout -> A layout, in registers

        ave.wait_async(1)                   # V_j landed; K_{j+1} may be in flight
        ave.barrier()                       # visible to all; nobody reads sV[sn] any more
        ave.assert_disjoint(sV[sn], sV[s])
        load_v(j + 1, sn)

        # O += P V_j, one half of the head dimension at a time.
        vs = sV[s]
        v_lo = ave.ldmatrix(vs[0:BC, 0:DH], tpv.b)
        ave.assert_conform(pa, v_lo, fields=("batch", "head", "key"), contract=(1, 0))
        o_lo = ave.mma(pa, v_lo, o_lo, tpv)
        v_hi = ave.ldmatrix(vs[0:BC, DH:D], tpv.b)
        o_hi = ave.mma(pa, v_hi, o_hi, tpv)

    # Epilogue: normalise, stage through sQ (every read of sQ ended before the last
    # iteration's second barrier), write 16-byte vectors.
    ave.wait_async(0)
    inv = 1.0 / l_i
    ave.store(sQ[0:BR, 0:DH], ave.cast(o_lo * inv[:, None], ave.bf16), vector_bytes=4)
    ave.store(sQ[0:BR, DH:D], ave.cast(o_hi * inv[:, None], ave.bf16), vector_bytes=4)
    ave.barrier()
    ave.copy(sQ, O[b, h, m0:m0 + BR, 0:D], vector_bytes=16,
             mask=lambda bb, hh, m, d: m < S_Q)   # masked rows are not written
