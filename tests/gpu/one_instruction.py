"""One-instruction kernels for the GPU tests (tests/gpu/test_one_instruction.py): what the
interpreter says a fragment holds must be what the hardware puts in the registers."""

import ave_core.lang as ave


def _tiled(warps, tile):
    return ave.tiled_mma(ave.mma_atom("m16n8k16", ave.bf16, ave.f32), warps=warps, tile=tile)


@ave.kernel(threads=32)
def mma_one(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2], C: ave.Tensor[ave.f32, 2]):
    tiled = _tiled((1, 1), (16, 8, 16))
    a = ave.load(A[0:16, 0:16], tiled.a)
    b = ave.load(B[0:16, 0:8], tiled.b)
    acc = ave.load(C[0:16, 0:8], tiled.c)
    acc = ave.mma(a, b, acc, tiled)
    ave.store(C[0:16, 0:8], acc)


@ave.kernel(threads=128)
def ldmatrix_swizzled(A: ave.Tensor[ave.bf16, 2], B: ave.Tensor[ave.bf16, 2],
                      YA: ave.Tensor[ave.bf16, 2], YB: ave.Tensor[ave.bf16, 2]):
    # the GEMM example's shared layouts: 64-byte rows with Swizzle<2,3,3>, B n-contiguous
    tiled = _tiled((2, 2), (64, 32, 32))
    sA = ave.alloc((64, 32), ave.bf16, space="shared",
                   layout=ave.swizzled(ave.swizzle(2, 3, 3), ave.row_major((64, 32))))
    sB = ave.alloc((32, 32), ave.bf16, space="shared",
                   layout=ave.swizzled(ave.swizzle(2, 3, 3), ave.row_major((32, 32))))
    ave.copy(A[0:64, 0:32], sA, vector_bytes=16)
    ave.copy(B[0:32, 0:32], sB, vector_bytes=16)
    ave.barrier()
    a = ave.ldmatrix(sA, tiled.a)          # ldmatrix.x4
    b = ave.ldmatrix(sB, tiled.b)          # ldmatrix.x4.trans
    ave.store(YA[0:64, 0:32], a)
    ave.store(YB[0:32, 0:32], b)
