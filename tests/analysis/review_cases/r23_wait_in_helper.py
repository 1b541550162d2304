import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((32, 32), ave.f32, space="shared")

    def consume(s, Y):
        ave.wait_async(0)
        ave.copy(ave.transpose(s), Y, vector_bytes=4)

    ave.copy_async(X[0:32, 0:32], s, vector_bytes=16)
    ave.commit_async()
    consume(s, Y[0:32, 0:32])
