"""Index arithmetic on register fragments, shared by the interpreter and the analysis.

A fragment is stored as ``(threads, values)`` in the order of its TV layout; these helpers
compute, once per pair of layouts, which stored element each thread reads when a fragment
is seen through another layout (without any data leaving the thread).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def broadcast_index(src_parent: Any, dst: Any, keep: Sequence[int],
                    shape: Sequence[int]) -> np.ndarray:
    """For a reduced fragment (``ProjectedLayout(src_parent, keep)``) broadcast to a
    fragment distributed by ``dst`` over ``shape``: the flat index (``t * V_src + v``) of
    the stored element each ``(t, v)`` of ``dst`` takes. Shape ``(T, V_dst)``.

    Raises:
        KeyError: a thread would need a reduced element it does not hold (the front end
            rejects such broadcasts, AVE116).
    """
    keep = list(keep)
    tp = np.asarray(src_parent.coords_table())[:, :, keep]
    td = np.asarray(dst.coords_table())[:, :, keep]
    rshape = tuple(shape[a] for a in keep)
    T = tp.shape[0]
    if keep:
        sl = np.ravel_multi_index(tuple(tp[:, :, i] for i in range(len(keep))), rshape)
        dl = np.ravel_multi_index(tuple(td[:, :, i] for i in range(len(keep))), rshape)
    else:
        # a full reduction (shape ()): one element, which every register of dst takes
        # (ravel_multi_index of no coordinates is a scalar: an IndexError here, AVE900)
        sl = np.zeros(tp.shape[:2], np.int64)
        dl = np.zeros(td.shape[:2], np.int64)
    V1, V2 = sl.shape[1], dl.shape[1]
    idx = np.empty((T, V2), np.int64)
    for t in range(T):
        lookup = dict(zip(sl[t].tolist(), range(V1)))
        idx[t] = [t * V1 + lookup[i] for i in dl[t].tolist()]
    return idx


def convert_index(src_lin: np.ndarray, dst_lin: np.ndarray, T: int, n: int) -> np.ndarray:
    """The gather index of a layout conversion, one rule for the analysis
    (``Engine._convert_index``) and the interpreter (``ave.convert``): every (thread,
    register) of the destination takes its element from a register of the same thread
    when that thread holds the element (its last such register: a conversion within
    registers), else from the element's first holder. ``src_lin`` (T * V1,) and
    ``dst_lin`` (T * V2,) are the linear tile coordinates held by each (thread,
    register), ``n`` the tile's element count. Returns (T * V2,) flat source (thread,
    register) indices; -1 where no thread holds the element."""
    V1, V2 = len(src_lin) // T, len(dst_lin) // T
    first_any = np.full(n, -1, np.int64)
    first_any[src_lin[::-1]] = np.arange(len(src_lin))[::-1]
    # (thread, element) keys; a stable sort puts a key's last source register last
    skey = np.repeat(np.arange(T, dtype=np.int64), V1) * n + src_lin
    dkey = np.repeat(np.arange(T, dtype=np.int64), V2) * n + dst_lin
    order = np.argsort(skey, kind="stable")
    sk = skey[order]
    pos = np.searchsorted(sk, dkey, side="right") - 1
    ok = pos >= 0
    ok[ok] = sk[pos[ok]] == dkey[ok]
    return np.where(ok, order[np.maximum(pos, 0)], first_any[dst_lin])
