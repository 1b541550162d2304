import ave_core.lang as ave

@ave.kernel(threads=32)
def k(X: ave.Tensor[ave.f32, 1], Y: ave.Tensor[ave.f32, 1], n: ave.i32, d: ave.i32):
    M = X.shape[0]
    ave.assume(n <= -1)
    ave.assume(d <= 0)
    L = ave.tv_layout(ave.layout(32, 1), ave.layout(1, 1), (32,))
    o = n // d                    # d < 0: >= 0; d = 0: 0 for z3, n for the interpreter
    x = ave.load(X[o:o + 32], L, mask=lambda r: r < M)
    ave.store(Y[0:32], x)
